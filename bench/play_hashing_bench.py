"""Render with and without manim's per-play hashing (``execute.play_hashing``) on the same scripts: CPU cost
and byte equality of every video. One run, one render at a time, the CLI backend (a cold ``manim`` process,
as the authors run it), alternating the order per sample so neither side always runs first.

    .venv/bin/python -m bench.play_hashing_bench [--limit N] [--ids ID,...] [--json out.json]

Prints per sample CPU-s (user+sys of the render tree) both ways and the ratio; exits 1 if any sample's
success, error text or video bytes differ.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import statistics
import sys
import tempfile
from pathlib import Path

from prism_fast.dataset.bundled import SAMPLES_DIR
from prism_fast.execute.render import RenderConfig, render_one


def _scripts(ids: list[str] | None, limit: int | None) -> list[tuple[str, str]]:
    files = sorted(SAMPLES_DIR.glob("*/*.py"))
    items = [(f.stem, f.read_text(encoding="utf-8")) for f in files]
    if ids:
        wanted = set(ids)
        items = [i for i in items if i[0] in wanted]
    return items[:limit] if limit else items


def _one(work: Path, sid: str, script: str, hashing: bool) -> dict:
    out = work / ("hashed" if hashing else "unhashed")
    cfg = RenderConfig(timeout_s=600, tmp_root=str(work / "tmp"), play_hashing=hashing)
    row = render_one(sid, script, out, cfg)
    video = out / "videos" / f"{sid}.mp4"
    error = re.sub(r"[\s│]", "", row["error"] or "")
    return {"success": row["success"], "cpu_s": row["cpu_s"], "wall_s": row["wall_s"],
            "error": re.sub(rf"render_{re.escape(sid)}_[a-z0-9_]{{8}}", "TMPDIR", error),
            "sha256": hashlib.sha256(video.read_bytes()).hexdigest() if video.exists() else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ids", default=None)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    items = _scripts(args.ids.split(",") if args.ids else None, args.limit)
    results, problems = [], []
    with tempfile.TemporaryDirectory(prefix="play_hashing_bench_") as tmp:
        for n, (sid, script) in enumerate(items):
            order = (True, False) if n % 2 == 0 else (False, True)
            got = {h: _one(Path(tmp) / sid, sid, script, h) for h in order}
            on, off = got[True], got[False]
            same = all(on[k] == off[k] for k in ("success", "error", "sha256"))
            if not same:
                problems.append(sid)
            results.append({"id": sid, "hashing": on, "no_hashing": off, "identical": same})
            print(f"{sid}: success {on['success']}/{off['success']}  cpu {on['cpu_s']:.2f} s -> {off['cpu_s']:.2f} s "
                  f"({on['cpu_s'] / max(off['cpu_s'], 1e-9):.2f}x)  identical={same}", file=sys.stderr, flush=True)
    cpu_on = [r["hashing"]["cpu_s"] for r in results]
    cpu_off = [r["no_hashing"]["cpu_s"] for r in results]
    summary = {"samples": len(results), "identical": len(results) - len(problems), "problems": problems,
               "cpu_s_hashing_total": sum(cpu_on), "cpu_s_no_hashing_total": sum(cpu_off),
               "ratio_total": sum(cpu_on) / max(sum(cpu_off), 1e-9),
               "ratio_median": statistics.median(a / max(b, 1e-9) for a, b in zip(cpu_on, cpu_off)) if results else None}
    print(json.dumps(summary, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps({"summary": summary, "samples": results}, indent=2), encoding="utf-8")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
