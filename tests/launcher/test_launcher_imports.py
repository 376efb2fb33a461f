"""The launcher never imports torch: it resolves, spawns and supervises, and torch would cost it about 150 MB
of memory and a second of start-up that the roles doing the work need."""

import subprocess
import sys


def test_the_launcher_does_not_import_torch():
    probe = (
        "import sys, launcher.cli, launcher.supervisor, launcher.cache_commands, launcher.model_commands; "
        "print('torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
