"""Spatial audit STAGE cost per sample on the bundled reference answers: ours vs the authors' method.

    .venv/bin/python -m bench.spatial_stage_bench [--limit N | --ids ID,ID,...] [--json out.json]

Per sample, one at a time, same machine, one run:

* (r) the -ql render through the prefork worker, plain, and (o) the same render with the one-pass audit
  (``onepass.render_with_onepass(..., AuditConfig().to_dict())``), alternating which goes first (ABAB). The mp4s must
  be byte-identical.
* (f) our audit-only fast path (``audit_one`` with ``AuditConfig()``): the audit of samples the one-pass rule
  sends to the separate path, and the parity reference for shared ones (their one-pass report must be
  byte-identical to it).
* (b) the authors' method: ``AuditConfig(full_fidelity=True, geometry_backend="matplotlib")`` -- 1080p60 Cairo
  raster and a PNG of every frame, play hashing, frame copies, one matplotlib call per bbox-touching pair, the
  script executed again after the render.

Our audit stage cost of a sample = the observers' own time inside the render (``audit_sec``: install, guards,
snapshots and geometry, report) when shared, else (f)'s wall time. The baseline's = (b)'s wall time. The
one-pass render's extra wall time over the plain render, (o) - (r), is printed too (noisy under load). Manim
executions per sample: ours = 1 when shared, 2 otherwise (3 if a one-pass render failed); the authors' = 2.
Finally the 288-atom grid geometry time (bench.audit_bench.geometry_bench). Exit status 1 on any mismatch.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from prism_fast.audit.config import AuditConfig  # noqa: E402
from prism_fast.audit.onepass import render_with_onepass  # noqa: E402
from prism_fast.audit.onepass_store import report_text  # noqa: E402
from prism_fast.audit.runner import audit_one  # noqa: E402
from prism_fast.execute.render import RenderConfig, prefork_worker, render_one  # noqa: E402
from prism_fast.profile import REFERENCE  # noqa: E402


def _tasks(args):
    from prism_fast.dataset.bundled import bundled_dataset_path
    from prism_fast.dataset.loader import load_dataset

    tasks = load_dataset(bundled_dataset_path()).tasks
    if args.ids:
        by_id = {t.id: t for t in tasks}
        tasks = [by_id[i.strip()] for i in args.ids.split(",") if i.strip()]
    if args.limit is not None:
        tasks = tasks[:args.limit]
    return tasks


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--ids", default=None, help="comma-separated sample ids (default: all 48)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--skip-baseline", action="store_true")
    args = ap.parse_args()
    tasks = _tasks(args)
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="spatial_stage_bench_"))
    cfg = RenderConfig(tmp_root=str(work / "tmp"))
    acfg = AuditConfig()
    base_cfg = AuditConfig(full_fidelity=True, geometry_backend="matplotlib")
    problems, rows = [], []
    t_all = time.perf_counter()
    worker = prefork_worker(cfg)
    try:
        for i, task in enumerate(tasks):
            sid, script = task.id, task.reference_answer
            row = {"id": sid}
            order = ("plain", "onepass") if i % 2 == 0 else ("onepass", "plain")
            renders = {}
            for mode in order:
                t0 = time.perf_counter()
                r = (render_with_onepass(sid, script, work / mode, cfg, REFERENCE, None, worker.run, acfg.to_dict())
                     if mode == "onepass" else render_one(sid, script, work / mode, cfg, runner=worker.run))
                row[f"{mode}_render_s"] = round(time.perf_counter() - t0, 3)
                renders[mode] = r
            o, p = renders["onepass"], renders["plain"]
            shared = o.pop("_onepass_audit", None)
            row.update(onepass=o["onepass"], reasons=o["onepass_reasons"], render_ok=bool(o["success"]))
            if not (o["success"] and p["success"]):
                problems.append(f"{sid}: render failed")
            elif Path(o["video_path"]).read_bytes() != Path(p["video_path"]).read_bytes():
                problems.append(f"{sid}: one-pass mp4 differs from the plain render's")
            row["mp4_identical"] = bool(o["success"] and p["success"]) and (
                Path(o["video_path"]).read_bytes() == Path(p["video_path"]).read_bytes())
            fast = audit_one(sid, script, work / "fast", acfg)
            fast_text = (work / "fast" / "audits" / sid / "audit_report.json").read_text(encoding="utf-8")
            row["fast_audit_s"] = round(fast["runtime_sec"], 3)
            if shared is not None:
                row["report_identical"] = report_text(shared["report"]) == fast_text
                if not row["report_identical"]:
                    problems.append(f"{sid}: one-pass report differs from the audit-only report")
                row["ours_audit_s"] = round(shared["audit_sec"], 3)
                row["manim_executions_ours"] = 1
            else:
                row["ours_audit_s"] = row["fast_audit_s"]
                row["manim_executions_ours"] = o.get("manim_executions", 1) + 1
            row["onepass_extra_render_s"] = round(row["onepass_render_s"] - row["plain_render_s"], 3)
            if not args.skip_baseline:
                b = audit_one(sid, script, work / "baseline", base_cfg)
                row["baseline_audit_s"] = round(b["runtime_sec"], 3)
                base_text = (work / "baseline" / "audits" / sid / "audit_report.json").read_text(encoding="utf-8")
                row["baseline_report_identical"] = base_text == fast_text
                if not row["baseline_report_identical"]:
                    problems.append(f"{sid}: baseline report differs from ours")
                row["speedup"] = round(row["baseline_audit_s"] / max(row["ours_audit_s"], 1e-9), 1)
            rows.append(row)
            print(json.dumps(row, ensure_ascii=False), flush=True)
            for sub in ("plain", "onepass", "fast", "baseline"):
                shutil.rmtree(work / sub / "videos", ignore_errors=True)
    finally:
        worker.close()
        shutil.rmtree(work, ignore_errors=True)
    from bench.audit_bench import geometry_bench

    geom = geometry_bench()
    ours = sum(r["ours_audit_s"] for r in rows)
    summary = {
        "samples": len(rows), "shared": sum(r["onepass"] == "shared" for r in rows),
        "ours_audit_stage_s": round(ours, 2),
        "manim_executions_per_sample_ours": round(sum(r["manim_executions_ours"] for r in rows) / max(1, len(rows)), 3),
        "manim_executions_per_sample_authors": 2,
        "onepass_extra_render_s_total": round(sum(r["onepass_extra_render_s"] for r in rows), 2),
        "grid_288_atoms_geometry_s": geom,
        "load_before": [round(x, 2) for x in load_before], "load_after": [round(x, 2) for x in os.getloadavg()],
        "wall_s": round(time.perf_counter() - t_all, 1), "problems": problems,
    }
    if not args.skip_baseline:
        base = sum(r["baseline_audit_s"] for r in rows)
        summary.update(baseline_audit_stage_s=round(base, 2), ratio=round(base / max(ours, 1e-9), 1))
    print(json.dumps(summary, indent=2))
    if not args.skip_baseline:
        print(f"audit stage: authors' method {summary['baseline_audit_stage_s']} s vs ours {summary['ours_audit_stage_s']}"
              f" s over {len(rows)} samples -> {summary['ratio']}x (target >= 10x)")
    print(f"Manim executions per sample: ours {summary['manim_executions_per_sample_ours']}, authors' 2")
    print(f"288-atom grid geometry (s): {geom}")
    if args.json:
        args.json.write_text(json.dumps({"rows": rows, "summary": summary}, indent=2, ensure_ascii=False))
    for p in problems:
        print("PROBLEM:", p, file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
