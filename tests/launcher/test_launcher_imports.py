"""The launcher never imports torch: it resolves, spawns and supervises, and torch would cost it about 150 MB
of memory and a second of start-up that the roles doing the work need."""

import pathlib
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_the_launcher_does_not_import_torch():
    probe = (
        "import sys, launcher.cli, launcher.supervisor, launcher.cache_commands, launcher.model_commands; "
        "print('torch' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


def test_the_launcher_resolves_and_checks_a_gguf_config_without_numpy():
    """The launcher parses the model's GGUF header (its checks read the shape, tensors and tokenizer) with the
    standard library alone: numpy's import was 0.1 s of its start, beside the preloaded parent's."""
    probe = (
        "import sys, launcher.cli, launcher.supervisor\n"
        "from roles.model_files.gguf_file import opened\n"
        "args = launcher.cli.build_parser().parse_args(['--config', 'deploy/configs/default.yaml'])\n"
        "launcher.cli.resolve_from_args(args)\n"
        "print(len(opened()), 'numpy' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, cwd=ROOT
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["1", "False"]  # the header was parsed, numpy never imported
