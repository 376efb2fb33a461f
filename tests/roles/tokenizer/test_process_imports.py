"""The tokenizer process reads model metadata only: importing it must not import torch (a second of CPU
at every start on a small machine, taken from the scheduler that needs it)."""

import subprocess
import sys


def test_tokenizer_process_does_not_import_torch():
    probe = "import sys, roles.tokenizer.process; print('torch' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_http_front_does_not_import_fastapi_until_its_spec_is_asked():
    """FastAPI only writes /openapi.json (roles/tokenizer/operations.py): its import stays off start-up."""
    probe = (
        "import sys, roles.tokenizer.process\n"
        "from roles.tokenizer.app import create_app\n"
        "app = create_app(None)\n"
        "print('fastapi' in sys.modules)\n"
        "app.openapi()\n"
        "print('fastapi' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["False", "True"]
