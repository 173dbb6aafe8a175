"""Nondeterminism flagged per exec row (execute/determinism.py wired into the render worker, pipeline/actors.py):
real renders through the render worker the Exec stage and its head start use (prefork backend, real sandbox), no
mocks. The run summary and Table 1's note count the marked rows."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from prism_fast.execute.determinism import KIND_NUMPY
from prism_fast.execute.render import RenderConfig
from prism_fast.execute.stage import finish_row
from prism_fast.pipeline.actors import RenderWorker
from prism_fast.profile import REFERENCE
from prism_fast.store import ResultsStore, row_problems

RANDOM_DOTS = """from manim import *
import numpy as np


class RandomDots(Scene):
    def construct(self):
        np.random.seed()
        self.add(*[Dot(np.random.uniform(-3, 3, size=3), color=BLUE) for _ in range(6)])
        self.wait(0.2)
"""

SQUARE = """from manim import *


class Still(Scene):
    def construct(self):
        self.add(Square(side_length=2, color=RED))
        self.wait(0.2)
"""

FIELDS = ("determinism_marks", "determinism_sha256", "determinism_equal")


@pytest.fixture(scope="module")
def render(tmp_path_factory):
    """``render(sample_id, script, determinism_check)`` -> the exec row the render worker returns."""
    root = tmp_path_factory.mktemp("determinism")
    cfg = RenderConfig(timeout_s=300, text_boxes=False)
    worker = RenderWorker(cfg, REFERENCE, str(root / "out"), prefork=True)

    def run(sample_id: str, script: str, check: bool = False) -> dict:
        worker.use_render_cfg(replace(cfg, determinism_check=check))
        row = worker.render(sample_id, script)
        assert row.get("success"), row.get("error")
        assert row_problems("exec", finish_row(row)) == []  # the fields fit the store's schema
        return row

    yield run
    worker.close()


def test_seedless_numpy_seed_with_random_positions_is_marked(render):
    row = render("dots", RANDOM_DOTS)
    marks = row["determinism_marks"]
    assert [(m["kind"], m["name"], m["line"]) for m in marks] == [
        (KIND_NUMPY, "np.random.seed", 7), (KIND_NUMPY, "np.random.uniform", 8)]
    assert row["determinism_sha256"] is None and row["determinism_equal"] is None  # no double render asked for


def test_deterministic_scene_has_no_marks(render):
    row = render("still", SQUARE)
    assert {k: row[k] for k in FIELDS} == {k: None for k in FIELDS}


def test_determinism_check_renders_twice_and_records_both_sha256(render):
    row = render("still_twice", SQUARE, check=True)
    first, second = row["determinism_sha256"]
    assert len(first) == 64 and first == second and row["determinism_equal"] is True
    assert row["determinism_marks"] is None and row["manim_executions"] == 2
    from prism_fast.fsutil import sha256_file

    assert sha256_file(row["video_path"]) == first  # the row's own video is the first of the two


def test_determinism_check_catches_the_seedless_scene(render, caplog):
    with caplog.at_level("WARNING", logger="prism_fast.execute.determinism"):
        row = render("dots_twice", RANDOM_DOTS, check=True)
    first, second = row["determinism_sha256"]
    assert first and second and first != second and row["determinism_equal"] is False
    assert any("different videos" in r.getMessage() for r in caplog.records)


def test_summary_and_table1_count_marked_rows(tmp_path):
    from prism_fast.pipeline.summary import format_summary, summarize_run
    from prism_fast.report.cli import ReportOptions, build_report

    store = ResultsStore(tmp_path)
    key = {"model": "m", "lang": "en"}
    marks = [{"kind": KIND_NUMPY, "name": "np.random.seed", "line": 7}]
    store.append("tasks", [{**key, "id": i, "status": "ok", "has_script": True} for i in ("a", "b", "c")])
    store.append("exec", [
        {**key, "id": "a", "status": "ok", "success": True, "determinism_marks": marks},
        {**key, "id": "b", "status": "ok", "success": True, "determinism_sha256": ["1" * 64, "2" * 64],
         "determinism_equal": False, "determinism_marks": marks},
        {**key, "id": "c", "status": "ok", "success": True, "determinism_sha256": ["3" * 64] * 2,
         "determinism_equal": True}])
    summary = summarize_run(store, "m", ["a", "b", "c"], {})
    (group,) = summary["groups"]
    assert (group["nondeterminism_marked"], group["determinism_checked"], group["determinism_differ"]) == (2, 2, 1)
    text = format_summary(summary)
    assert "2 samples with nondeterminism marks" in text and "m/en: 1 of 2 gave different videos" in text
    (tmp_path / "run.json").write_text(json.dumps({"profile": "reference", "quirks_fixed": []}))
    out = build_report(ReportOptions(runs=[str(tmp_path)], out_dir=str(tmp_path / "rep"), resamples=100,
                                     formats=["markdown"]))
    (t1,) = out["result"]["table1"]
    assert (t1["nondeterminism_marked_n"], t1["determinism_checked_n"], t1["determinism_differ_n"]) == (2, 2, 1)
    note = (out["out_dir"] / "table1.md").read_text().split("\n")[0]
    assert "2 samples with nondeterminism marks" in note and "Rendered twice: 1 of 2" in note
