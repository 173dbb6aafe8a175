"""No single row stops a run (issue #15, item 3).

* The store turns a row that fails validation (unknown field, wrong type, status outside the enum) into that
  sample's error row when asked to (the pipeline always asks), and keeps raising for library callers.
* Every stage core's error paths, driven for real, emit only keys (and types) the schema declares: the keys are
  whatever the code returns, checked with the store's own validation — no hand-written list.
* Regression, through the real CLI: a benign script with a terminating recursive helper (TextExpand's extractor
  once hit RecursionError on it, its row carried an undeclared field, the store raised, and every resume crashed
  the same way) ends in a summary, with every row valid.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import types
from pathlib import Path

import cv2
import numpy as np
import pytest

from prism_fast.profile import IMPROVED, REFERENCE
from prism_fast.schema import normalize_status
from prism_fast.store import ResultsStore, row_problems

RECURSIVE = '''from manim import *


def label(n):
    if n <= 0:
        return Text("base", font_size=24)
    return label(n - 1)


class Recursive(Scene):
    def construct(self):
        t = label(3)
        self.play(FadeIn(t), run_time=0.3)
'''
TINY = '''from manim import *

class Tiny(Scene):
    def construct(self):
        self.play(Create(Square()), run_time=0.3)
'''
SYNTAX_ERROR = '''from manim import *

class Broken(Scene):
    def construct(self):
        self.play(Create(Circle())
'''
NO_SCENE = "print('no scene here')\n"
TAMPERING = '''from manim import *

class Sneaky(Scene):
    def play(self, *a, **k):
        pass

    def construct(self):
        self.play(Create(Circle()))
'''


# -- the store ------------------------------------------------------------------------------------------------
def test_invalid_rows_become_the_samples_error_rows(tmp_path):
    store = ResultsStore(tmp_path)
    good = {"model": "m", "lang": "en", "id": "A", "status": "ok", "td_raw": 0.5, "pixel_threshold": 25}
    rows = [good,
            {"model": "m", "lang": "en", "id": "B", "status": "ok", "parse_error_x": "RecursionError", "td_raw": 1.0},
            {"model": "m", "lang": "en", "id": "C", "status": "ok", "pixel_threshold": "abc", "settings_sha256": "s"},
            {"model": "m", "lang": "en", "id": "D", "status": "parse_fail", "td_raw": 2.0}]
    with pytest.raises(KeyError, match="unknown field"):
        store.append("td", rows)  # library default: strict
    with pytest.raises(TypeError, match="pixel_threshold"):
        store.append("td", [good, rows[2]])
    assert store.read("td").num_rows == 0
    store.append("td", rows, invalid="error_row")
    got = {r["id"]: r for r in store.read("td").to_pylist()}
    assert got["A"]["status"] == "ok" and got["A"]["td_raw"] == 0.5
    for sid, word in (("B", "unknown field(s) ['parse_error_x']"), ("C", "field 'pixel_threshold'"),
                      ("D", "status 'parse_fail'")):
        row = got[sid]
        assert (row["status"], row["error_kind"]) == ("error", "invalid_row"), sid
        assert word in row["error_detail"] and "prism_fast/schema.py" in row["error_detail"]
        assert row["td_raw"] is None  # nothing unvalidated is kept
    assert got["C"]["settings_sha256"] == "s"  # its fingerprint stays: a resume treats it as current


# -- every stage core's error paths emit only declared keys ------------------------------------------------------
def _stored(stage: str, row: dict, lang: str = "en") -> dict:
    """The row as the pipeline hands it to the store (run_actor_stage adds these)."""
    return {"model": "m", "profile": "reference", **row, "id": row.get("id") or "X", "lang": lang}


def _video(path: Path) -> Path:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"FFV1"), 15, (64, 48))
    for t in range(8):
        frame = np.zeros((48, 64, 3), np.uint8)
        frame[10:30, 5 + 3 * t:25 + 3 * t] = 200
        writer.write(frame)
    writer.release()
    return path


def _core_rows(tmp_path: Path, monkeypatch) -> list[tuple[str, str, dict]]:
    """(stage, what, row) for every error path of every stage core we can drive here, plus their ok paths."""
    from prism_fast.audit.config import AuditConfig
    from prism_fast.audit.runner import audit_one
    from prism_fast.execute.render import RenderConfig, render_one
    from prism_fast.execute.taxonomy import taxonomy_fields
    from prism_fast.metrics import text_expand as te
    from prism_fast.metrics.padvc import base_fields, error_row, gate_error
    from prism_fast.metrics.td import TD_FIT_SENSITIVE, TDParams, score_td_row
    from prism_fast.audit import stage as audit_stage
    from prism_fast.execute import stage as exec_stage
    from prism_fast.metrics.padvc_run import PadvcWorker
    from prism_fast.metrics.stage import text_expand_stage_row
    from prism_fast.pipeline import actors, stages
    from prism_fast.pipeline.eval_stages import STAGES
    from prism_fast.pipeline.streaming import WorkerKilledBySample

    out: list[tuple[str, str, dict]] = []
    job = stages.Job("en", "X", ("en", {"id": "X", "render_success": True, "video_path": "/nope.mp4"}))
    lost = RuntimeError("worker died")
    lost_fields = {s.name: s.lost for s in STAGES}  # the stage table's hooks for a job whose worker never returned

    # pipeline-level rows: no script, lost workers, contained exceptions
    out.append(("exec", "no_script", exec_stage.finish_row(exec_stage.no_script_row("en", "X", "missing"))))
    out.append(("exec", "killed", {"status": "error", "error_kind": "worker_killed_by_sample", "error_detail": "x",
                                   **lost_fields["exec"](job, WorkerKilledBySample(2, lost))}))
    out.append(("exec", "lost", {"status": "error", "error_kind": "worker_lost", **lost_fields["exec"](job, lost)}))
    out.append(("audit", "no_script", normalize_status(audit_stage.no_script_row("en", "X"), "audit_status")))
    out.append(("audit", "lost", {"status": "error", "error_kind": "worker_lost", **lost_fields["audit"](job, lost)}))
    out.append(("td", "lost", {"status": "error", "error_kind": "worker_lost", **lost_fields["td"](job, lost)}))
    out.append(("padvc", "lost", {"status": "error", "error_kind": "worker_lost", **lost_fields["padvc"](job, lost)}))

    def boom(self, sample_id, *args):
        raise RecursionError("maximum recursion depth exceeded")

    for stage, fallback, args in (("exec", actors._render_fallback, ("code",)),
                                  ("audit", actors._audit_fallback, ("code",)),
                                  ("td", actors._td_fallback, ("en", {"render_success": True}))):
        row = actors.contained(fallback)(boom)(None, "X", *args)
        status_field = {"exec": "exec_status", "audit": "audit_status", "td": "td_status"}[stage]
        out.append((stage, "contained", normalize_status(row, status_field)))

    # TextExpand: ok, the recursive helper, a syntax error (fallback scan), missing input, an extractor that raises
    for what, code, prompt in (("ok", TINY, "Draw a square."), ("recursive", RECURSIVE, "Label it."),
                               ("syntax", SYNTAX_ERROR, "Draw."), ("missing", None, "Draw.")):
        for profile in (REFERENCE, IMPROVED):
            row = text_expand_stage_row(types.SimpleNamespace(id="X", instruction=prompt, language="en"), "en", code,
                                        profile, "m")
            out.append(("text_expand", f"{what}/{profile.name}", row))
    with monkeypatch.context() as m:
        m.setattr(te, "extract_display_text", lambda code, profile: (_ for _ in ()).throw(RecursionError("deep")))
        row = te.text_expand_row("X", TINY, "Draw.", "en", REFERENCE)
        assert row["status"] == "parse_fail" and row.get("parse_error")
        out.append(("text_expand", "parse_fail", normalize_status(row, "text_expand_status")))
        m.setattr(te, "text_expand_row", lambda *a, **k: (_ for _ in ()).throw(RecursionError("deeper")))
        row = text_expand_stage_row(types.SimpleNamespace(id="X", instruction="Draw.", language="en"), "en", TINY,
                                    REFERENCE, "m")
        assert row["error_kind"] == "stage_exception"
        out.append(("text_expand", "stage_exception", row))

    # Exec: no scene (nothing runs), a syntax error (one real sandboxed render), the taxonomy of both
    cfg = RenderConfig(cache_dir=None, tex_cache_dir=None)
    for what, code in (("no_scene", NO_SCENE), ("syntax", SYNTAX_ERROR)):
        row = render_one(f"E-{what}", code, str(tmp_path / "exec"), cfg, REFERENCE)
        row.update(taxonomy_fields(code=code, render_row=row, generation_status="success", script_id=f"E-{what}"))
        if isinstance(row.get("onepass_reasons"), list):
            row["onepass_reasons"] = json.dumps(row["onepass_reasons"])
        out.append(("exec", what, normalize_status(row, "exec_status", skipped_values=("skipped",))))

    # Audit: tamper evidence (nothing runs), a syntax error (one real sandboxed audit)
    for what, code in (("tampered", TAMPERING), ("syntax", SYNTAX_ERROR)):
        row = audit_one(f"A-{what}", code, str(tmp_path / "audit"), AuditConfig(), REFERENCE)
        out.append(("audit", what, normalize_status({**row, "audit_pass": "separate"}, "audit_status")))

    # TD: no render, a missing file, an undecodable file, a real video
    junk = tmp_path / "junk.mp4"
    junk.write_bytes(b"not a video")
    for what, base in (("no_render", {"render_success": False, "video_path": None}),
                       ("missing", {"render_success": True, "video_path": str(tmp_path / "none.mp4")}),
                       ("junk", {"render_success": True, "video_path": str(junk)}),
                       ("ok", {"render_success": True, "video_path": str(_video(tmp_path / "v.avi"))})):
        for profile in (REFERENCE, IMPROVED):
            params = TDParams(-3.4, 0.47, 4.7e-3, "test", frozenset(q for q in TD_FIT_SENSITIVE if profile.fixes(q)))
            row = score_td_row({"id": "X", "source_id": "X", "visual_structure_pass": 1, "visual_structure_rate": 1.0,
                                **base}, params, profile=profile)
            row.update(pixel_threshold=25, device="cpu")
            out.append(("td", f"{what}/{profile.name}", normalize_status(row, "td_status")))

    # PADVC: the gate, a prompt PVD could not score, decode failures inside the worker
    task = {"id": "X", "source_id": "X", "instruction_text": "Draw."}
    audit_row, exec_row = {"audit_success": 0}, {"success": False}
    base = base_fields(task, audit_row, exec_row)
    gate = error_row(base, f"RuntimeError: {gate_error(task, audit_row, exec_row)}")
    gate.update(lang="en", error_kind="gate", error_detail="audit_success != 1")
    out.append(("padvc", "gate", normalize_status(gate, "padvc_status")))
    pvd = error_row(base, "RuntimeError: x")
    pvd.update(lang="en", error_kind="pvd_failed", error_detail="x")
    out.append(("padvc", "pvd_failed", normalize_status(pvd, "padvc_status")))
    from prism_fast.config_schema import compose_group

    settings = compose_group("metrics.padvc", "metrics.padvc.ocr_backend=rapidocr", "metrics.padvc.ocr.provider=cpu")
    pvd_fields = {"pvd_raw": 3, "pvd_factor": 1.0}
    for profile in (REFERENCE, IMPROVED):
        worker = PadvcWorker(settings, profile, str(tmp_path / "ocr"), str(tmp_path / "frames"))
        from prism_fast.metrics.padvc import PadvcParams

        for what, path in (("missing", tmp_path / "none.mp4"), ("junk", junk)):
            row = worker.score({**base, "video_path": str(path), "render_success": True}, pvd_fields,
                               PadvcParams(-2.4, 1.8, 1e-8))
            out.append(("padvc", f"{what}/{profile.name}", normalize_status(row, "padvc_status")))
    return out


def _generate_rows(tmp_path: Path) -> list[tuple[str, str, dict]]:
    from prism_fast.generate.client import CallResult
    from prism_fast.generate.rounds import SelfDebugSettings, TaskRunner
    from prism_fast.generate.rows import generation_row
    from prism_fast.pipeline.generate_run import round_tools
    from prism_fast.pipeline.options import endpoint_from_mapping

    endpoint = endpoint_from_mapping({"name": "m", "endpoint": {"base_url": "http://127.0.0.1:9/v1", "model_id": "m"}},
                                     {})
    task = types.SimpleNamespace(id="X", language="en", instruction="Draw.")
    out = []
    for profile in (REFERENCE, IMPROVED):
        opts = types.SimpleNamespace(endpoint=endpoint, model_name="m", profile=profile, rounds=2, run_dir=tmp_path,
                                     selfdebug=SelfDebugSettings(), render=None, audit_cfg=None)
        messages = [{"role": "user", "content": "Draw."}]
        calls = {"connection_error": CallResult(ok=False, error_kind="connection_error", error="refused", attempts=3),
                 "empty": CallResult(ok=True, content="", attempts=1, usage={"prompt_tokens": 1}),
                 "ok": CallResult(ok=True, content=f"```python\n{TINY}```", attempts=1)}
        runner = TaskRunner(opts, None, None, None, {}, {}, round_tools(opts), 600.0)
        for what, call in calls.items():
            row = generation_row("m", endpoint, profile, task, 1, "Draw.", messages, call, "t0", 600.0)
            out.append(("generate", f"{what}/{profile.name}", row))
            if what != "ok":  # self-debugging outcome of a round without a script (no render needed)
                out.append(("selfdebug", f"{what}/{profile.name}", runner.evaluate_round(task, 1, row)))
    return out


def test_every_key_a_stage_core_emits_is_in_the_schema(tmp_path, monkeypatch):
    rows = _core_rows(tmp_path, monkeypatch) + _generate_rows(tmp_path)
    problems = {f"{stage}:{what}": p for stage, what, row in rows if (p := row_problems(stage, _stored(stage, row)))}
    assert not problems, json.dumps(problems, indent=1)
    # the driving reached the error paths it names
    seen = {(stage, what.split("/")[0]) for stage, what, _ in rows}
    assert {("td", "junk"), ("td", "missing"), ("padvc", "junk"), ("exec", "syntax"), ("audit", "tampered"),
            ("text_expand", "parse_fail"), ("generate", "connection_error"), ("selfdebug", "empty")} <= seen
    statuses = {(s, w): r.get("status") for s, w, r in rows}
    assert statuses[("exec", "syntax")] == "error" and statuses[("audit", "syntax")] == "error"


# -- regression through the CLI ----------------------------------------------------------------------------------
def test_recursive_helper_never_stops_the_run(tmp_path):
    preds = tmp_path / "preds"
    preds.mkdir()
    scripts = {"SAMPLE-EN-000001": TINY, "SAMPLE-EN-000002": RECURSIVE, "SAMPLE-EN-000003": SYNTAX_ERROR}
    for sid, code in scripts.items():
        (preds / f"{sid}.py").write_text(code, encoding="utf-8")
    cmd = [sys.executable, "-m", "prism_fast.cli", "model=predictions", "model.name=rec", f"model.predictions={preds}",
           f"dataset.ids=[{','.join(scripts)}]", "lang=en", f"runs_root={tmp_path / 'runs'}", "cluster.num_cpus=2",
           "execute.cache.enabled=false"]
    for attempt in range(2):  # the run, then a resume (which used to crash the same way)
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path,
                              env={**os.environ, "PYTHONUNBUFFERED": "1"})
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert "prism_fast summary" in proc.stdout
    run_dir = tmp_path / "runs" / "rec-sample-en-reference"
    store = ResultsStore(run_dir)
    for stage in ("tasks", "exec", "audit", "td", "text_expand"):
        rows = store.read(stage, dedupe=False).to_pylist()
        assert len(rows) == len(scripts), stage  # written once, not again on resume
        assert not [r for r in rows if r["error_kind"] in ("invalid_row", "stage_exception")], stage
    te = {r["id"]: r for r in store.read("text_expand").to_pylist()}
    assert te["SAMPLE-EN-000002"]["text_expand_status"] in ("ok", "parse_fail")
    ex = {r["id"]: r for r in store.read("exec").to_pylist()}
    assert ex["SAMPLE-EN-000002"]["success"] and not ex["SAMPLE-EN-000003"]["success"]
    assert (run_dir / "summary.json").is_file()
