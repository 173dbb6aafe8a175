"""Fast path vs full-fidelity path on the bundled sample set: the audit reports must be byte-identical.

For every bundled task (48: 24 EN + 24 ZH) the reference answer is audited twice under the reference
profile: once with the fast path (``AuditConfig()``: no raster, no PNG, no play hashing, per-frame updates
kept) and once in the authors' rendering mode (``AuditConfig(full_fidelity=True)``: 1080p60 Cairo raster
of every frame, every frame PNG-encoded). The two ``audit_report.json`` files are compared byte for byte,
and so are the row fields ``audit_success``, ``error_msg``, ``segment_count`` and ``visual_issue_total``.

    nice -n 10 .venv/bin/python bench/audit_identity.py [--ids SAMPLE-EN-000003 ...] [--limit N]
        [--workers 1] [--out audit_identity.json]

Exit code 1 when any report differs. The CI test (tests/audit/test_audit_identity.py) runs a fixed subset.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from prism_fast.audit.config import AuditConfig  # noqa: E402
from prism_fast.audit.runner import audit_one  # noqa: E402
from prism_fast.dataset.bundled import bundled_dataset_path  # noqa: E402
from prism_fast.dataset.loader import load_dataset  # noqa: E402

ROW_FIELDS = ("audit_success", "error_msg", "segment_count", "visual_issue_total", "visual_structure_pass")


def compare_one(sample_id: str, script: str, work: Path) -> dict:
    """Audit ``script`` in both modes under ``work``; returns the comparison record."""
    out = {"id": sample_id}
    reports = {}
    rows = {}
    for mode, cfg in (("fast", AuditConfig()), ("full", AuditConfig(full_fidelity=True))):
        t0 = time.perf_counter()
        row = audit_one(sample_id, script, work / mode, cfg)
        out[f"{mode}_sec"] = round(time.perf_counter() - t0, 2)
        path = work / mode / "audits" / sample_id / "audit_report.json"
        reports[mode] = path.read_bytes() if path.exists() else None
        rows[mode] = {k: row.get(k) for k in ROW_FIELDS}
    out["report_identical"] = reports["fast"] is not None and reports["fast"] == reports["full"]
    out["row_identical"] = rows["fast"] == rows["full"]
    out["fast_row"] = rows["fast"]
    if not out["row_identical"]:
        out["full_row"] = rows["full"]
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--ids", nargs="*", default=None, help="only these task ids")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--workers", type=int, default=1, help="samples audited in parallel (each runs both modes)")
    ap.add_argument("--work-dir", type=Path, default=None, help="keep the audit dirs here (default: a temp dir)")
    ap.add_argument("--out", type=Path, default=None, help="write the JSON summary here")
    args = ap.parse_args(argv)

    tasks = load_dataset(bundled_dataset_path()).tasks
    if args.ids:
        wanted = set(args.ids)
        tasks = [t for t in tasks if t.id in wanted]
    if args.limit:
        tasks = tasks[: args.limit]
    tmp = None
    if args.work_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="audit_identity_")
        work = Path(tmp.name)
    else:
        work = args.work_dir
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=max(1, args.workers)) as pool:
        futures = [pool.submit(compare_one, t.id, t.reference_answer, work) for t in tasks]
        results = []
        for fut in futures:
            rec = fut.result()
            results.append(rec)
            print(f"{rec['id']}: fast {rec['fast_sec']:7.1f}s  full {rec['full_sec']:7.1f}s  "
                  f"report {'identical' if rec['report_identical'] else 'DIFFERENT'}  "
                  f"row {'identical' if rec['row_identical'] else 'DIFFERENT'}  {rec['fast_row']}", flush=True)
    wall = time.perf_counter() - t0
    summary = {
        "host": platform.node(), "python": sys.version.split()[0], "samples": len(results),
        "reports_identical": sum(r["report_identical"] for r in results),
        "rows_identical": sum(r["row_identical"] for r in results),
        "fast_sec_total": round(sum(r["fast_sec"] for r in results), 1),
        "full_sec_total": round(sum(r["full_sec"] for r in results), 1),
        "wall_sec": round(wall, 1), "workers": args.workers, "details": results,
    }
    print(json.dumps({k: v for k, v in summary.items() if k != "details"}, indent=2))
    if args.out:
        args.out.write_text(json.dumps(summary, indent=2, ensure_ascii=False), encoding="utf-8")
    if tmp is not None:
        tmp.cleanup()
    ok = summary["reports_identical"] == summary["rows_identical"] == len(results)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
