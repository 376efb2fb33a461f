"""Builds roleserve's CPU kernels (roles/scheduler/kernels) next to their sources; everything else is in
pyproject.toml. The library is plain C++ with OpenMP, loaded through ctypes, so it needs no torch headers
to build. It is built for plain x86-64: each instruction set's code (isa_*.cpp) enables its instructions
itself (#pragma GCC target), and dispatch.cpp runs the one this CPU has, so one install serves any x86-64
CPU and none meets an instruction it lacks. On a CPU without AVX2/FMA/F16C, or a platform where it is not
built, `exec.weight_dtype: auto` falls back to exact float32 with a warning that says why."""

import pathlib
import platform

from setuptools import Extension, setup

KERNELS = "roles/scheduler/kernels/"

extensions = []
if platform.machine().lower() in ("x86_64", "amd64"):
    extensions.append(
        Extension(
            "roles.scheduler.kernels._cpu_kernels",
            sources=[
                KERNELS + name
                for name in (
                    "dispatch.cpp",
                    "isa_avx2.cpp",
                    "isa_avx512.cpp",
                    "isa_avx512vnni.cpp",
                    "isa_avx512bf16.cpp",
                )
            ],
            depends=[
                str(path) for path in pathlib.Path(KERNELS).glob("*.[ch]*") if path.suffix in (".h", ".cpp")
            ],
            extra_compile_args=["-O3", "-std=c++20", "-fopenmp"],
            extra_link_args=["-fopenmp"],
            language="c++",
        )
    )

setup(ext_modules=extensions)
