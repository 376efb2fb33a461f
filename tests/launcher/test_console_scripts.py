"""`serve` is roleserve's command even though ray (an extra) installs a `serve` of its own, Ray Serve's; the
same CLI is also installed as `roleserve`, a name nothing else takes."""

from __future__ import annotations

import subprocess
from pathlib import Path

from serve_command import SERVE


def test_serve_and_roleserve_are_roleserve():
    for command in (SERVE, str(Path(SERVE).with_name("roleserve"))):
        shown = subprocess.run([command, "--help"], capture_output=True, text=True, timeout=60)
        assert shown.returncode == 0, shown.stderr
        assert "{config,roles,cache,model}" in shown.stdout, (
            f"{command} is not roleserve's CLI (was a package that also installs `serve` installed after "
            f"roleserve? reinstall roleserve): {shown.stdout[:200]}"
        )
