"""The tokenizer process reads model metadata only: importing it must not import torch (a second of CPU
at every start on a small machine, taken from the scheduler that needs it)."""

import subprocess
import sys


def test_tokenizer_process_does_not_import_torch():
    probe = "import sys, roles.tokenizer.process; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
