"""Builds roleserve's CPU kernels (roles/scheduler/kernels) next to their sources; everything else is in
pyproject.toml. The library is plain C++ with OpenMP, loaded through ctypes, so it needs no torch headers
to build. On a CPU without AVX2/FMA, or a platform where it is not built, `exec.weight_dtype: auto` falls
back to exact float32 with a warning that says why."""

import platform

from setuptools import Extension, setup

KERNELS = "roles/scheduler/kernels/"

extensions = []
if platform.machine().lower() in ("x86_64", "amd64"):
    extensions.append(
        Extension(
            "roles.scheduler.kernels._cpu_kernels",
            sources=[KERNELS + "cpu_kernels.cpp"],
            depends=[KERNELS + name for name in ("linear_kernels.h", "block_decode.h", "vector_math.h")],
            extra_compile_args=["-O3", "-std=c++20", "-mavx2", "-mfma", "-mf16c", "-fopenmp"],
            extra_link_args=["-fopenmp"],
            language="c++",
        )
    )

setup(ext_modules=extensions)
