"""Scratch roots per process and user (execute/sandbox.py ``run_root``): no fixed name in the shared temp dir that
another user (or an earlier root run) can own. A root pre-created by another uid does not break a render, two runs
get different roots, and a killed process's root -- with its samples' scratch mounts -- is swept by the next."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap

import pytest

from prism_fast.execute import sandbox
from prism_fast.execute.render import RenderConfig, render_one

NOBODY = 65534
SCENE = """from manim import *


class Still(Scene):
    def construct(self):
        self.add(Square())
        self.wait(0.1)
"""


@pytest.fixture
def temp_dir(tmp_path, monkeypatch):
    """A private temp dir standing in for the system's: ``tempfile.gettempdir()`` returns it in this process."""
    temp = tmp_path / "tmp"
    temp.mkdir(mode=0o1777)
    os.chmod(temp, 0o1777)
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    return temp


def _child(code: str, temp, *args: str, **kw) -> subprocess.Popen:
    env = dict(os.environ, TMPDIR=str(temp))
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code), *args], env=env, text=True,
                            stdout=subprocess.PIPE, **kw)


def test_run_root_is_private_per_user_and_per_process(temp_dir):
    root = sandbox.run_root()
    assert root.parent == temp_dir / f"prism_fast-{os.geteuid()}" and root.name.startswith("run_")
    assert (root.stat().st_mode & 0o777, root.stat().st_uid) == (0o700, os.geteuid())
    assert (root.parent.stat().st_mode & 0o777, root.parent.stat().st_uid) == (0o700, os.geteuid())
    assert sandbox.run_root() == root  # once per process
    assert (root.parent / f".{root.name}.owner").read_text() == str(os.getpid())
    assert sandbox.jail_root().startswith(str(root) + "/")  # the view's mount point too: no fixed name
    # at the unsafe level a read-only run root stands for every run root of this user (other processes' samples)
    assert sandbox._widen_run_root(os.path.realpath(root)) == os.path.realpath(root.parent)
    assert sandbox._widen_run_root(str(temp_dir)) == str(temp_dir)
    # two runs (processes) get two roots, each removed when its process exits
    code = "from prism_fast.execute import sandbox; print(sandbox.run_root())"
    first, second = (_child(code, temp_dir).communicate(timeout=60)[0].strip() for _ in range(2))
    assert first != second and first != str(root)
    assert os.path.dirname(first) == os.path.dirname(second) == str(root.parent)
    assert not os.path.exists(first) and not os.path.exists(second)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_a_root_owned_by_another_user_does_not_break_a_render(temp_dir, tmp_path, caplog):
    # another local user made both the old fixed name and this user's directory first
    for name in ("prism_fast_render", f"prism_fast-{os.geteuid()}"):
        (temp_dir / name).mkdir(mode=0o777)
        os.chown(temp_dir / name, NOBODY, NOBODY)
    with caplog.at_level("WARNING", logger="prism_fast.execute.sandbox"):
        row = render_one("still", SCENE, tmp_path / "out", RenderConfig(timeout_s=300, text_boxes=False))
    assert row["success"], row["error"]
    assert any("refusing" in r.getMessage() and "uid 65534" in r.getMessage() for r in caplog.records)
    root = sandbox.run_root()  # a fresh private directory instead, never inside the other user's
    assert root.parent == temp_dir and root.name.startswith(f"prism_fast-{os.geteuid()}-")
    assert (root.stat().st_uid, root.stat().st_mode & 0o777) == (os.geteuid(), 0o700)
    assert os.listdir(temp_dir / f"prism_fast-{os.geteuid()}") == []  # nothing written into it


def test_a_symlinked_user_dir_is_refused(temp_dir, tmp_path):
    target = tmp_path / "elsewhere"
    target.mkdir(mode=0o700)
    (temp_dir / f"prism_fast-{os.geteuid()}").symlink_to(target)
    assert sandbox.user_dir() is None
    root = sandbox.run_root()
    assert root.parent == temp_dir and not list(target.iterdir())


def test_a_killed_process_root_and_its_scratch_mounts_are_swept_by_the_next(temp_dir):
    code = """
        import sys, time
        from prism_fast.execute import sandbox
        root = sandbox.run_root()
        with sandbox.scratch_dir(root, "render_crash_", 16) as work:
            (work / "x").write_text("left behind")
            print(root, work, flush=True)
            time.sleep(120)
    """
    proc = _child(code, temp_dir)
    try:
        root, work = proc.stdout.readline().split()
        proc.send_signal(signal.SIGKILL)  # no clean-up runs
        proc.wait(30)
    finally:
        proc.kill()
    assert os.path.isdir(root) and os.path.exists(os.path.join(work, "x"))
    if os.geteuid() == 0:
        assert os.path.ismount(work)  # the scratch tmpfs is still mounted
    alive = _child("from prism_fast.execute import sandbox; print(sandbox.run_root())", temp_dir)
    fresh = alive.communicate(timeout=60)[0].strip()
    assert fresh and fresh != root
    assert not os.path.exists(root) and not os.path.ismount(work)
    assert not os.path.exists(os.path.join(os.path.dirname(root), f".{os.path.basename(root)}.owner"))
    # a live process's root is never touched
    mine = sandbox.run_root()
    _child("from prism_fast.execute import sandbox; sandbox.run_root()", temp_dir).communicate(timeout=60)
    assert mine.is_dir()
