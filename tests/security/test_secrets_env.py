"""Secrets never enter Ray's processes nor the sandbox (issue #13, docs/security.md): API keys, tokens and
passwords in the caller's environment reach no Ray worker, actor, raylet or GCS, neither in its ``os.environ``
nor in ``/proc/<pid>/environ`` of any process it can read up its parent chain (the driver's included), nor a
sandboxed script; the generation client still gets its key. Real local Ray and the real CLI."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from prism_fast.secret_env import is_secret_name

from tests.generate.conftest import STUB_KEY, StubLLM, ok, write_dataset

PREFIX = "prism-secret-probe-"

RAY_PROBE = r'''
import json, os
import ray
from prism_fast.pipeline.ray_runtime import ensure_ray


def environ_of(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            return fh.read().decode("utf-8", "replace")
    except OSError as exc:
        return f"<unreadable: {exc}>"


def stat(pid):
    with open(f"/proc/{pid}/stat", "rb") as fh:
        return fh.read().rsplit(b")", 1)[1].split()


def chain_cmd(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            return fh.read().replace(b"\0", b" ").decode("utf-8", "replace")[:120]
    except OSError:
        return "?"


def chain():
    """This process and its ancestors: pid, command line and environment as /proc shows them."""
    out, pid = [], os.getpid()
    while pid > 1:
        try:
            cmd, ppid = chain_cmd(pid), int(stat(pid)[1])
        except OSError:
            break
        out.append({"pid": pid, "cmd": cmd, "environ": environ_of(pid)})
        pid = ppid
    return out


def probe():
    return {"os_environ": dict(os.environ), "chain": chain()}


@ray.remote
def task_probe():
    return probe()


@ray.remote
class ActorProbe:
    def probe(self):
        return probe()


def descendants():
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                children.setdefault(int(stat(name)[1]), []).append(int(name))
            except (OSError, IndexError, ValueError):
                pass
    out, todo = [], list(children.get(os.getpid(), ()))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


ensure_ray(num_cpus=1)
actor = ActorProbe.remote()
report = {"driver_pid": os.getpid(), "task": ray.get(task_probe.remote()), "actor": ray.get(actor.probe.remote()),
          "ray_processes": [{"pid": pid, "cmd": chain_cmd(pid), "environ": environ_of(pid)} for pid in descendants()],
          "driver_proc_environ": environ_of(os.getpid()),
          # the driver itself keeps its secrets (the generation client may need one)
          "driver_kept": sorted(k for k, v in os.environ.items() if v.startswith("PREFIX"))}
ray.shutdown()
print("REPORT " + json.dumps(report))
'''.replace("PREFIX", PREFIX)

SECRETS = {"OPENAI_API_KEY": "sk-", "MY_SERVICE_TOKEN": "tok-", "DB_PASSWORD": "pw-", "AWS_SECRET_ACCESS_KEY": "aws-",
           "GCP_CREDENTIALS_JSON": "cred-"}


def _secret_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not is_secret_name(k)}
    env.update({name: f"{PREFIX}{tag}{uuid.uuid4().hex}" for name, tag in SECRETS.items()})
    env.update(RAY_PRISM_PROBE="1", TOKENIZERS_PARALLELISM="false")  # Ray's settings and look-alikes stay
    return env


def test_ray_processes_hold_no_secret(tmp_path):
    env = _secret_env()
    out = subprocess.run([sys.executable, "-c", RAY_PROBE], env=env, cwd=tmp_path, capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("REPORT "))
    report = json.loads(line[len("REPORT "):])
    assert report["driver_kept"] == sorted(SECRETS)
    kept = report.pop("driver_kept")
    text = json.dumps(report)
    assert PREFIX not in text, [n for n in kept if env[n] in text]
    for where in ("task", "actor"):
        pids = [p["pid"] for p in report[where]["chain"]]
        assert report["driver_pid"] in pids  # the driver's /proc environ was read too, from inside the actor
        assert not any(p["environ"].startswith("<unreadable") for p in report[where]["chain"][:3])
        environ = report[where]["os_environ"]
        assert environ.get("RAY_PRISM_PROBE") == "1" and environ.get("TOKENIZERS_PARALLELISM") == "false"
    # and every process Ray started: GCS, raylet, agents, workers
    cmds = " ".join(p["cmd"] for p in report["ray_processes"])
    assert "raylet" in cmds and "gcs_server" in cmds, cmds


SANDBOX_PROBE = """from pathlib import Path
import os
from manim import *


