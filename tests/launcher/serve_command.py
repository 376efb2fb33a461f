"""Run the real `serve` console script (the one installed beside this interpreter)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

SERVE = str(Path(sys.executable).with_name("serve"))


def run_serve(
    *args: str, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("ROLESERVE_")}
    return subprocess.run(
        [SERVE, *args], capture_output=True, text=True, timeout=timeout, env={**clean, **(env or {})}
    )
