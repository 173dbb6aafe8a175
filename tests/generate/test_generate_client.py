"""`prism-fast generate` against a real HTTP stub on 127.0.0.1: every failure mode gives its row, nothing is lost,
a killed run resumes with only the missing ids, and the API key is never stored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from prism_fast.dataset.loader import load_dataset
from prism_fast.execute.inputs import load_inputs
from prism_fast.generate.client import ChatClient, ChatEndpoint, RetryPolicy, request_body
from prism_fast.pipeline.generate_run import generate_from_config
from prism_fast.profile import IMPROVED, REFERENCE
from prism_fast.store import ResultsStore

from tests.generate.conftest import STUB_KEY, STUB_KEY_ENV, compose_cfg, generate_overrides, ok, write_dataset

CODE = "from manim import *\nclass A(Scene):\n    def construct(self):\n        self.wait(0.1)"
FENCE = "```"

BEHAVIOURS = {
    "ok": lambda attempt, rnd: ok(f"{FENCE}python\n{CODE}\n{FENCE}"),
    "ratelimit": lambda attempt, rnd: ({"status": 429, "json": {"error": {"message": "slow down"}}}
                                       if attempt == 1 else ok(CODE)),
    "down": lambda attempt, rnd: {"status": 500, "json": {"error": {"message": "internal"}}},
    "badjson": lambda attempt, rnd: {"status": 200, "raw": b'{"choices": [{"message": '},
    "empty": lambda attempt, rnd: ok(""),
    "think": lambda attempt, rnd: ok(f"<think>I should draw.\nA plan.</think>\n{FENCE}python\n{CODE}\n{FENCE}"),
    "slow": lambda attempt, rnd: {"status": 200, "sleep": 2.0, "json": ok(CODE)["json"]},
}
CASES = {"T-ok": "ok", "T-429": "ratelimit", "T-500": "down", "T-badjson": "badjson", "T-empty": "empty",
         "T-think": "think"}


def _rows(run_dir: Path, stage: str = "generate") -> dict[str, dict]:
    return {r["id"]: r for r in ResultsStore(run_dir).read(stage).to_pylist()}


def _all_bytes(root: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file())


@pytest.fixture
def key_env(monkeypatch):
    monkeypatch.setenv(STUB_KEY_ENV, STUB_KEY)


def test_each_case_gives_its_row_and_nothing_is_lost(tmp_path, stub_factory, key_env, caplog):
    stub = stub_factory(BEHAVIOURS)
    write_dataset(tmp_path / "ds.jsonl", CASES)
    cfg = compose_cfg(generate_overrides(tmp_path, stub, "generate.concurrency=3"))
    summary = generate_from_config(cfg)
    run_dir = Path(cfg.run_dir)
    rows = _rows(run_dir)
    assert sorted(rows) == sorted(CASES)  # one row per task, failures included

    # requests per case: success 1, 429 then success 2, 500 until give-up = max_attempts, malformed JSON is retried
    # like any exception in the toolkit, empty content is not retried
    assert {c: stub.count(c) for c in CASES.values() if c != "slow"} == {
        "ok": 1, "ratelimit": 2, "down": 3, "badjson": 3, "empty": 1, "think": 1}
    assert all(r["auth"] == f"Bearer {STUB_KEY}" for r in stub.requests)

    r = rows["T-ok"]
    assert (r["status"], r["gen_status"], r["attempts"], r["http_status"]) == ("ok", "success", 1, 200)
    assert r["raw_response"] == f"{FENCE}python\n{CODE}\n{FENCE}"  # stored before cleaning
    assert r["prompt"] == "Draw something simple. [case:ok]"  # the instruction, stripped, sent verbatim
    assert json.loads(r["messages"]) == [{"role": "user", "content": [{"type": "text", "text": r["prompt"]}]}]
    assert (r["prompt_tokens"], r["completion_tokens"], r["total_tokens"], r["reasoning_tokens"],
            r["cached_tokens"]) == (11, 7, 18, 2, 3)
    assert r["latency_s"] > 0 and r["llm_time"] >= r["latency_s"]
    assert r["timeout_s"] == 600.0  # Q-GEN-3 reference: the SDK default, not generate.timeout_s
    body = stub.requests[[q["case"] for q in stub.requests].index("ok")]["body"]
    assert (body["model"], body["temperature"], body["max_tokens"]) == ("stub-model", 0.7, 8192)
    assert "format_pollution" in r and "fences" in json.loads(r["format_pollution"])

    r = rows["T-429"]
    assert (r["status"], r["attempts"]) == ("ok", 2)
    assert [x["kind"] for x in json.loads(r["retries"])] == ["rate_limited"]

    r = rows["T-500"]
    assert (r["status"], r["error_kind"], r["attempts"], r["http_status"]) == ("error", "server_error", 3, 500)
    assert r["gen_status"] == "empty_after_cleanup"  # Q-GEN-4 reference: a provider failure looks empty
    assert r["raw_response"] is None and "HTTP 500" in r["provider_error"]
    assert len(json.loads(r["retries"])) == 2  # two waits between three attempts

    r = rows["T-badjson"]
    assert (r["status"], r["error_kind"], r["attempts"]) == ("error", "malformed_response", 3)

    r = rows["T-empty"]
    assert (r["status"], r["error_kind"], r["attempts"], r["raw_response"]) == ("error", "empty_content", 1, "")

    r = rows["T-think"]
    assert (r["status"], r["gen_status"]) == ("ok", "success")
    assert r["raw_response"].startswith("<think>I should draw.")  # raw reply kept, think block included
    assert "think_tags" in json.loads(r["format_pollution"])

    # the predictions set eval reads: one record per task; the cleaning decides the script
    lines = (run_dir / "generate" / "responses.jsonl").read_text(encoding="utf-8").splitlines()
    assert sorted(json.loads(x)["id"] for x in lines) == sorted(CASES)
    tasks = load_dataset(tmp_path / "ds.jsonl").tasks
    got = {i.id: i for i in load_inputs("responses", tasks, REFERENCE, str(cfg.model.predictions))}
    assert {k: got[k].clean_status for k in CASES} == {
        "T-ok": "success", "T-429": "success", "T-500": "empty_after_cleanup", "T-badjson": "empty_after_cleanup",
        "T-empty": "empty_after_cleanup", "T-think": "success"}
    assert "<think>" not in got["T-think"].script and got["T-think"].script.startswith("from manim import *")
    improved = {i.id: i.clean_status for i in load_inputs("responses", tasks, IMPROVED, str(cfg.model.predictions))}
    assert improved["T-500"] == "provider_error" and improved["T-empty"] == "provider_error"

    # summary: counts, tokens (ok, 429, empty and think replies carry usage), latency
    assert summary["calls"] == 6 and summary["requested_this_run"] == 6
    assert summary["by_gen_status"] == {"empty_after_cleanup": 3, "success": 3}
    assert summary["tokens"]["total_tokens"]["sum"] == 18 * 4 and summary["retries_total"] == 1 + 2 + 2
    assert json.loads((run_dir / "generate" / "summary.json").read_text())["calls"] == 6

    # the API key is sent but never stored or logged; its variable's name is recorded
    assert STUB_KEY.encode() not in _all_bytes(run_dir)
    assert STUB_KEY not in caplog.text
    assert STUB_KEY_ENV in (run_dir / "generate" / "run.json").read_text()

    # a second run requests nothing (every id has a row, failures included)
    before = len(stub.requests)
    again = generate_from_config(cfg)
    assert len(stub.requests) == before and again["requested_this_run"] == 0
    # retry_failed re-requests only failed calls, not the answered ones
    generate_from_config(compose_cfg(generate_overrides(tmp_path, stub, "retry_failed=true")))
    assert len(stub.requests) - before == 3 + 3 + 1  # down, badjson, empty


def test_improved_applies_timeout_and_reports_provider_errors(tmp_path, stub_factory, key_env):
    stub = stub_factory(BEHAVIOURS)
    write_dataset(tmp_path / "ds.jsonl", {"T-slow": "slow", "T-500": "down", "T-empty": "empty"})
    cfg = compose_cfg(generate_overrides(tmp_path, stub, "profile=improved", "generate.timeout_s=0.3",
                                         "generate.max_attempts=2"))
    t0 = time.monotonic()
    generate_from_config(cfg)
    rows = _rows(Path(cfg.run_dir))
    r = rows["T-slow"]
    assert (r["status"], r["error_kind"], r["attempts"], r["timeout_s"]) == ("error", "timeout", 2, 0.3)
    assert r["llm_time"] < 1.5  # two 0.3 s attempts, not two 2 s replies
    assert time.monotonic() - t0 < 10
    assert stub.count("slow") == 2
    assert {k: rows[k]["gen_status"] for k in rows} == {"T-slow": "provider_error", "T-500": "provider_error",
                                                         "T-empty": "provider_error"}  # Q-GEN-4 fixed


def test_missing_key_variable_fails_before_any_request(tmp_path, stub_factory, monkeypatch):
    monkeypatch.delenv(STUB_KEY_ENV, raising=False)
    stub = stub_factory(BEHAVIOURS)
    write_dataset(tmp_path / "ds.jsonl", {"T-ok": "ok"})
    with pytest.raises(SystemExit, match=STUB_KEY_ENV):
        generate_from_config(compose_cfg(generate_overrides(tmp_path, stub)))
    assert stub.count() == 0


def test_resume_after_kill_requests_only_missing_ids(tmp_path, stub_factory, key_env):
    # r3 hangs on its first request: the first run is killed while waiting for it
    behaviours = {f"r{i}": (lambda attempt, rnd: ok(CODE)) for i in (1, 2, 4)}
    behaviours["r3"] = lambda attempt, rnd: ({"status": 200, "sleep": 60, "json": ok(CODE)["json"]}
                                             if attempt == 1 else ok(CODE))
    stub = stub_factory(behaviours)
    cases = {f"T-{i}": f"r{i}" for i in (1, 2, 3, 4)}
    write_dataset(tmp_path / "ds.jsonl", cases)
    overrides = generate_overrides(tmp_path, stub, "generate.concurrency=1")
    proc = subprocess.Popen([sys.executable, "-m", "prism_fast.cli", "generate", *overrides[1:]], cwd=tmp_path,
                            env={**os.environ, STUB_KEY_ENV: STUB_KEY}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 90
        while stub.count("r3") == 0:
            assert proc.poll() is None, proc.stderr.read().decode()[-2000:]
            assert time.monotonic() < deadline, "the first run never reached the hanging request"
            time.sleep(0.05)
    finally:
        proc.kill()
        proc.wait()
    cfg = compose_cfg(overrides)
    assert sorted(_rows(Path(cfg.run_dir))) == ["T-1", "T-2"]  # finished before the kill, durable
    before = {c: stub.count(c) for c in behaviours}
    assert before == {"r1": 1, "r2": 1, "r3": 1, "r4": 0}

    summary = generate_from_config(cfg)
    after = {c: stub.count(c) - before[c] for c in behaviours}
    assert after == {"r1": 0, "r2": 0, "r3": 1, "r4": 1}  # only the missing ids were requested
    rows = _rows(Path(cfg.run_dir))
    assert sorted(rows) == sorted(cases) and all(r["status"] == "ok" for r in rows.values())
    assert summary["calls"] == 4 and summary["requested_this_run"] == 2
    lines = (Path(cfg.run_dir) / "generate" / "responses.jsonl").read_text().splitlines()
    assert len(lines) == 4


def test_resume_with_other_request_settings_is_refused(tmp_path, stub_factory, key_env):
    stub = stub_factory({"ok": lambda attempt, rnd: ok(CODE)})
    write_dataset(tmp_path / "ds.jsonl", {"T-1": "ok"})
    overrides = generate_overrides(tmp_path, stub)
    generate_from_config(compose_cfg(overrides))
    assert stub.count() == 1
    manifest = (Path(compose_cfg(overrides).run_dir) / "generate" / "run.json").read_text()
    with pytest.raises(SystemExit, match="request parameters"):
        generate_from_config(compose_cfg([*overrides, "generate.temperature=0.2"]))
    with pytest.raises(SystemExit, match="model_id"):
        generate_from_config(compose_cfg([*overrides, "model.endpoint.model_id=other-model"]))
    (tmp_path / "ds.jsonl").write_text(json.dumps({"id": "T-1", "language": "en", "reference_answer": "x",
                                                    "instruction": "Draw something else. [case:ok]"}) + "\n")
    with pytest.raises(SystemExit, match="prompt changed"):
        generate_from_config(compose_cfg(overrides))
    assert stub.count() == 1  # nothing was requested by the refused runs
    assert (Path(compose_cfg(overrides).run_dir) / "generate" / "run.json").read_text() == manifest  # nor written


def test_client_backoff_is_bounded_exponential_and_thinking_switch(stub_factory):
    waits = []
    stub = stub_factory({"down": BEHAVIOURS["down"]}, key=None)
    ep = ChatEndpoint(base_url=stub.base_url, model_id="m")
    client = ChatClient(ep, RetryPolicy(max_attempts=5, base_s=0.01, factor=3.0, max_s=0.2), timeout_s=5,
                        sleep=waits.append)
    result = client.complete([{"role": "user", "content": "[case:down]"}])
    assert not result.ok and result.attempts == 5 and result.error_kind == "server_error"
    assert waits == pytest.approx([0.01, 0.03, 0.09, 0.2])  # ×3 each time, capped at max_s
    assert RetryPolicy(base_s=1, max_s=60).delay(1, retry_after=7.0) == 7.0  # Retry-After honoured up to the cap
    on = request_body(ChatEndpoint("http://x", "m", thinking=True, thinking_style="chat_template_kwargs"),
                      [], 0.7, 10)
    off = request_body(ChatEndpoint("http://x", "m", thinking=False, thinking_style="anthropic"), [], 0.7, 10)
    none = request_body(ChatEndpoint("http://x", "m"), [], 0.7, 10)
    assert on["chat_template_kwargs"] == {"enable_thinking": True}
    assert off["thinking"] == {"type": "disabled"}
    assert set(none) == {"model", "messages", "max_tokens", "temperature"}  # no top_p / seed / stop (spec §3)


def test_api_key_with_control_characters_is_refused_without_showing_it(monkeypatch):
    """A key read from a CRLF .env file ends in \\r: http.client would raise ValueError with the key in its
    message. The client refuses it up front, and the message never contains the key."""
    from prism_fast.generate.client import ChatClient, ChatEndpoint

    ep = ChatEndpoint(base_url="http://127.0.0.1:9/v1", model_id="m", api_key_env="PRISM_TEST_KEY")
    monkeypatch.setenv("PRISM_TEST_KEY", "sk-SECRET123\r")  # the trailing CR of a CRLF file is stripped
    assert ChatClient(ep)._key == "sk-SECRET123"
    monkeypatch.setenv("PRISM_TEST_KEY", "sk-SEC\x01RET")
    with pytest.raises(RuntimeError) as info:
        ChatClient(ep)
    assert "SEC" not in str(info.value) and "sk-" not in str(info.value)
