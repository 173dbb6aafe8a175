"""Resume checks the settings (issue #15, item 1), through the real CLI: a re-run in the same run directory with
another TD τ, audit threshold or profile recomputes exactly the rows those settings decide (or, with
``on_settings_change=refuse``, stops before any work naming the changed key); run.json and the summary never
state a setting the rows were not made with. One tiny script, one task, real Ray, real renders and audits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from prism_fast.store import ResultsStore

TINY = '''from manim import *

class Tiny(Scene):
    def construct(self):
        sq = Square(color=BLUE, fill_opacity=0.5)
        self.play(Create(sq), run_time=0.4)
        self.play(sq.animate.shift(RIGHT), run_time=0.4)
'''
SID = "SAMPLE-EN-000001"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    root = tmp_path_factory.mktemp("resume_settings")
    preds = root / "preds"
    preds.mkdir()
    (preds / f"{SID}.py").write_text(TINY, encoding="utf-8")
    return root


def _eval(cwd: Path, *extra: str):
    """The CLI in ``cwd`` with a relative runs_root (it must land in cwd/runs, nothing else in cwd)."""
    cmd = [sys.executable, "-m", "prism_fast.cli", "model=predictions", "model.name=tiny", "model.predictions=preds",
           f"dataset.ids=[{SID}]", "lang=en", "runs_root=runs", "run_name=fp", "cluster.num_cpus=1", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=cwd,
                          env={**os.environ, "PYTHONUNBUFFERED": "1"})


def _rows(run_dir: Path, stage: str, dedupe: bool = True) -> list[dict]:
    return ResultsStore(run_dir).read(stage, dedupe=dedupe).to_pylist()


def _summary(run_dir: Path) -> dict:
    return json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))


def _counts(run_dir: Path) -> dict:
    return {s: len(_rows(run_dir, s, dedupe=False)) for s in ("tasks", "exec", "audit", "td", "text_expand")}


def test_resume_recomputes_what_changed_or_refuses(workdir):
    run_dir = workdir / "runs" / "fp"

    # 1. τ = 25 (the default)
    first = _eval(workdir)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert sorted(p.name for p in workdir.iterdir()) == ["preds", "runs"]  # no outputs/, no multirun/ in cwd
    assert (run_dir / ".hydra" / "overrides.yaml").is_file() and (run_dir / "prism-fast.log").is_file()
    (td25,) = _rows(run_dir, "td")
    assert td25["pixel_threshold"] == 25 and td25["settings_sha256"] and td25["inputs_sha256"]
    summary25 = _summary(run_dir)
    counts = _counts(run_dir)
    assert counts == dict.fromkeys(counts, 1)
    run_json = (run_dir / "run.json").read_bytes()
    history = sorted((run_dir / "run_history").iterdir())

    # 2. τ = 5 with on_settings_change=refuse: stops before any work, naming the key; nothing changes
    refused = _eval(workdir, "metrics.td.tau=5", "on_settings_change=refuse")
    assert refused.returncode != 0
    err = refused.stdout + refused.stderr
    assert "metrics.td.tau: 25 → 5" in err and "Traceback" not in err
    assert "td: 1 row(s)" in err and "exec" not in err.split("other settings")[1].split("Nothing")[0]
    assert (run_dir / "run.json").read_bytes() == run_json
    assert sorted((run_dir / "run_history").iterdir()) == history
    assert _counts(run_dir) == counts and _summary(run_dir) == summary25

    # 3. τ = 5, default (recompute): TD rows are τ = 5, the summary is new, renders/audits are not redone
    second = _eval(workdir, "metrics.td.tau=5")
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert "metrics.td.tau: 25 → 5" in second.stdout + second.stderr
    assert "metrics.td.tau: 25 → 5" in (run_dir / "prism-fast.log").read_text(encoding="utf-8")
    (td5,) = _rows(run_dir, "td")
    assert td5["pixel_threshold"] == 5 and td5["td_raw"] >= td25["td_raw"]
    summary5 = _summary(run_dir)
    assert summary5["groups"][0]["td_center_mean_rendered"] != summary25["groups"][0]["td_center_mean_rendered"]
    assert _counts(run_dir) == {**counts, "td": 2}
    manifest = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    assert manifest["config"]["metrics"]["td"]["tau"] == 5 and manifest["finished_at"]
    assert manifest["settings_sha256"]["td"]["en"] == td5["settings_sha256"]
    (registered,) = [r for r in _rows(run_dir, "settings") if r["id"] == td5["settings_sha256"]]
    assert json.loads(registered["settings"])["metrics.td.tau"] == 5

    # 4. an audit threshold: audit rows and the TD rows that read them are recomputed, the render is not
    third = _eval(workdir, "metrics.td.tau=5", "audit.cover_min=0.2")
    assert third.returncode == 0, third.stdout[-3000:] + third.stderr[-3000:]
    text = third.stdout + third.stderr
    assert "audit.cover_min: 0.1 → 0.2" in text
    assert _counts(run_dir) == {**counts, "audit": 2, "td": 3}
    (audit,) = _rows(run_dir, "audit")
    assert audit["audit_cache_hit"] is False  # audited again with the new threshold (the cache keys on it)

    # 5. the profile: every stage's rows are remade under it
    fourth = _eval(workdir, "metrics.td.tau=5", "audit.cover_min=0.2", "profile=improved")
    assert fourth.returncode == 0, fourth.stdout[-3000:] + fourth.stderr[-3000:]
    assert 'profile: "reference" → "improved"' in fourth.stdout + fourth.stderr
    assert _counts(run_dir) == {"tasks": 2, "exec": 2, "audit": 3, "td": 4, "text_expand": 2}
    for stage in ("tasks", "exec", "audit", "td", "text_expand"):
        assert [r["profile"] for r in _rows(run_dir, stage)] == ["improved"], stage

    # 6. TD disabled with another τ: the stage does not run, so its rows (τ = 5) are left out of the summary
    fifth = _eval(workdir, "metrics.td.tau=9", "audit.cover_min=0.2", "profile=improved", "metrics.td.enabled=false")
    assert fifth.returncode == 0, fifth.stdout[-3000:] + fifth.stderr[-3000:]
    summary = _summary(run_dir)
    assert "td_center_mean_rendered" not in summary["groups"][0] and summary["left_out_stale"] == {"td": 1}
    assert "Left out" in (run_dir / "summary.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in workdir.iterdir()) == ["preds", "runs"]
