"""The main job on the bundled sample set: every reference answer renders (a requirement of the sample set),
rows land in the store, and a re-run resumes without rendering anything again."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import pytest

from prism_fast.dataset.bundled import bundled_dataset_path
from prism_fast.dataset.loader import load_dataset
from prism_fast.store import ResultsStore


@pytest.mark.timeout(3000)  # the shared fixture renders, audits and scores all 48 samples on first use
def test_every_bundled_reference_answer_renders(reference_run):
    opts, summary = reference_run
    tasks = load_dataset(bundled_dataset_path()).tasks
    rows = {r["id"]: r for r in ResultsStore(opts.run_dir).read("exec").to_pylist()}
    assert set(rows) == {t.id for t in tasks}
    failed = {i: (r["error"] or "")[-300:] for i, r in rows.items() if not r["success"]}
    assert not failed, f"reference answers that do not render: {json.dumps(failed, indent=1)}"
    for r in rows.values():
        assert r["status"] == "ok" and r["exit_status"] == 0 and r["cpu_s"] > 0 and r["peak_rss_mb"] > 0
        assert r["tex_cache"] == "on" and r["tex_format"] in ("on", "not_ready"), \
            (r["id"], r["tex_cache"], r["tex_format"])
    # a fresh runs_root: the head start renders its first samples before the driver has built the format
    # (pipeline/headstart.py, rows say not_ready), every other render uses it
    early = [i for i, r in rows.items() if r["tex_format"] == "not_ready"]
    assert len(early) < len(rows) // 4 and all(rows[i]["tex_format_compiles"] == 0 for i in early), early
    # the MathTex of the EN answers compiled from the LaTeX format (the driver's, execute/texformat.py)
    assert sum(r["tex_format_compiles"] for r in rows.values()) > 20
    assert all(r["tex_format_fallbacks"] == 0 for r in rows.values())  # (a forked child found its own temp dir)
    groups = {g["lang"]: g for g in summary["groups"]}
    assert groups["en"]["exec_pct"] == 100.0 and groups["zh"]["exec_pct"] == 100.0


def test_videos_are_ql_854x480_at_15fps(reference_run):
    opts, _ = reference_run
    rows = ResultsStore(opts.run_dir).read("exec").to_pylist()
    # PADVC is off by default: no render recorded text boxes (execute.text_boxes null: only where PADVC reads them)
    assert opts.render.text_boxes is False
    videos = {Path(r["video_path"]).parent for r in rows if r["video_path"]}
    assert videos and not [p for d in videos for p in d.glob("*.textboxes.json")]
    for r in rows[:: max(1, len(rows) // 6)]:
        cap = cv2.VideoCapture(r["video_path"])
        try:
            assert (cap.get(cv2.CAP_PROP_FRAME_WIDTH), cap.get(cv2.CAP_PROP_FRAME_HEIGHT)) == (854, 480)
            assert cap.get(cv2.CAP_PROP_FPS) == 15
            assert cap.get(cv2.CAP_PROP_FRAME_COUNT) > 15
        finally:
            cap.release()


def test_rerun_resumes_without_new_rows(reference_run):
    from prism_fast.pipeline.run import run_eval

    opts, first = reference_run
    store = ResultsStore(opts.run_dir)
    before = {s: len(store.part_files(s)) for s in ("tasks", "exec")}
    second = run_eval(opts)
    assert {s: len(store.part_files(s)) for s in ("tasks", "exec")} == before
    assert second["groups"] == first["groups"]
    manifest = json.loads((opts.run_dir / "run.json").read_text())
    assert manifest["profile"] == "reference" and manifest["tasks"] == len(load_dataset(bundled_dataset_path()).tasks)


def test_bundled_jsonl_matches_its_sources():
    from prism_fast.dataset.bundled import BUNDLED_JSONL, build_records, render_jsonl

    assert BUNDLED_JSONL.read_text(encoding="utf-8") == render_jsonl(build_records()), (
        "prism_sample.jsonl is stale: run python -m prism_fast.dataset.bundled")


def test_every_bundled_reference_answer_passes_the_spatial_audit(reference_run):
    """The reference answers were written to a clean layout: the auditor (reference profile) finds no
    overlap, no out-of-bounds and no leak in any audited segment."""
    opts, summary = reference_run
    rows = ResultsStore(opts.run_dir).read("audit").to_pylist()
    assert len(rows) == len(load_dataset(bundled_dataset_path()).tasks)
    flagged = {r["id"]: (r["audit_status"], r["error_msg"], r["visual_issue_breakdown"]) for r in rows
               if r["visual_structure_pass"] != 1}
    assert not flagged, flagged
    assert all(r["audit_success"] == 1 and r["segment_count"] >= 1 for r in rows)
    assert all(g["spatial_pct"] == 100.0 for g in summary["groups"])


@pytest.mark.timeout(3000)
def test_samples_the_render_could_not_audit_are_audited_by_the_render_actor(reference_run, tmp_path):
    """One-pass ineligible samples get their separate audit right after their render, in the render actor
    (no audit-stage barrier); the row equals an audit-only run of the same script."""
    from prism_fast.audit import audit_one
    from prism_fast.pipeline.run import model_output_dir

    opts, _ = reference_run
    store = ResultsStore(opts.run_dir)
    ex = {r["id"]: r for r in store.read("exec").to_pylist()}
    au = {r["id"]: r for r in store.read("audit").to_pylist()}
    separate = sorted((r["wall_s"], sid) for sid, r in ex.items() if r["onepass"] != "shared")
    assert separate, "the bundled set has scenes with updaters, which the render cannot audit"
    shared = [sid for sid, r in ex.items() if r["onepass"] == "shared"]
    assert len(shared) > len(separate), "most bundled scenes share their render with the audit"
    lost = {sid: r["onepass_reasons"] for sid, r in ex.items() if "no_side_file" in (r["onepass_reasons"] or "")}
    assert not lost, lost  # every observed render left its observer's result (execute/observers.py)
    pending = model_output_dir(opts) / "audit" / "onepass"
    for _, sid in separate:
        assert au[sid]["audit_pass"] == "separate"
        doc = json.loads((pending / f"{sid}.json").read_text(encoding="utf-8"))
        assert doc["row"]["audit_pass"] == "separate"  # left by the render actor, not run by the audit stage
    sid = separate[0][1]  # the cheapest one: audit it alone and compare
    tasks = {t.id: t for t in load_dataset(bundled_dataset_path()).tasks}
    alone = audit_one(sid, tasks[sid].reference_answer, tmp_path, opts.audit_cfg, opts.profile)
    for key in ("audit_success", "segment_count", "visual_structure_rate", "visual_structure_pass",
                "visual_issue_total", "error_msg", "status"):
        assert au[sid][key] == alone[key], key
    for key in ("visual_issue_breakdown", "visual_audit_report"):
        assert json.loads(au[sid][key]) == json.loads(json.dumps(alone[key])), key


def test_td_and_text_expand_rows_for_every_task(reference_run):
    opts, _ = reference_run
    store = ResultsStore(opts.run_dir)
    n = len(load_dataset(bundled_dataset_path()).tasks)
    td = store.read("td").to_pylist()
    assert len(td) == n and all(r["status"] == "ok" and r["td_raw"] > 0 for r in td)
    assert all(r["decoder"] in ("decord", "opencv", "pyav") for r in td)
    te = store.read("text_expand").to_pylist()
    assert len(te) == n and all(r["status"] == "ok" and r["prompt_token_count"] > 0 for r in te)


def test_td_rows_from_the_render_workers_decode_are_the_td_actors_rows(reference_run):
    """A CPU run: each render worker decodes the video it just wrote (metrics/td_store.py) and the TD stage builds
    the rows in the driver; every row must equal what the TD stage's actor makes of the same sample."""
    from prism_fast.metrics import td_store
    from prism_fast.metrics.stage import td_base_row, td_finish_row
    from prism_fast.metrics.td import score_td_row
    from prism_fast.pipeline.options import model_output_dir

    opts, _ = reference_run
    store = ResultsStore(opts.run_dir)
    exec_rows, audit_rows = store.rows_by_key("exec", opts.model_name), store.rows_by_key("audit", opts.model_name)
    td_rows = store.rows_by_key("td", opts.model_name)
    settings = td_store.td_settings(opts.td_tau, opts.profile, opts.decoder, opts.metrics_device)
    assert td_rows and opts.metrics_device == "cpu"
    stored = 0
    for (lang, sid), row in td_rows.items():
        base = td_base_row(sid, exec_rows[(lang, sid)], audit_rows.get((lang, sid), {}))
        # (the samples the driver's head start rendered have none: the driver never decodes a video)
        stored += td_store.load_td_raw(model_output_dir(opts), sid, base["video_path"], settings) is not None
        actor = score_td_row(base, opts.td_params[lang], profile=opts.profile, pixel_threshold=opts.td_tau,
                             decoder=opts.decoder, device=opts.metrics_device)
        actor = td_finish_row({**actor, "pixel_threshold": opts.td_tau, "device": opts.metrics_device})
        assert {k: row[k] for k in actor} == actor, sid
    assert stored >= len(td_rows) // 2  # most from the render workers' own decode
