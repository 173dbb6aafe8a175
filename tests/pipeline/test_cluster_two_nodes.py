"""A real two-node Ray cluster on one machine (issue #15, item 6): two raylets (``ray start --head`` and
``ray start --address=…``), each with its own ``--temp-dir`` and working directory, token authentication on.

* ``cluster=ray cluster.address=<head>`` with a relative ``runs_root`` (the default ``runs``): the run directory is
  made absolute before any actor starts, so videos and audit reports land beside the driver (not in a worker's
  working directory), the rows' paths resolve from the driver, and the shared one-pass audit is kept (one Manim
  execution per sample); render actors ran on both nodes; the rows equal a local run's.
* ``cluster=local`` with that cluster's address in ``RAY_ADDRESS`` starts its own instance (it used to join it
  and fail with ``num_cpus … must not be provided``).
* ``cluster.address=auto`` joins with a warning naming what it joined.

Small on purpose: 2 bundled samples, TD only among the metrics. Both nodes are torn down (their process
sessions, by PID) whatever happens.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from prism_fast.store import ResultsStore

BIN = Path(sys.executable).parent
IDS = "[SAMPLE-EN-000001,SAMPLE-EN-000002]"
# differ between any two runs of the same inputs (timings, the paths of each run directory are compared apart)
VOLATILE = {"written_at_ns", "runtime_sec", "wall_s", "cpu_s", "peak_rss_mb", "stderr_tail", "stdout_bytes",
            "stderr_bytes", "engine", "audit_runtime_sec", "tex_cache_hits", "tex_cache_published",
            "tex_format_compiles"}
# files a row points at (exec's file_path is the toolkit's bare script name, not a path)
PATH_FIELDS = {"tasks": ("script_path",), "exec": ("video_path",), "audit": ("file_path", "report_path"),
               "td": ("video_path",)}


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _node_ports() -> list[str]:
    return [f"--node-manager-port={_port()}", f"--object-manager-port={_port()}",
            f"--dashboard-agent-listen-port={_port()}", f"--dashboard-agent-grpc-port={_port()}",
            f"--metrics-export-port={_port()}", f"--runtime-env-agent-port={_port()}"]


def _session_pids(sid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat", "rb") as fh:
                    fields = fh.read().rsplit(b")", 1)[1].split()
            except OSError:
                continue
            if int(fields[3]) == sid and fields[0] not in (b"Z", b"X"):
                out.append(int(entry))
    return out


def _end_sessions(sids: list[int]) -> None:
    """SIGTERM, then SIGKILL, every process of the sessions the two `ray start` commands opened (by PID)."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        pids = [p for sid in sids for p in _session_pids(sid)]
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline and any(_session_pids(s) for s in sids):
            time.sleep(0.2)


@pytest.fixture(scope="module")
def cluster():
    root = Path(tempfile.mkdtemp(prefix="prt-", dir="/tmp"))  # short: Ray's socket paths must stay < 108 bytes
    token = root / "token"
    token.write_text(secrets.token_hex(32), encoding="utf-8")
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token), "PYTHONUNBUFFERED": "1"}
    env.pop("RAY_ADDRESS", None)
    for d in ("head_tmp", "worker_tmp", "head_cwd", "worker_cwd", "driver", "local"):
        (root / d).mkdir()
    gcs = _port()
    address = f"127.0.0.1:{gcs}"
    common = ["--block", "--num-cpus=1", "--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    procs = []
    try:
        procs.append(subprocess.Popen(
            [str(BIN / "ray"), "start", "--head", f"--port={gcs}", "--include-dashboard=false",
             f"--ray-client-server-port={_port()}", f"--temp-dir={root / 'head_tmp'}", *common, *_node_ports()],
            cwd=root / "head_cwd", env=env, start_new_session=True, stdout=open(root / "head.log", "w"),
            stderr=subprocess.STDOUT))
        _wait_nodes(address, env, 1)
        procs.append(subprocess.Popen(
            [str(BIN / "ray"), "start", f"--address={address}", f"--temp-dir={root / 'worker_tmp'}", *common,
             *_node_ports()],
            cwd=root / "worker_cwd", env=env, start_new_session=True, stdout=open(root / "worker.log", "w"),
            stderr=subprocess.STDOUT))
        _wait_nodes(address, env, 2)
        yield {"address": address, "env": env, "root": root}
    finally:
        _end_sessions([p.pid for p in procs])
        for p in procs:
            p.wait(timeout=30)
        leftovers = [pid for p in procs for pid in _session_pids(p.pid)]
        shutil.rmtree(root, ignore_errors=True)
        assert not leftovers, f"processes of the test cluster survived: {leftovers}"


def _wait_nodes(address: str, env: dict, n: int, timeout_s: float = 240) -> None:
    probe = ("import ray; ray.init(address=%r, log_to_driver=False, logging_level='ERROR'); "
             "print('NODES', sum(1 for x in ray.nodes() if x['Alive']))" % address)
    deadline = time.monotonic() + timeout_s
    last = ""
    while time.monotonic() < deadline:
        out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
        last = out.stdout + out.stderr[-500:]
        if f"NODES {n}" in out.stdout:
            return
        time.sleep(1)
    raise AssertionError(f"the test cluster did not reach {n} node(s): {last}")


def _eval(cwd: Path, env: dict, *extra: str):
    cmd = [str(BIN / "prism-fast"), f"dataset.ids={IDS}", "lang=en", "metrics.text_expand.enabled=false",
           "execute.cache.enabled=false", "audit.cache=false", *extra]  # runs_root: the default, relative `runs`
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=cwd, env=env)


