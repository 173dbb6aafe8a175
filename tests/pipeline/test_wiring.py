"""pipeline/ only wires (issue #16): the stage table is eval's funnel, every stage's rows land in a declared table,
quirk branch points sit in the stage packages, and the generic stage loop stores, tags and resumes rows."""

from __future__ import annotations

import ast
import types
from pathlib import Path

import prism_fast
from prism_fast.config_schema import compose_group
from prism_fast.pipeline.eval_stages import STAGES
from prism_fast.pipeline.stages import Job, Stage, StageRun, run_stage
from prism_fast.profile import REFERENCE
from prism_fast.schema import STAGE_FIELDS
from prism_fast.store import ResultsStore

PACKAGE = Path(prism_fast.__file__).parent


def test_stage_table_is_the_funnel():
    assert [s.name for s in STAGES] == ["exec", "audit", "padvc", "td", "text_expand"]
    assert all(s.name in STAGE_FIELDS for s in STAGES)
    for s in STAGES:  # a worker stage says what a lost job's row holds; a driver stage computes its rows itself
        assert (s.actor is not None and s.lost is not None) != (s.row is not None), s.name
    padvc_on = compose_group("metrics.padvc", "metrics.padvc.enabled=true")  # the typed group, as EvalOptions holds it
    opts = types.SimpleNamespace(audit=False, td=True, text_expand=False, padvc=padvc_on)
    assert [s.name for s in STAGES if s.enabled(opts)] == ["exec", "padvc", "td"]
    opts.padvc = compose_group("metrics.padvc", "metrics.padvc.enabled=false")
    assert [s.name for s in STAGES if s.enabled(opts)] == ["exec", "td"]


def test_no_quirk_branch_points_in_pipeline():
    calls = []
    for path in sorted((PACKAGE / "pipeline").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "fixes":
                calls.append(f"{path.name}:{node.lineno}")
    assert not calls, f"profile.fixes(...) belongs in the stage package: {calls}"


def test_driver_stage_stores_tags_and_resumes(tmp_path):
    store = ResultsStore(tmp_path)
    inputs = [types.SimpleNamespace(language="en", id=f"T-{i}") for i in range(3)]
    computed = []

    def row(run, job):
        computed.append(job.id)
        return {"model": "m", "lang": job.lang, "id": job.id, "profile": "reference",
                "status": "error" if job.id == "T-2" else "ok", "text_expand_status": "ok"}

    stage = Stage("text_expand", lambda o: True, lambda run: (Job(i.language, i.id, ()) for i in run.inputs),
                  row=row)
    fps = types.SimpleNamespace(expected=lambda stage: None,
                                tag=lambda stage, lang, sid: {"settings_sha256": f"s-{stage}", "inputs_sha256": sid})
    bars = []

    class Bar:
        def __init__(self, label, total):
            bars.append((label, total))

        def update(self, n, failed=False):
            pass

        def close(self):
            pass

    opts = types.SimpleNamespace(model_name="m", retry_failed=False, profile=REFERENCE)
    run = StageRun(opts, store, [], inputs, fps, Bar)
    run_stage(stage, run)
    stored = store.rows_by_key("text_expand", "m")
    assert sorted(stored) == [("en", "T-0"), ("en", "T-1"), ("en", "T-2")]
    assert stored[("en", "T-1")]["settings_sha256"] == "s-text_expand" and stored[("en", "T-1")]["inputs_sha256"] == "T-1"
    assert computed == ["T-0", "T-1", "T-2"] and bars == [("text_expand", 3)]

    run_stage(stage, run)  # resume: nothing is computed again
    assert computed == ["T-0", "T-1", "T-2"]
    opts.retry_failed = True  # only the failed row is
    run_stage(stage, run)
    assert computed == ["T-0", "T-1", "T-2", "T-2"] and bars[-1] == ("text_expand", 1)
