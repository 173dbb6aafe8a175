"""One-pass coverage on a directory of scripts: Manim executions per sample before -> after the precise rules of
``prism_fast/audit/onepass_rules.py`` (issue 19 deliverable 2), and report identity for every newly shared one.

For each script (the open corpus of docs/parity.md, or any directory of ``<id>.py`` files, the scene class
taken from ``manifest.jsonl`` when present):

1. the static rule before (``onepass_rules`` switched off: the name-based rule) and after;
2. a one-pass render (prefork worker preloading ``onepass.PRELOAD``, ``onepass.render_with_onepass`` with
   ``AuditConfig().to_dict()``, the pipeline's call) when the script is eligible after -- statically
   eligible-before scripts contain no approved updater, so their run-time outcome is the same under both rules
   and this one render serves both columns;
3. for every script shared after but not before: the separate audit (``audit_one``, the audit-only fast path
   the pipeline runs otherwise), whose ``audit_report.json`` must equal the one-pass report byte for byte.

4. for every failed render the one-pass render kept (issue 19: a failed render whose printed error is the plain
   render's is not repeated; its audit is salvaged from it when the exception is the audit's too): a plain
   render of the same script, whose row must equal the kept one but for timings and the per-render temp dir.

Executions per sample, from the rows: the render's ``manim_executions`` (1, or 2 for a failed render rendered
again without observers) plus 1 for a separate audit. The "before" column: statically ineligible under the
name-based rule 2, a failed render 3 (every failed one-pass render was rendered again then), else as after.

    nice -n 10 .venv/bin/python bench/onepass_coverage.py --scripts CORPUS_DIR [--sample 60 --seed 19]
        [--exclude ID ...] [--out coverage.json]

Exit code 1 when a newly shared report differs from its separate audit, or a kept failed row from the plain
render's.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from prism_fast.audit import onepass, onepass_rules, onepass_store  # noqa: E402
from prism_fast.audit.config import AuditConfig  # noqa: E402
from prism_fast.audit.runner import audit_one  # noqa: E402
from prism_fast.profile import REFERENCE  # noqa: E402

EXECUTIONS = {"shared": 1, "separate": 2, "ineligible": 2, "fallback": 3}
_TIMING = {"runtime_sec", "wall_s", "cpu_s", "peak_rss_mb", "written_at_ns", "onepass", "onepass_reasons",
           "manim_executions"}
_TMP = re.compile(r"render_[\w.-]+?_[a-z0-9_]{8}(?=[/\s│]|$)")  # the per-render temp dir's name


def static_before(script: str) -> list[str]:
    """The name-based rule (before issue 19): the same walk with no construct decided by onepass_rules."""
    real = onepass_rules.analyse
    onepass_rules.analyse = lambda tree: onepass_rules.Analysis()
    try:
        return onepass.static_reasons(script)
    finally:
        onepass_rules.analyse = real


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--scripts", type=Path, required=True)
    ap.add_argument("--sample", type=int, default=None, help="a fixed random subset of this many scripts")
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--exclude", nargs="*", default=[], help="ids left out (e.g. the parity bench's heavy ones)")
    ap.add_argument("--ids", nargs="*", default=None, help="only these ids")
    ap.add_argument("--work-dir", type=Path, default=None)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args(argv)

    from prism_fast.execute.render import RenderConfig, prefork_worker, render_one

    ids = sorted(p.stem for p in args.scripts.glob("*.py") if p.stem not in set(args.exclude))
    if args.ids:
        ids = [i for i in ids if i in set(args.ids)]
    if args.sample:
        ids = sorted(random.Random(args.seed).sample(ids, min(args.sample, len(ids))))
    tmp = None
    if args.work_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="onepass_cov_")
        work = Path(tmp.name)
    else:
        work = args.work_dir
    acfg = AuditConfig().to_dict()
    cfg = RenderConfig()
    worker = prefork_worker(cfg, preload=onepass.PRELOAD)
    records = []
    t0 = time.perf_counter()
    try:
        for sid in ids:
            script = (args.scripts / f"{sid}.py").read_text(encoding="utf-8")
            rec = {"id": sid, "before_static": static_before(script), "after_static": onepass.static_reasons(script)}
            t1 = time.perf_counter()
            row = onepass.render_with_onepass(sid, script, work / "render", cfg, REFERENCE, None, worker.run, acfg)
            rec["render_sec"] = round(time.perf_counter() - t1, 2)
            rec["success"] = bool(row.get("success"))
            rec["onepass"] = row.get("onepass")
            rec["onepass_reasons"] = row.get("onepass_reasons")
            after = rec["onepass"] if rec["onepass"] in EXECUTIONS else "separate"
            # before: statically ineligible -> 2; a failed render -> 3; else the same run-time outcome
            before = "ineligible" if rec["before_static"] else ("fallback" if not rec["success"] else after)
            rec["before"], rec["after"] = before, after
            rec["exec_before"] = EXECUTIONS[before]
            rec["exec_after"] = int(row.get("manim_executions") or 1) + (0 if after == "shared" else 1)
            if not rec["success"] and row.get("onepass") in ("shared", "separate"):
                plain = render_one(sid, script, work / "plain", cfg, REFERENCE, None, worker.run)
                norm = lambda v: _TMP.sub("@", v) if isinstance(v, str) else v  # noqa: E731
                rec["failed_row_diff"] = sorted(k for k in plain if k not in _TIMING
                                                and norm(plain.get(k)) != norm(row.get(k)))
            if after == "shared" and (before != "shared" or not rec["success"] or row["_onepass_audit"]["report"] == {}):
                # newly shared, a failed render's salvage, or {} (every scene unhooked): the audit-only run's
                shared = row["_onepass_audit"]
                t1 = time.perf_counter()
                audit_one(sid, script, work / "separate", AuditConfig())
                rec["audit_sec"] = round(time.perf_counter() - t1, 2)
                path = work / "separate" / "audits" / sid / "audit_report.json"
                separate = path.read_text(encoding="utf-8") if path.exists() else None
                rec["report_identical"] = separate == onepass_store.report_text(shared["report"])
            records.append(rec)
            print(f"{sid}: {before} -> {after}  {rec.get('report_identical', '')} {rec.get('failed_row_diff', '')} "
                  f"{rec['onepass_reasons'] if after != 'shared' else ''}", flush=True)
    finally:
        worker.close()
    n = len(records)
    summary = {
        "scripts": n, "wall_sec": round(time.perf_counter() - t0, 1),
        "static_eligible_before": sum(not r["before_static"] for r in records),
        "static_eligible_after": sum(not r["after_static"] for r in records),
        "shared_before": sum(r["before"] == "shared" for r in records),
        "shared_after": sum(r["after"] == "shared" for r in records),
        "executions_per_sample_before": round(sum(r["exec_before"] for r in records) / max(n, 1), 3),
        "executions_per_sample_after": round(sum(r["exec_after"] for r in records) / max(n, 1), 3),
        "newly_shared": sum("report_identical" in r for r in records),
        "newly_shared_identical": sum(bool(r.get("report_identical")) for r in records),
        "failed_renders": sum(not r["success"] for r in records),
        "failed_renders_kept": sum("failed_row_diff" in r for r in records),
        "failed_renders_kept_identical": sum(r.get("failed_row_diff") == [] for r in records),
        "executions_of_failed_renders": sum(r["exec_after"] for r in records if not r["success"]),
    }
    print(json.dumps(summary, indent=2))
    if args.out:
        args.out.write_text(json.dumps({**summary, "details": records}, indent=2, ensure_ascii=False),
                            encoding="utf-8")
    if tmp is not None:
        tmp.cleanup()
    ok = (summary["newly_shared"] == summary["newly_shared_identical"]
          and summary["failed_renders_kept"] == summary["failed_renders_kept_identical"])
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
