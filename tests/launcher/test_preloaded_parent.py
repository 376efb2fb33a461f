"""The preloaded parent imports the modules of the roles that preload (the scheduler's), without torch, and
those imports must work in a process that has published no configuration: a module that read a setting at
import would fail there."""

from __future__ import annotations

import subprocess
import sys

from launcher import preloaded_parent
from launcher.entry import serves
from launcher.preloaded_parent import preload_modules
from launcher.role_list import ROLES
from runtime_context.setting import ENV_PREFIX


def _passes_in_a_fresh_interpreter(code: str, *args: str) -> None:
    result = subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=300, check=False
    )
    assert result.returncode == 0, result.stderr


def test_the_scheduler_and_the_tokenizer_preload_and_the_roles_that_import_torch_do_not():
    modules = preload_modules(ROLES)
    assert "roles.scheduler.process" in modules and "roles.tokenizer.process" in modules
    assert "roles.encoder.process" not in modules  # torch: spawned, importing it beside the preload
    assert "roles.expert_backup.process" not in modules
    assert modules[0] == "roles.child_process"


def test_every_preloaded_module_imports_without_a_published_configuration():
    modules = preload_modules(ROLES)
    code = "import importlib, sys\nfor name in sys.argv[1:]:\n    importlib.import_module(name)\n"
    _passes_in_a_fresh_interpreter(code, *modules)


def test_the_console_script_starts_the_parent_only_for_a_command_line_that_serves():
    assert serves([]) and serves(["--config", "cfg.yaml", "--set", "http.port=30001"])
    for words in (
        ["config", "show"],
        ["roles", "inspect"],
        ["model", "upcycle"],
        ["cache", "ls"],
        ["--help"],
    ):
        assert not serves(words), words


def test_the_console_script_and_the_preload_import_little_before_they_start():
    """The console script starts the parent before it imports the launcher or the configuration package (so
    the parent's imports run beside the launcher's), the scheduler's modules leave the grammar engine to the
    first grammar, and the whole preload imports no torch, and none of what a role needs only after READY or
    never: Jinja (the first chat template), llguidance (the first grammar), YAML (only the launcher reads a
    config file), the gguf package (quantised types dequantised to float, never in `auto`)."""
    starting = (
        "import sys, launcher.entry, launcher.preloaded_parent\nassert 'runtime_context' not in sys.modules\n"
    )
    _passes_in_a_fresh_interpreter(starting)  # the configuration package waits until the parent is started
    code = (
        "import sys, importlib, launcher.entry\n"
        "from launcher.preloaded_parent import preload_modules\n"
        "from launcher.role_list import ROLES\n"
        "assert 'launcher.cli' not in sys.modules and 'torch' not in sys.modules, 'entry'\n"
        "import roles.scheduler.process\n"
        "assert 'llguidance' not in sys.modules, 'llguidance'\n"
        "for name in preload_modules(ROLES):\n"
        "    importlib.import_module(name)\n"
        "late = [m for m in ('torch', 'jinja2', 'llguidance', 'yaml', 'gguf') if m in sys.modules]\n"
        "assert not late, late\n"
    )
    _passes_in_a_fresh_interpreter(code)


def test_the_parent_keeps_the_configurations_prefix_out_of_its_environment():
    """The prefix the parent drops (written out there, to start without importing runtime_context) is the one
    settings are read from."""
    assert preloaded_parent.ENV_PREFIX == ENV_PREFIX


def test_the_parent_imports_with_the_collector_off_and_freezes_what_it_imported():
    """launcher/preloaded_imports.py, imported as the parent imports it: every preloading role's module is
    imported, the collector is on again after, and the objects the imports made are frozen (a role forked
    from the parent neither collects nor copies them)."""
    code = (
        "import gc, sys, launcher.preloaded_imports\n"
        "from launcher.preloaded_parent import preload_modules\n"
        "from launcher.role_list import ROLES\n"
        "missing = [name for name in preload_modules(ROLES) if name not in sys.modules]\n"
        "assert not missing, missing\n"
        "assert gc.isenabled(), 'collector left off'\n"
        "assert gc.get_freeze_count() > 50_000, gc.get_freeze_count()\n"
    )
    _passes_in_a_fresh_interpreter(code)
