"""TD of whole videos, decode included: ``compute_td_raw`` per decoder vs the authors' per-frame TD (the oracle:
``cv2.VideoCapture`` + ``cvtColor`` + ``absdiff`` per frame). Same files, one process, each timed ``--repeats``
times (best of), after checking that every path gives the oracle's TD_raw exactly.

    .venv/bin/python -m bench.td_decode_bench --videos '<run_dir>/models/*/videos/*.mp4' [--repeats 3]
"""

from __future__ import annotations

import argparse
import glob
import sys
import time

from bench.oracle import td_raw_video
from prism_fast.metrics.td import compute_td_raw

PATHS = ("opencv", "decord", "pyav")


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--videos", required=True)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    videos = sorted(glob.glob(args.videos))
    if not videos:
        raise SystemExit(f"no video matches {args.videos}")
    totals = {"oracle": 0.0, **{p: 0.0 for p in PATHS}}
    for v in videos:
        ref = td_raw_video(v)
        for p in PATHS:
            got = compute_td_raw(v, decoder=p)
            if got.td_raw != ref:
                print(f"MISMATCH {v} {p}: {got.td_raw} vs {ref}", file=sys.stderr)
                return 1
        totals["oracle"] += _best(lambda: td_raw_video(v), args.repeats)
        for p in PATHS:
            totals[p] += _best(lambda: compute_td_raw(v, decoder=p), args.repeats)
    print(f"{len(videos)} videos, TD_raw identical on every path; best of {args.repeats}, seconds per video:")
    for name, total in totals.items():
        label = "oracle (authors' per-frame TD)" if name == "oracle" else f"compute_td_raw decoder={name}"
        print(f"  {label:40s} {total / len(videos):.3f}  ({totals['oracle'] / total:.2f}x the oracle's speed)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
