"""What a render worker pays for its TD_raw on a CPU (issue #19 item 4: no torch where the device is CPU): the
render workers' call (``metrics/td_store.store_td_raw`` → ``compute_td_raw``, OpenCV decode and per-frame signals,
plain-int ratios) as it is now, against the same call with torch and prism_kernels loaded first, as
``metrics/td.py`` and ``video/`` loaded them at import before (commit 83e6e40), each side in its own fresh
interpreter, as a Ray worker starts, side by side.

    .venv/bin/python -m bench.td_worker_cost VIDEO_OR_DIR [...] [--limit N] [--json out.json]

Per side: wall and CPU seconds of the whole child (imports included), its peak RSS, whether torch was loaded, and
every TD_raw (the two sides must agree bit for bit: a PROBLEM line and exit status 1 otherwise; the batched torch
kernels' own equality is tests/video/test_td_store.py's). Videos: mp4 files
or directories searched for them (e.g. a run's ``models/<model>/videos``). Benchmark, not a test: run it on an
otherwise idle machine.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
videos, preload = json.loads(sys.argv[1]), sys.argv[2] == "torch"
if preload:
    import torch, prism_kernels
from prism_fast.metrics.td import compute_td_raw
t_import = time.perf_counter() - t0
out = [compute_td_raw(v, decoder="auto", device="cpu") for v in videos]
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"import_s": t_import, "cpu_s": usage.ru_utime + usage.ru_stime, "rss_mb": usage.ru_maxrss / 1024,
                  "torch": "torch" in sys.modules, "td": [[t.td_raw, t.status] for t in out]}))
"""


def _videos(paths: list[Path], limit: int | None) -> list[str]:
    found: list[str] = []
    for p in paths:
        found += [str(v) for v in sorted(p.rglob("*.mp4"))] if p.is_dir() else [str(p)]
    return found[:limit] if limit else found


def _side(videos: list[str], preload: str) -> dict:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, json.dumps(videos), preload], cwd=ROOT, capture_output=True,
                          text=True, check=True)
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    doc["wall_s"] = time.perf_counter() - t0
    return doc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", type=Path, nargs="+")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    videos = _videos(args.paths, args.limit)
    if not videos:
        print("no mp4 found", file=sys.stderr)
        return 2
    torch_side = _side(videos, "torch")
    cpu_side = _side(videos, "none")
    print(f"{len(videos)} videos, one fresh interpreter per side")
    print("| side | torch loaded | import s | wall s | CPU s | peak RSS MB |")
    print("|---|---|---|---|---|---|")
    for name, d in (("before: torch and prism_kernels loaded", torch_side), ("now: neither loaded", cpu_side)):
        print(f"| {name} | {d['torch']} | {d['import_s']:.2f} | {d['wall_s']:.2f} | {d['cpu_s']:.2f} | "
              f"{d['rss_mb']:.0f} |")
    print(f"now / before: wall {cpu_side['wall_s'] / torch_side['wall_s']:.2f}, "
          f"CPU {cpu_side['cpu_s'] / torch_side['cpu_s']:.2f}, RSS {cpu_side['rss_mb'] / torch_side['rss_mb']:.2f}")
    status = 0
    for video, a, b in zip(videos, torch_side["td"], cpu_side["td"]):
        if a != b:
            print(f"PROBLEM {video}: before {a}, now {b}")
            status = 1
    if args.json:
        Path(args.json).write_text(json.dumps({"videos": videos, "before": torch_side, "now": cpu_side},
                                              indent=1), encoding="utf-8")
    return status


if __name__ == "__main__":
    sys.exit(main())
