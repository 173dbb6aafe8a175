"""A render worker killed with SIGKILL (an OOM kill, a lost node, `ray stop --force`) takes its running sample
down with it: nothing of the sample outlives its worker (issue #13, "no survivors"). Real prefork worker, real
sandboxed child (PID namespace), a real SIGKILL of the process that owns the worker."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from prism_fast.execute.sandbox import _sweep_scratch, host_isolation

MARK = "sample-outlives-worker-marker"

HOST_PROGRAM = textwrap.dedent(f"""
    import os, sys, tempfile
    from prism_fast.execute import sandbox
    from prism_fast.execute.render import RenderConfig, prefork_worker, render_one
    cfg = RenderConfig(timeout_s=300, tmp_root=sys.argv[1])
    worker = prefork_worker(cfg)
    print("ready", flush=True)
    src = ("from manim import *\\nimport subprocess, time\\nclass S(Scene):\\n    def construct(self):\\n"
           "        subprocess.Popen(['/bin/sh', '-c', 'sleep 200; : {MARK}'], start_new_session=True)\\n"
           "        time.sleep(200)\\n")
    render_one("hang", src, sys.argv[2], cfg, runner=worker.run)
""")


def _alive(marker: str) -> list[str]:
    out = subprocess.run(["pgrep", "-af", marker], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if "pgrep" not in line]


@pytest.mark.skipif(host_isolation().level != "namespaces", reason="needs root namespaces")
def test_sigkilled_worker_host_leaves_no_sample_process(tmp_path):
    host = tmp_path / "host.py"  # a file, not `-c`: the marker must appear in no command line but the sample's
    host.write_text(HOST_PROGRAM)
    proc = subprocess.Popen([sys.executable, str(host), str(tmp_path / "tmp"), str(tmp_path / "out")],
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        deadline = time.monotonic() + 90
        while not _alive(MARK) and time.monotonic() < deadline:  # the sample started its grandchild
            time.sleep(0.2)
        assert _alive(MARK) and all("sleep 200" in line for line in _alive(MARK)), _alive(MARK)
        os.kill(proc.pid, signal.SIGKILL)  # only the host process: its worker and sample must follow by themselves
        proc.wait(10)
        deadline = time.monotonic() + 5
        while _alive(MARK) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _alive(MARK) == [], _alive(MARK)
        assert not [p for p in _alive("prism_fast/execute/worker.py") if str(tmp_path) in p]
        # the dead worker's scratch tmpfs is still mounted; the next worker on the host sweeps it away
        stale = [p for p in (tmp_path / "tmp").iterdir() if p.name.startswith("render_hang_")]
        assert stale and all(os.path.ismount(p) for p in stale)
        _sweep_scratch.__wrapped__(str(tmp_path / "tmp"))
        assert not any(p.exists() for p in stale) and not list((tmp_path / "tmp").glob(".*.owner"))
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        subprocess.run(["pkill", "-9", "-f", MARK])
