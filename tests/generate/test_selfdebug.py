"""Self-debugging: Exec@k / Spatial@k arithmetic, feedback text, and a real two-round loop (broken script, then the
fixed one) rendered and audited for real."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from prism_fast.generate.selfdebug import build_feedback, exec_spatial_at_k, findings_text, round_row_id
from prism_fast.pipeline.generate_run import generate_from_config
from prism_fast.store import ResultsStore
from tests.generate.conftest import compose_cfg, generate_overrides, ok, text_of, write_dataset


def _row(sample, rnd, exec_ok, spatial, lang="en", model="m"):
    return {"model": model, "lang": lang, "id": round_row_id(sample, rnd), "sample_id": sample, "round": rnd,
            "exec_success": exec_ok, "spatial_pass": spatial}


def test_exec_spatial_at_k_counts_tasks_passing_within_k_rounds():
    rows = [
        _row("a", 1, False, False), _row("a", 2, True, False), _row("a", 3, True, True),  # fixed step by step
        _row("b", 1, True, True),  # passed at once, no later rounds: carries forward
        _row("c", 1, False, False), _row("c", 2, False, False), _row("c", 3, False, False),
        _row("d", 1, False, True), _row("d", 2, False, False),  # reference Q-FUNNEL-1: spatial without exec
    ]
    curve = exec_spatial_at_k(rows)
    assert curve == {1: {"exec": 1 / 4, "spatial": 2 / 4, "tasks": 4},
                     2: {"exec": 2 / 4, "spatial": 2 / 4, "tasks": 4},
                     3: {"exec": 2 / 4, "spatial": 3 / 4, "tasks": 4}}
    # the same sample id in two languages is two tasks; ids without sample_id are parsed from "<id>#r<k>"
    bare = [{k: v for k, v in r.items() if k != "sample_id"} for r in (_row("x", 1, False, False),
                                                                       _row("x", 2, True, True))]
    assert exec_spatial_at_k(bare + [_row("x", 1, True, True, lang="zh")], rounds=2) == {
        1: {"exec": 0.5, "spatial": 0.5, "tasks": 2}, 2: {"exec": 1.0, "spatial": 1.0, "tasks": 2}}
    assert exec_spatial_at_k([], rounds=2) == {1: {"exec": 0.0, "spatial": 0.0, "tasks": 0},
                                               2: {"exec": 0.0, "spatial": 0.0, "tasks": 0}}


def test_feedback_text_carries_the_error_tail_and_the_findings():
    report = {"S": {"Segment_0": {"out_of_bounds": [{"mobject": "title", "dist": 0.42}],
                                  "overlaps": [{"mobjects": ["box", "txt"], "ratio": 0.361}],
                                  "leaks": [{"mobject": "txt", "container": "box", "ratio": 0.239}]}}}
    text = findings_text(report, "en")
    assert text.splitlines() == ["- S / Segment_0: out of the frame: title (by 0.42)",
                                 "- S / Segment_0: overlap: box and txt (ratio 0.361)",
                                 "- S / Segment_0: sticks out of its box: txt out of box (ratio 0.239)"]
    assert findings_text(report, "en", max_items=1).splitlines()[-1] == "- ... and 2 more"
    kind, msg = build_feedback("en", has_script=True, render_row={"error": "x" * 50 + "NameError: name 'Sqare'"},
                               audit_row=None, exec_success=False, spatial_pass=False, error_tail_chars=30)
    assert kind == "render_error" and "NameError: name 'Sqare'" in msg and "x" * 21 not in msg
    kind, msg = build_feedback("zh", has_script=True, render_row={"success": True},
                               audit_row={"audit_success": 1, "visual_audit_report": json.dumps(report)},
                               exec_success=True, spatial_pass=False)
    assert kind == "spatial_findings" and "遮挡：box 与 txt" in msg
    assert build_feedback("en", has_script=False, render_row=None, audit_row=None, exec_success=False,
                          spatial_pass=False)[0] == "empty_output"
    assert build_feedback("en", has_script=True, render_row={}, audit_row={}, exec_success=True,
                          spatial_pass=True) == ("none", None)


BROKEN = "from manim import *\nclass Broken(Scene):\n    def construct(self):\n        self.add(Sqare())\n        self.wait(0.1)\n"
FIXED = ("from manim import *\nclass Fixed(Scene):\n    def construct(self):\n"
         "        self.play(FadeIn(Square()), run_time=0.2)\n")


@pytest.mark.slow  # two real renders and audits of tiny scenes (~20-40 s on a loaded 2-core machine)
def test_broken_then_fixed_script_gives_exec_at_1_zero_and_exec_at_2_one(tmp_path, stub_factory, monkeypatch):
    from tests.generate.conftest import STUB_KEY, STUB_KEY_ENV

    monkeypatch.setenv(STUB_KEY_ENV, STUB_KEY)
    stub = stub_factory({"fix": lambda attempt, rnd: ok(BROKEN if rnd == 1 else FIXED)})
    write_dataset(tmp_path / "ds.jsonl", {"T-fix": "fix"})
    cfg = compose_cfg(generate_overrides(tmp_path, stub, "generate.rounds=3", "execute.timeout_s=60",
                                         "execute.cache.enabled=false", "audit.timeout_sec=120",
                                         "generate.selfdebug.workers=1"))
    summary = generate_from_config(cfg)
    run_dir = Path(cfg.run_dir)

    # the loop stops once a round passes: two requests, not three
    assert [r["round"] for r in stub.requests] == [1, 2]
    rows = {r["round"]: r for r in ResultsStore(run_dir).read("selfdebug").to_pylist()}
    assert sorted(rows) == [1, 2]
    r1, r2 = rows[1], rows[2]
    assert (r1["id"], r2["id"]) == ("T-fix", "T-fix#r2")
    assert (r1["exec_success"], r1["error_type"], r1["feedback_kind"], r1["last_round"]) == (
        False, "api_hallucination", "render_error", False)  # the taxonomy's type for an unknown name
    assert "NameError: name 'Sqare' is not defined" in r1["feedback"]
    assert (r2["exec_success"], r2["spatial_pass"], r2["last_round"], r2["feedback"]) == (True, True, True, None)

    # round 2's request replays the conversation: prompt, the broken reply, the render error as a user turn
    msgs = stub.requests[1]["body"]["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user"]
    assert msgs[1]["content"] == BROKEN.strip() and text_of(msgs[2]) == r1["feedback"]
    gen = {r["round"]: r for r in ResultsStore(run_dir).read("generate").to_pylist()}
    assert json.loads(gen[2]["messages"]) == msgs  # the exact messages sent are stored

    curve = json.loads((run_dir / "selfdebug.json").read_text())["at_k"]
    assert (curve["1"]["exec"], curve["2"]["exec"], curve["3"]["exec"]) == (0.0, 1.0, 1.0)
    assert (curve["1"]["spatial"], curve["2"]["spatial"]) == (0.0, 1.0)
    assert summary["selfdebug"]["2"]["exec"] == 1.0
    # the first-attempt predictions stay the paper's setting; the final replies are written beside them
    first = json.loads((run_dir / "generate" / "responses.jsonl").read_text())
    final = json.loads((run_dir / "generate" / "responses_final.jsonl").read_text())
    assert (first["response"], final["response"], final["round"]) == (BROKEN, FIXED, 2)

    # resuming a finished self-debugging run asks nothing and renders nothing
    generate_from_config(cfg)
    assert len(stub.requests) == 2
    assert len(ResultsStore(run_dir).read("selfdebug", dedupe=False)) == 2


@pytest.mark.slow  # four real renders and audits of tiny scenes
def test_raising_rounds_on_resume_continues_the_last_failed_round(tmp_path, stub_factory, monkeypatch):
    from tests.generate.conftest import STUB_KEY, STUB_KEY_ENV

    monkeypatch.setenv(STUB_KEY_ENV, STUB_KEY)
    stub = stub_factory({"fix": lambda attempt, rnd: ok(FIXED if rnd >= 3 else BROKEN)})
    write_dataset(tmp_path / "ds.jsonl", {"T-fix": "fix"})
    base = generate_overrides(tmp_path, stub, "execute.timeout_s=60", "execute.cache.enabled=false",
                              "audit.timeout_sec=120", "generate.selfdebug.workers=1")
    cfg2 = compose_cfg([*base, "generate.rounds=2"])
    generate_from_config(cfg2)
    run_dir = Path(cfg2.run_dir)
    rows = {r["round"]: r for r in ResultsStore(run_dir).read("selfdebug").to_pylist()}
    assert sorted(rows) == [1, 2] and rows[2]["last_round"] is True and rows[2]["feedback"] is None

    generate_from_config(compose_cfg([*base, "generate.rounds=3"]))  # same run dir, one more round allowed
    assert [r["round"] for r in stub.requests] == [1, 2, 3]  # rounds 1-2 reused, only round 3 asked
    rows = {r["round"]: r for r in ResultsStore(run_dir).read("selfdebug").to_pylist()}
    assert sorted(rows) == [1, 2, 3]
    assert rows[2]["last_round"] is False and "Sqare" in rows[2]["feedback"]  # round 2 evaluated again
    assert (rows[3]["exec_success"], rows[3]["spatial_pass"], rows[3]["last_round"]) == (True, True, True)
    msgs = stub.requests[2]["body"]["messages"]
    assert [m["role"] for m in msgs] == ["user", "assistant", "user", "assistant", "user"]
