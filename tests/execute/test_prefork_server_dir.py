"""Prefork server directories do not pile up in the temp dir when their owner is killed (a Ray actor killed at the
end of a run never reaches ``close``)."""

import os
import signal
import subprocess
import sys

from prism_fast.execute.worker import PreforkWorker, own_server_dir, sweep_stale_server_dirs


def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_a_killed_owners_directory_is_swept_and_a_live_ones_kept(tmp_path):
    dead = own_server_dir(tmp_path)
    (dead / "server.log").write_text("x")
    (tmp_path / f".{dead.name}.owner").write_text(str(_dead_pid()))
    alive = own_server_dir(tmp_path)            # this creation sweeps the dead owner's directory
    assert not dead.exists() and not (tmp_path / f".{dead.name}.owner").exists()
    assert alive.exists() and (tmp_path / f".{alive.name}.owner").read_text() == str(os.getpid())
    other = tmp_path / "prism_fast_prefork_notours"   # no owner file: never touched
    other.mkdir()
    assert sweep_stale_server_dirs(tmp_path) == 0
    assert other.exists() and alive.exists()


def test_sigkilled_worker_leaves_a_directory_the_next_worker_removes(tmp_path):
    code = ("import sys, time; from prism_fast.execute.worker import own_server_dir; "
            "print(own_server_dir(sys.argv[1]), flush=True); time.sleep(60)")
    p = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    left = p.stdout.readline().strip()
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert os.path.isdir(left)
    w = PreforkWorker(sys.executable)   # its own directory lives in the system temp dir; sweep ours explicitly
    try:
        assert sweep_stale_server_dirs(tmp_path) == 1
        assert not os.path.exists(left)
    finally:
        w.close()
    assert not w.server_dir.exists()
    assert not (w.server_dir.parent / f".{w.server_dir.name}.owner").exists()