class Probe(Scene):
    def construct(self):
        found = [k for k, v in os.environ.items() if "PREFIX" in v]
        readable = 0
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                try:
                    data = (proc / "environ").read_bytes()
                except OSError:
                    continue
                readable += 1
                if b"PREFIX" in data:
                    found.append(proc.name)
        raise RuntimeError(f"PROBE-RESULT found={found} readable={readable}")
""".replace("PREFIX", PREFIX)


@pytest.mark.slow
def test_sandboxed_script_sees_no_secret_through_the_cli(tmp_path):
    preds = tmp_path / "preds"
    preds.mkdir()
    (preds / "SAMPLE-EN-000001.py").write_text(SANDBOX_PROBE)
    runs = tmp_path / "runs"
    cli = str(Path(sys.executable).with_name("prism-fast"))
    out = subprocess.run([cli, "model=predictions", "model.name=tiny", f"model.predictions={preds}", "lang=en",
                          "dataset.limit=1", f"runs_root={runs}", f"hydra.run.dir={runs / 'hydra'}",
                          "cluster.num_cpus=1", "execute.cache.enabled=false", "audit.enabled=false",
                          "metrics.td.enabled=false"], env=_secret_env(), capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    from prism_fast.store import ResultsStore

    (row,) = ResultsStore(runs / "tiny-sample-en-reference").read("exec").to_pylist()
    text = " ".join(str(row.get(k) or "") for k in ("error", "stderr_tail", "error_msg"))
    # (found: secret values in its own environment, or in any /proc/<pid>/environ it can read: under the
    # namespace sandbox it can read none)
    assert "PROBE-RESULT found=[] readable=" in text, text[-2000:]


def test_generate_through_the_cli_still_sends_the_key(tmp_path):
    """The key is withheld from the CLI's environment (here under a name without a secret-looking word: the
    model's ``api_key_env`` is secret whatever its name), and the client still authenticates with it."""
    seen = {}

    def answer(attempt, rnd):
        seen["environ"] = Path(f"/proc/{proc.pid}/environ").read_bytes()  # the CLI's, while it waits for us
        return ok("```python\nfrom manim import *\n```")

    stub = StubLLM({"ok": answer}, key=STUB_KEY)
    try:
        write_dataset(tmp_path / "ds.jsonl", {"T-ok": "ok"})
        env = dict(_secret_env(), PRISM_LLM_AUTH=STUB_KEY)
        cli = str(Path(sys.executable).with_name("prism-fast"))
        proc = subprocess.Popen(
            [cli, "generate", "model=local", f"model.endpoint.base_url={stub.base_url}",
             "model.endpoint.model_id=stub-model", "model.endpoint.api_key_env=PRISM_LLM_AUTH",
             f"runs_root={tmp_path / 'runs'}", f"dataset.path={tmp_path / 'ds.jsonl'}", "lang=en",
             f"hydra.run.dir={tmp_path / 'hydra'}"], env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            text=True)
        log, _ = proc.communicate(timeout=300)
    finally:
        stub.close()
    assert proc.returncode == 0, log[-3000:]
    assert [r["auth"] for r in stub.requests] == [f"Bearer {STUB_KEY}"]
    assert STUB_KEY.encode() not in seen["environ"] and PREFIX.encode() not in seen["environ"]
    assert b"PRISM_LLM_AUTH=" in seen["environ"]  # the entry is there, its value blanked
