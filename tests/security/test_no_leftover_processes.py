"""No process of a run is alive 5 s after ``prism-fast`` exits (issue #13, docs/security.md): Ray's GCS, raylet,
agents and workers, the prefork manim servers and the sandboxed children, whether the command ends normally,
with an exception, or on SIGTERM / SIGINT in the middle of a render. Through the real CLI.

The machine is shared, so "new processes" are attributed to the run two ways: a harness process that is a
child subreaper (every process the run leaves orphaned is re-parented to it, however it detached: new session,
PID namespace, double fork) lists its descendants; and every process, wherever it sits, whose environment
carries a marker variable set only for the CLI (Ray's processes inherit it; the sandbox's children do not, but
they stay in the harness's tree)."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

SLOW_SCRIPT = """from manim import *
import time
class Slow(Scene):
    def construct(self):
        self.add(Circle())
        time.sleep(120)
"""
TINY_SCRIPT = """from manim import *
class Tiny(Scene):
    def construct(self):
        self.play(FadeIn(Circle()), run_time=0.3)
"""

HARNESS = r'''
import ctypes, glob, json, os, signal, subprocess, sys, tempfile, time

ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
args = json.loads(sys.argv[1])
marker = args["marker"].encode()


def stat(pid):
    with open(f"/proc/{pid}/stat", "rb") as fh:
        rest = fh.read().rsplit(b")", 1)[1].split()
    return rest[0], int(rest[1])  # state, ppid


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()[:200]
    except OSError:
        return "?"


def alive_pids():
    out = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                state, ppid = stat(int(name))
            except (OSError, IndexError, ValueError):
                continue
            if state not in (b"Z", b"X"):
                out[int(name)] = ppid
    return out


def tree():
    procs = alive_pids()
    children = {}
    for pid, ppid in procs.items():
        children.setdefault(ppid, []).append(pid)
    out, todo = [], list(children.get(os.getpid(), ()))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def marked(before):
    out = []
    for pid in alive_pids():
        if pid in before or pid == os.getpid():
            continue
        try:
            with open(f"/proc/{pid}/environ", "rb") as fh:
                if marker in fh.read():
                    out.append(pid)
        except OSError:
            pass
    return out


before = set(alive_pids())
env = dict(os.environ, PRISM_LEAK_MARKER=args["marker"])
log = open(args["log"], "wb")
owners = os.path.join(tempfile.gettempdir(), f"prism_fast-{os.geteuid()}", "run_*", ".render_*.owner")  # run roots
proc = subprocess.Popen(args["cmd"], env=env, stdout=log, stderr=subprocess.STDOUT)


def own_scratch():
    """A sample scratch dir of this run (its owner file names the driver or one of its processes): another run on
    the machine renders into the same folder, and its scratch dirs must not start the countdown."""
    mine = {proc.pid, *tree()}
    for owner in glob.glob(owners):
        try:
            with open(owner) as fh:
                if int(fh.read()) in mine:
                    return True
        except (OSError, ValueError):
            pass
    return False

render_seen = False
if args["signal"]:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline and proc.poll() is None and not render_seen:
        # a render actor's call, or (the Exec stage's head start renders in the driver) a sample's scratch dir
        render_seen = any(cmdline(p).startswith("ray::RenderActor.render") for p in tree()) or own_scratch()
        time.sleep(0.2)
    # and Ray is up: a signal inside ray.init meets Ray's own handlers (docs/security.md), not the run's; the head
    # start's render began before it, so wait for the line ensure_ray logs once the run's handlers are back
    while time.monotonic() < deadline and proc.poll() is None and b"ray resources:" not in open(args["log"], "rb").read():
        time.sleep(0.2)
    time.sleep(3)  # the sandboxed child is running the script now
    proc.send_signal(getattr(signal, args["signal"]))
try:
    rc = proc.wait(timeout=300)
except subprocess.TimeoutExpired:
    rc = "timeout"
time.sleep(5)
left = sorted(set(tree()) | set(marked(before)))
report = {"rc": rc, "render_seen": render_seen, "left": {p: cmdline(p) for p in left}}
for pid in left:  # never leave them to the machine, whatever the test says
    try:
        os.kill(pid, signal.SIGKILL)
    except OSError:
        pass
print(json.dumps(report))
'''


def _run(tmp_path: Path, script: str, *extra: str, send: str | None = None) -> dict:
    preds = tmp_path / "preds"
    preds.mkdir()
    (preds / "SAMPLE-EN-000001.py").write_text(script)
    runs = tmp_path / "runs"
    cli = str(Path(sys.executable).with_name("prism-fast"))
    base = [cli, "model=predictions", "model.name=tiny", f"model.predictions={preds}", "lang=en", "dataset.limit=1",
            f"runs_root={runs}", f"hydra.run.dir={runs / 'hydra'}", "cluster.num_cpus=1", "execute.cache.enabled=false",
            "audit.enabled=false", "metrics.td.enabled=false"]
    given = {e.split("=", 1)[0] for e in extra}
    cmd = [a for a in base if a.split("=", 1)[0] not in given] + list(extra)  # ``extra`` replaces a default
    args = {"cmd": cmd, "marker": uuid.uuid4().hex, "signal": send, "log": str(tmp_path / "cli.log")}
    out = subprocess.run([sys.executable, "-c", HARNESS, json.dumps(args)], capture_output=True, text=True,
                         timeout=700)
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    report["log"] = (tmp_path / "cli.log").read_text(errors="replace")[-3000:]
    return report


def test_normal_exit_leaves_no_process(tmp_path):
    report = _run(tmp_path, TINY_SCRIPT)
    assert report["rc"] == 0, report["log"]
    assert report["left"] == {}, report["left"]


def test_exception_after_ray_started_leaves_no_process(tmp_path):
    # Every value that can be judged from the config is checked before any work (pipeline/preflight.py), but an
    # embedding model folder is only loaded by PADVC's stage: in the driver, after Ray is up and the sample rendered
    # and passed its audit, the stage stops the command in the middle (an empty folder is no model)
    empty = tmp_path / "no_model"
    empty.mkdir()
    report = _run(tmp_path, TINY_SCRIPT, "audit.enabled=true", "metrics.padvc.enabled=true",
                  f"metrics.padvc.models.en={empty}")
    assert report["rc"] not in (0, "timeout") and "PADVC needs the PVD embedding model" in report["log"], report["log"]
    assert report["left"] == {}, report["left"]


@pytest.mark.parametrize("send,codes,head_start", [("SIGTERM", (143,), "true"), ("SIGINT", (130, -2, 1), "true"),
                                                   ("SIGTERM", (143,), "false")])
def test_signal_during_a_render_leaves_no_process(tmp_path, send, codes, head_start):
    # head start on (default): the one sample renders in the driver while Ray starts; off: in a render actor
    report = _run(tmp_path, SLOW_SCRIPT, f"execute.head_start={head_start}", send=send)
    assert report["render_seen"], report["log"]
    assert report["left"] == {}, report["left"]
    assert report["rc"] in codes, (report["rc"], report["log"])  # SIGTERM: not Ray's abort (-6)
