"""The persistent weight cache's run dir in a shared temp dir: another user's dir or symlink is refused, never used,
repaired or followed; $XDG_RUNTIME_DIR is preferred when it is private."""

from __future__ import annotations

import os
import stat

import pytest

from roles.shared_weights.private_dir import (
    UnsafeDirectory,
    ensure_private_dir,
    open_private_file,
    private_run_dir,
)
from tests.launcher.serve_command import run_serve


def test_a_new_dir_is_made_owner_only(tmp_path):
    path = ensure_private_dir(str(tmp_path / "fresh"))
    assert stat.S_IMODE(os.lstat(path).st_mode) == 0o700


def test_an_existing_private_dir_is_accepted(tmp_path):
    (tmp_path / "mine").mkdir(mode=0o700)
    assert ensure_private_dir(str(tmp_path / "mine")) == str(tmp_path / "mine")


def test_a_symlink_is_refused_and_its_target_left_alone(tmp_path):
    target = tmp_path / "someone-elses"
    target.mkdir(mode=0o755)
    (tmp_path / "planted").symlink_to(target)
    with pytest.raises(UnsafeDirectory, match="planted: it is a symbolic link"):
        ensure_private_dir(str(tmp_path / "planted"))
    assert stat.S_IMODE(target.stat().st_mode) == 0o755  # not chmod-ed through the link
    with pytest.raises(UnsafeDirectory, match="symbolic link"):  # a dangling one too
        (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
        ensure_private_dir(str(tmp_path / "dangling"))
    assert not (tmp_path / "nowhere").exists()


def test_loose_modes_are_refused_not_repaired(tmp_path):
    (tmp_path / "loose").mkdir()
    os.chmod(tmp_path / "loose", 0o770)
    with pytest.raises(UnsafeDirectory, match="mode is 0770"):
        ensure_private_dir(str(tmp_path / "loose"))
    assert stat.S_IMODE((tmp_path / "loose").stat().st_mode) == 0o770


def test_a_dir_of_another_user_is_refused(tmp_path):
    (tmp_path / "theirs").mkdir(mode=0o700)
    other = os.geteuid() + 1  # the dir is this user's; asked for as another user, it is not theirs
    with pytest.raises(UnsafeDirectory, match=f"owned by uid {os.geteuid()}, not by uid {other}"):
        ensure_private_dir(str(tmp_path / "theirs"), uid=other)


def test_a_file_in_the_way_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(UnsafeDirectory, match="not a directory"):
        ensure_private_dir(str(tmp_path / "file"))


def test_files_are_made_0600_and_never_through_a_symlink(tmp_path):
    descriptor = open_private_file(str(tmp_path / "daemon.lock"), os.O_WRONLY)
    os.close(descriptor)
    assert stat.S_IMODE((tmp_path / "daemon.lock").stat().st_mode) == 0o600
    (tmp_path / "victim").write_text("keep")
    (tmp_path / "daemon.log").symlink_to(tmp_path / "victim")
    with pytest.raises(OSError):
        open_private_file(str(tmp_path / "daemon.log"), os.O_WRONLY | os.O_APPEND)
    assert (tmp_path / "victim").read_text() == "keep"


def test_xdg_runtime_dir_is_preferred_only_when_private(tmp_path, monkeypatch):
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr("tempfile.tempdir", str(temp))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(xdg))
    assert private_run_dir() == str(xdg / "roleserve")
    os.chmod(xdg, 0o755)  # not a real runtime dir: the temp dir is used, safely
    assert private_run_dir() == str(temp / f"roleserve-{os.geteuid()}")
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert private_run_dir() == str(temp / f"roleserve-{os.geteuid()}")


def test_serve_cache_ls_refuses_a_planted_symlink_without_a_traceback(tmp_path):
    elsewhere = tmp_path / "attacker"
    elsewhere.mkdir(mode=0o777)
    temp = tmp_path / "shared-tmp"
    temp.mkdir()
    (temp / f"roleserve-{os.geteuid()}").symlink_to(elsewhere)
    done = run_serve("cache", "ls", env={"TMPDIR": str(temp), "XDG_RUNTIME_DIR": ""})
    assert done.returncode == 1, done.stderr
    assert f"refusing {temp}/roleserve-{os.geteuid()}: it is a symbolic link" in done.stderr
    assert "Traceback" not in done.stderr
    assert list(elsewhere.iterdir()) == []  # nothing was made in the other user's dir
