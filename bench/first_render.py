"""From ``prism-fast`` to the first render (issue #19 item 4: ≤ 5 s), with the Exec stage's head start
(``execute.head_start=true``, pipeline/headstart.py) against without it, interleaved, side by side.

    .venv/bin/python -m bench.first_render [--runs 3] [--limit 1] [--cold] [--json out.json] [-- EXTRA_OVERRIDES]

Each run is the real command (``.venv/bin/prism-fast lang=en dataset.limit=N execute.cache.enabled=false …``) in a
fresh process; "first render" is when the first sample's scratch directory (``<temp>/prism_fast-<uid>/run_*/render_*``)
appears, polled every 20 ms; "end" is the command's exit. Warm (default): every run of one side shares a runs_root,
so from the second run on the LaTeX format is the one published by the first (execute/texformat.py), as for a user's
second run; the first run of each side is an untimed warm-up. ``--cold``: a fresh runs_root per run (no TeX cache,
no published format: a user's very first run). Benchmark, not a test: run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRATCH = os.path.join(tempfile.gettempdir(), f"prism_fast-{os.geteuid()}", "run_*", "render_*")  # run roots


def one_run(runs_root: Path, run_name: str, head_start: bool, limit: int, extra: list[str]) -> dict:
    cmd = [str(ROOT / ".venv" / "bin" / "prism-fast"), "lang=en", f"dataset.limit={limit}",
           "execute.cache.enabled=false", f"runs_root={runs_root}", f"run_name={run_name}",
           f"execute.head_start={'true' if head_start else 'false'}", *extra]
    before = set(glob.glob(SCRATCH))
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=str(ROOT), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    first = None
    while proc.poll() is None:
        if first is None and set(glob.glob(SCRATCH)) - before:
            first = time.perf_counter() - t0
        time.sleep(0.02)
    end = time.perf_counter() - t0
    err = proc.stderr.read().decode("utf-8", "replace")
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    return {"first_render_s": first, "end_s": end}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3, help="timed runs per side")
    ap.add_argument("--limit", type=int, default=1, help="samples per run (bundled English reference answers)")
    ap.add_argument("--cold", action="store_true", help="a fresh runs_root per run (no published LaTeX format)")
    ap.add_argument("--json", default=None)
    ap.add_argument("extra", nargs="*", help="more Hydra overrides for both sides")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="first_render_"))
    out: dict = {"runs": args.runs, "limit": args.limit, "cold": args.cold, "extra": args.extra,
                 "sides": {"off": [], "on": []}}
    try:
        if not args.cold:  # untimed: fills each side's TeX cache and publishes its format
            for side in ("off", "on"):
                one_run(work / side, "warmup", side == "on", args.limit, args.extra)
        for i in range(args.runs):
            for side in (("off", "on") if i % 2 == 0 else ("on", "off")):
                root = work / (f"{side}{i}" if args.cold else side)
                res = one_run(root, f"r{i}", side == "on", args.limit, args.extra)
                out["sides"][side].append(res)
                print(f"run {i} head_start={side:3s}: first render {res['first_render_s']:.2f} s, "
                      f"end {res['end_s']:.2f} s", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    med = {s: {k: statistics.median(r[k] for r in rs) for k in ("first_render_s", "end_s")}
           for s, rs in out["sides"].items()}
    out["median"] = med
    print(f"\nmedian of {args.runs} ({'cold' if args.cold else 'warm'}), {args.limit} sample(s):")
    print(f"  first render: without {med['off']['first_render_s']:.2f} s, with the head start "
          f"{med['on']['first_render_s']:.2f} s ({med['off']['first_render_s'] / med['on']['first_render_s']:.2f}x)")
    print(f"  end to end  : without {med['off']['end_s']:.2f} s, with {med['on']['end_s']:.2f} s "
          f"({med['off']['end_s'] / med['on']['end_s']:.2f}x)")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
