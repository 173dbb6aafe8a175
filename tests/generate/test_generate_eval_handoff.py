"""generate → eval through the real CLI (issue #15, item 7), against a local HTTP server on 127.0.0.1:

* an endpoint that never answers makes ``generate`` exit non-zero with a clear summary (the failed calls are
  still stored as rows, with the toolkit's quirk in reference);
* the printed "evaluate with" command carries the user's overrides (dataset, lang, runs_root, model.*) and works
  as printed;
* ``eval`` reports tasks that were requested and failed apart from tasks never requested, and warns about the
  latter.
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import subprocess
import sys

from prism_fast.store import ResultsStore

from tests.generate.conftest import STUB_KEY, STUB_KEY_ENV, generate_overrides, ok, write_dataset

TINY = '''from manim import *

class Tiny(Scene):
    def construct(self):
        self.play(Create(Square()), run_time=0.3)
'''


def _cli(args: list[str], cwd, timeout: int = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, STUB_KEY_ENV: STUB_KEY, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", "prism_fast.cli", *args], capture_output=True, text=True,
                          timeout=timeout, cwd=cwd, env=env)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # nothing listens there once the socket is closed


def test_unreachable_endpoint_exits_nonzero_with_a_clear_summary(tmp_path):
    write_dataset(tmp_path / "ds.jsonl", {"T-1": "a", "T-2": "b"})
    stub = type("Closed", (), {"base_url": f"http://127.0.0.1:{_closed_port()}/v1"})()
    proc = _cli([*generate_overrides(tmp_path, stub, "generate.max_attempts=1")], tmp_path, timeout=300)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-3000:]
    assert "generate FAILED: the endpoint never answered" in out and "connection_error=2" in out
    assert "retry_failed=true" in out and "evaluate with" not in out
    run_dir = tmp_path / "runs" / "local-sample-en-reference"
    rows = ResultsStore(run_dir).read("generate").to_pylist()
    assert [(r["status"], r["error_kind"]) for r in rows] == [("error", "connection_error")] * 2
    assert {r["gen_status"] for r in rows} == {"empty_after_cleanup"}  # the toolkit's quirk, kept (Q-GEN-4)
    summary = json.loads((run_dir / "generate" / "summary.json").read_text(encoding="utf-8"))
    assert summary["endpoint_never_answered"] is True and summary["answered_this_run"] == 0


def test_eval_hint_carries_the_overrides_and_eval_tells_failed_from_never_requested(tmp_path, stub_factory):
    stub = stub_factory({"good": lambda attempt, rnd: ok(f"```python\n{TINY}```"),
                         "bad": lambda attempt, rnd: {"status": 500, "json": {"error": {"message": "down"}}},
                         "later": lambda attempt, rnd: ok(f"```python\n{TINY}```")})
    write_dataset(tmp_path / "ds.jsonl", {"T-1": "good", "T-2": "bad", "T-3": "later"})
    gen = _cli([*generate_overrides(tmp_path, stub, "generate.max_attempts=1", "dataset.limit=2",
                                    "generate.concurrency=2")], tmp_path, timeout=300)
    out = gen.stdout + gen.stderr
    assert gen.returncode == 0, out[-3000:]
    assert stub.count("later") == 0 and stub.count("bad") == 1
    assert "1 of 2 request(s) of this run failed (server_error=1)" in out
    (hint,) = [line for line in gen.stdout.splitlines() if line.startswith("evaluate with: ")]
    words = shlex.split(hint[len("evaluate with: "):])
    assert words[:2] == ["prism-fast", "eval"]
    args = words[2:]
    for needed in ("model=local", f"model.endpoint.base_url={stub.base_url}", f"runs_root={tmp_path / 'runs'}",
                   f"dataset.path={tmp_path / 'ds.jsonl'}", "lang=en", "dataset.limit=2"):
        assert needed in args, (needed, args)
    assert not [a for a in args if a.startswith(("generate.", "command="))]

    # the hint, as printed, evaluates what generate wrote (same run directory, same tasks)
    ev = _cli(["eval", *args, "cluster.num_cpus=1", "audit.enabled=false", "metrics.td.enabled=false"], tmp_path)
    text = ev.stdout + ev.stderr
    assert ev.returncode == 0, text[-3000:]
    assert "requested and failed: 1 (empty_after_cleanup=1); never requested: 0" in ev.stdout
    assert "never requested from model" not in text
    run_dir = tmp_path / "runs" / "local-sample-en-reference"
    exec_rows = {r["id"]: r for r in ResultsStore(run_dir).read("exec").to_pylist()}
    assert exec_rows["T-1"]["success"] is True and exec_rows["T-2"]["error_type"] == "empty_output"

    # a wider selection than was generated: the task never requested is named, and counted apart
    wider = [a if a != "dataset.limit=2" else "dataset.limit=3" for a in args]
    ev = _cli(["eval", *wider, "cluster.num_cpus=1", "audit.enabled=false", "metrics.td.enabled=false"], tmp_path)
    text = ev.stdout + ev.stderr
    assert ev.returncode == 0, text[-3000:]
    assert "1 of 3 selected task(s) were never requested from model local" in text and "T-3" in text
    assert "requested and failed: 1 (empty_after_cleanup=1); never requested: 1" in ev.stdout
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert summary["generation"] == {"requested_failed": {"empty_after_cleanup": 1}, "never_requested": 1}
