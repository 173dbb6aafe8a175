"""What the one-pass audit's observers cost a render (issue 19 item 6): each script of a directory rendered plainly
and with the one-pass observers, one after the other in the same prefork worker (the pipeline's render path,
``onepass.render_with_onepass`` with ``AuditConfig().to_dict()``), CPU-seconds of each side side by side.

    nice -n 10 .venv/bin/python bench/onepass_cost.py --scripts CORPUS_DIR [--limit N] [--json out.json]

Printed: totals per one-pass outcome (shared / separate / ineligible / fallback: a fallback's one-pass side is
two renders), the overall ratio one-pass / plain for the renders the audit shared, and the scripts with the
largest difference. Benchmark, not a test: the CPU-seconds move with the machine's load (run it on a quiet one).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from prism_fast.audit import onepass  # noqa: E402
from prism_fast.audit.config import AuditConfig  # noqa: E402
from prism_fast.profile import REFERENCE  # noqa: E402


def measure(scripts: list[Path]) -> list[dict]:
    from prism_fast.execute.render import RenderConfig, prefork_worker, render_one

    cfg = RenderConfig()
    acfg = AuditConfig().to_dict()
    worker = prefork_worker(cfg, preload=onepass.PRELOAD)
    out = []
    try:
        for path in scripts:
            sid, text = path.stem, path.read_text(encoding="utf-8", errors="replace")
            with tempfile.TemporaryDirectory(prefix="onepass_cost_") as tmp:
                t0 = time.perf_counter()
                plain = render_one(sid, text, Path(tmp) / "plain", cfg, REFERENCE, None, worker.run)
                t1 = time.perf_counter()
                one = onepass.render_with_onepass(sid, text, Path(tmp) / "onepass", cfg, REFERENCE, None, worker.run,
                                                  acfg)
                t2 = time.perf_counter()
            audit = one.pop("_onepass_audit", None) or {}
            out.append({"id": sid, "success": plain["success"], "plain_cpu_s": plain.get("cpu_s") or 0.0,
                        "onepass_cpu_s": one.get("cpu_s") or 0.0, "plain_wall_s": t1 - t0, "onepass_wall_s": t2 - t1,
                        "onepass": one.get("onepass"), "reasons": one.get("onepass_reasons") or [],
                        "audit_sec": audit.get("audit_sec")})
            print(f"{sid}: plain {out[-1]['plain_cpu_s']:.2f} CPU-s, one-pass {out[-1]['onepass_cpu_s']:.2f} "
                  f"({out[-1]['onepass']})", file=sys.stderr, flush=True)
    finally:
        worker.close()
    return out


def report(rows: list[dict]) -> str:
    groups: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        groups[r["onepass"] or "?"].append(r)
    lines = ["| one-pass outcome | scripts | plain CPU-s | one-pass CPU-s | ratio |", "|---|---|---|---|---|"]
    for name in sorted(groups):
        g = groups[name]
        p, o = sum(r["plain_cpu_s"] for r in g), sum(r["onepass_cpu_s"] for r in g)
        lines.append(f"| {name} | {len(g)} | {p:.1f} | {o:.1f} | {o / p:.3f} |" if p else f"| {name} | {len(g)} | "
                     f"{p:.1f} | {o:.1f} | - |")
    p, o = sum(r["plain_cpu_s"] for r in rows), sum(r["onepass_cpu_s"] for r in rows)
    lines.append(f"| all | {len(rows)} | {p:.1f} | {o:.1f} | {o / p:.3f} |" if p else "| all | 0 | - | - | - |")
    lines.append("")
    lines.append("largest one-pass - plain differences (CPU-s):")
    for r in sorted(rows, key=lambda r: r["plain_cpu_s"] - r["onepass_cpu_s"])[:8]:
        lines.append(f"  {r['id']}: {r['plain_cpu_s']:.2f} -> {r['onepass_cpu_s']:.2f} ({r['onepass']}; "
                     f"audit {r['audit_sec'] if r['audit_sec'] is not None else '-'} s)")
    return "\n".join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scripts", type=Path, required=True, help="a directory of <id>.py scripts")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    scripts = sorted(args.scripts.glob("*.py"))[:args.limit]
    if not scripts:
        ap.error(f"no .py scripts in {args.scripts}")
    rows = measure(scripts)
    print(report(rows))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