def _comparable(run_dir: Path, stage: str) -> list[dict]:
    rows = []
    for r in ResultsStore(run_dir).read(stage).to_pylist():
        for f in PATH_FIELDS[stage]:
            if r.get(f):
                assert Path(r[f]).is_absolute() and Path(r[f]).exists(), (stage, f, r[f])
                assert Path(r[f]).is_relative_to(run_dir), (stage, f, r[f])
                r[f] = str(Path(r[f]).relative_to(run_dir))
        if r.get("tex_format") == "not_ready":
            # the local run's head start rendered before the driver had built the LaTeX format (a fresh runs_root:
            # pipeline/headstart.py); the joined cluster's run has no head start. Same video and row otherwise.
            r["tex_format"] = "on"
        rows.append({k: v for k, v in r.items() if k not in VOLATILE})
    return rows


def _actor_logs(temp_dir: Path) -> str:
    return "".join(p.read_text(errors="replace") for p in temp_dir.rglob("worker-*.out"))


def test_two_node_cluster_rows_equal_the_local_run(cluster):
    root, env = cluster["root"], cluster["env"]
    ray_run = _eval(root / "driver", env, "cluster=ray", f"cluster.address={cluster['address']}", "execute.workers=2")
    text = ray_run.stdout + ray_run.stderr
    assert ray_run.returncode == 0, text[-4000:]
    assert "joined the Ray cluster" in text and "2 node(s)" in text
    # another Ray instance is on the host (and named by RAY_ADDRESS): cluster=local still starts its own
    local = _eval(root / "local", {**env, "RAY_ADDRESS": cluster["address"]}, "cluster=local", "cluster.num_cpus=2")
    assert local.returncode == 0, (local.stdout + local.stderr)[-4000:]
    assert "joined the Ray cluster" not in local.stdout + local.stderr

    ray_dir = root / "driver" / "runs" / "reference-sample-en-reference"
    local_dir = root / "local" / "runs" / "reference-sample-en-reference"
    # nothing landed in a node's working directory: the run lives beside the driver
    assert list((root / "head_cwd").iterdir()) == [] and list((root / "worker_cwd").iterdir()) == []
    # render actors ran on both nodes
    assert "RenderActor" in _actor_logs(root / "head_tmp") and "RenderActor" in _actor_logs(root / "worker_tmp")
    for stage in ("tasks", "exec", "audit", "td"):
        assert _comparable(ray_dir, stage) == _comparable(local_dir, stage), stage
    audits = ResultsStore(ray_dir).read("audit").to_pylist()
    assert [a["audit_pass"] for a in audits] == ["shared", "shared"]  # the one-pass audit was not lost
    assert [e["manim_executions"] for e in ResultsStore(ray_dir).read("exec").to_pylist()] == [1, 1]

    # `auto`: joins whatever this host runs, and says so
    auto = _eval(root / "driver", {**env, "RAY_ADDRESS": cluster["address"]}, "cluster=ray", "cluster.address=auto",
                 "metrics.td.enabled=false", "audit.enabled=false")
    text = auto.stdout + auto.stderr
    assert auto.returncode == 0, text[-4000:]
    assert "WARNING" in text and "joined the Ray cluster at" in text and "`auto` joins whatever" in text
