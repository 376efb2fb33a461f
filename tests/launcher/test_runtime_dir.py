"""Runtime dirs left behind by a SIGKILLed launcher are removed by the next start; live ones stay."""

import os
import subprocess
import sys

from launcher.runtime_dir import make_runtime_dir, remove_stale_runtime_dirs


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def test_a_dir_whose_launcher_is_gone_is_removed_and_a_live_one_kept(tmp_path):
    stale = tmp_path / "roleserve-stale"
    stale.mkdir(mode=0o700)
    (stale / "launcher.pid").write_text(str(dead_pid()))
    (stale / "scheduler-0.requests").write_text("")
    live = make_runtime_dir(str(tmp_path))
    assert not stale.exists()
    assert open(os.path.join(live, "launcher.pid")).read() == str(os.getpid())
    assert remove_stale_runtime_dirs(str(tmp_path)) == []  # this process is alive: its dir stays
    assert os.path.isdir(live)


def test_dirs_that_are_not_ours_to_judge_stay(tmp_path):
    starting = tmp_path / "roleserve-starting"  # no pid file yet: a server in the middle of starting
    starting.mkdir(mode=0o700)
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "launcher.pid").write_text(str(dead_pid()))
    (tmp_path / "roleserve-link").symlink_to(target)  # a symlink is never followed
    assert remove_stale_runtime_dirs(str(tmp_path)) == []
    assert starting.exists() and target.exists()
