"""Every declared setting is read by code outside runtime_context/: no setting that does nothing."""

from runtime_context.settings import SETTINGS
from tests.guards.project_files import ROOT
from tests.guards.settings_readers import accessor_reads, keys_read

READER_PACKAGES = ("launcher", "roles")
# Settings whose reader is the config system itself, because that is what they control.
READ_BY_RUNTIME_CONTEXT = {"roles.enforcement"}


def project_reads() -> set[str]:
    accessors = accessor_reads((ROOT / "runtime_context" / "accessors.py").read_text(encoding="utf-8"))
    files = [p for package in READER_PACKAGES for p in (ROOT / package).rglob("*.py")]
    return set().union(*(keys_read(p.read_text(encoding="utf-8"), accessors) for p in files))


def test_every_setting_has_a_reader_outside_runtime_context():
    unread = sorted(set(SETTINGS) - project_reads() - READ_BY_RUNTIME_CONTEXT)
    assert unread == [], f"declared settings nothing reads (implement or remove them): {unread}"


def test_the_scanner_sees_each_way_of_reading_and_nothing_else():
    source = """
from runtime_context import get_exec, get_memory, get_schedule, get_launcher
a = get_schedule().max_running_requests
memory, execution = get_memory(), get_exec()
memory.page_size
class Supervisor:
    def __init__(self):
        self.settings = get_launcher()
    def f(self):
        return self.settings.max_restarts
def rule(values):
    return values["memory.kv_cache_memory_mb"]
other.page_size, get_schedule().not_a_leaf, values["no.such_key"]
"""
    assert keys_read(source) == {
        "schedule.max_running_requests",
        "memory.page_size",
        "launcher.max_restarts",
        "memory.kv_cache_memory_mb",
    }


def test_a_setting_read_only_by_runtime_context_counts_as_unread():
    source = "from runtime_context import get_observability\nlevel = get_observability().log_level\n"
    assert "observability.log_requests" not in keys_read(source)


def test_calling_a_bag_answering_accessor_reads_its_keys():
    accessors = accessor_reads(
        "def exports():\n    return _CONTEXT.bag('exec.moe').expert_balancedness_report_mode == 'both'\n"
    )
    assert accessors == {"exports": {"exec.moe.expert_balancedness_report_mode"}}
    assert keys_read("from runtime_context import exports\nexports()\n", accessors) == {
        "exec.moe.expert_balancedness_report_mode"
    }
    assert keys_read("exports\n", accessors) == set()
