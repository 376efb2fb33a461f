"""parallel.backend ray needs the ray package (the `ray` extra): checked before anything starts."""

from __future__ import annotations

import importlib.util

from runtime_context.constraints import Constraint


def ray_is_installed() -> bool:
    return importlib.util.find_spec("ray") is not None


RAY_IMPORTABLE = Constraint(
    ("parallel.backend",),
    lambda values: values["parallel.backend"] != "ray" or ray_is_installed(),
    lambda values: "ray needs the ray package: pip install 'roleserve[ray]'",
)
