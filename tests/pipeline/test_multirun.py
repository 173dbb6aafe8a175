"""Hydra multirun through the real CLI: one run directory per job, a sweep summary, and a sweep over a metric
setting that renders and audits once (render cache + audit cache), re-running only the metric stage."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

TINY = '''from manim import *

class Tiny(Scene):
    def construct(self):
        sq = Square(color=BLUE, fill_opacity=0.5)
        self.play(Create(sq), run_time=0.4)
        self.play(sq.animate.shift(RIGHT), run_time=0.4)
'''


def _rows(job_dir: Path, stage: str) -> list[dict]:
    files = sorted((job_dir / "rows" / stage).rglob("*.parquet"))
    assert files, f"no {stage} rows in {job_dir}"
    return [r for f in files for r in pq.read_table(f).to_pylist()]


def test_multirun_one_dir_per_job_and_metric_only_reruns(tmp_path):
    preds = tmp_path / "preds"
    preds.mkdir()
    (preds / "SAMPLE-EN-000001.py").write_text(TINY, encoding="utf-8")
    cmd = [sys.executable, "-m", "prism_fast.cli", "-m", "model=predictions", "model.name=tiny",
           f"model.predictions={preds}", "dataset.ids=[SAMPLE-EN-000001]", "lang=en", "runs_root=runs",
           "cluster.num_cpus=1", "metrics.td.tau=20,30"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    # the sweep lives under runs_root (<runs_root>/multirun/<date>/<time>/), nothing in the current directory
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preds", "runs"]
    (sweep,) = (tmp_path / "runs" / "multirun").glob("*/*")

    jobs = [sweep / "0", sweep / "1"]
    for job in jobs:
        assert (job / "summary.json").exists() and (job / ".hydra" / "overrides.yaml").exists()
        assert (job / "prism-fast.log").is_file() and (job / "run.json").is_file()
    ex0, ex1 = (_rows(j, "exec")[0] for j in jobs)
    au0, au1 = (_rows(j, "audit")[0] for j in jobs)
    td0, td1 = (_rows(j, "td")[0] for j in jobs)
    # rendered and audited once: the second job is served by the caches, with the same outcome
    assert ex0["success"] and ex1["success"]
    assert not ex0["cache_hit"] and ex1["cache_hit"]
    assert au0["audit_cache_hit"] is False and au1["audit_cache_hit"] is True
    assert au1["visual_audit_report"] == au0["visual_audit_report"]
    assert au1["file_path"].startswith(str(jobs[1]))
    assert Path(au1["report_path"]).read_text(encoding="utf-8") == Path(au0["report_path"]).read_text(encoding="utf-8")
    # the metric stage ran in both, with its own threshold
    assert (td0["pixel_threshold"], td1["pixel_threshold"]) == (20, 30)
    assert td0["td_status"] == td1["td_status"] == "ok"
    assert td0["td_raw"] >= td1["td_raw"]  # a higher threshold never counts more changed pixels

    summary = json.loads((sweep / "sweep_summary.json").read_text(encoding="utf-8"))
    assert [(r["job"], r["lang"], r["status"]) for r in summary] == [(0, "en", "ok"), (1, "en", "ok")]
    assert summary[0]["swept"] == ["metrics.td.tau=20"] and summary[1]["swept"] == ["metrics.td.tau=30"]
    assert "lang=en" in summary[0]["overrides"]
    md = (sweep / "sweep_summary.md").read_text(encoding="utf-8")
    assert "metrics.td.tau=20" in md and "metrics.td.tau=30" in md
    assert (sweep / "sweep_summary.csv").read_text(encoding="utf-8").count("\n") == 3


def test_sweep_summary_marks_swept_settings_and_missing_jobs(tmp_path):
    from prism_fast.pipeline.sweep import write_sweep_summary

    def job(num, overrides, groups):
        d = tmp_path / str(num)
        (d / ".hydra").mkdir(parents=True)
        (d / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides), encoding="utf-8")
        if groups is not None:
            (d / "summary.json").write_text(json.dumps({"groups": groups, "stage_seconds": {"exec": 1.5}}))

    g = {"model": "m", "lang": "en", "tasks": 4, "exec_pct": 75.0, "spatial_pct": 50.0}
    job(0, ["lang=en", "audit.cover_min=0.08"], [g])
    job(1, ["lang=en", "audit.cover_min=0.1"], [{**g, "spatial_pct": 25.0}])
    job(2, ["lang=en", "audit.cover_min=0.12"], None)  # a job that crashed before its summary
    records = write_sweep_summary(tmp_path)
    assert [(r["job"], r["status"], r["swept"]) for r in records] == [
        (0, "ok", ["audit.cover_min=0.08"]), (1, "ok", ["audit.cover_min=0.1"]),
        (2, "no summary", ["audit.cover_min=0.12"])]
    assert [r.get("spatial_pct") for r in records] == [50.0, 25.0, None]
    md = (tmp_path / "sweep_summary.md").read_text(encoding="utf-8")
    assert "| 2 | audit.cover_min=0.12 | no summary |" in md
    assert "lang=en" not in md  # common to every job: not a swept setting
