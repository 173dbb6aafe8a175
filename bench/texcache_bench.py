"""Shared TeX SVG cache benchmark: prefork renders of the bundled reference answers without and with the cache.

    .venv/bin/python -m bench.texcache_bench [--limit N | --ids ID,ID] [--json out.json]

Passes, one render at a time, all through one prefork worker (render cache off):
  P0  no TeX cache (what `execute.tex_cache.enabled=false` does);
  T1  TeX cache, starting empty: an expression is compiled by the sample, recorded on its first sighting,
      re-compiled by the trusted verifier on its second and served from the third on (a first sweep);
  T2  the same scripts again over the cache T1 left (a re-sweep, another model, another language).
Every mp4 of T1/T2 must be byte-identical to P0's (printed as a PROBLEM otherwise, exit status 1).
Wall = caller-side time of ``render_one`` (includes the verifier's compiles); CPU = the render child's
user+sys plus this process's children (the verifier).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from prism_fast.execute.render import RenderConfig, prefork_worker, render_one


def _sha(path) -> str | None:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else None


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def run_pass(name: str, tasks, cfg: RenderConfig, worker, work: Path) -> dict:
    out = {"samples": {}, "wall_s": 0.0, "cpu_s": 0.0, "hits": 0, "published": 0}
    for t in tasks:
        ch0, t0 = _children_cpu(), time.perf_counter()
        row = render_one(t.id, t.reference_answer, work / name, cfg, runner=worker.run)
        wall = time.perf_counter() - t0
        cpu = row["cpu_s"] + (_children_cpu() - ch0)
        out["samples"][t.id] = {"success": row["success"], "wall_s": wall, "cpu_s": cpu,
                                "hits": row["tex_cache_hits"], "published": row["tex_cache_published"],
                                "sha256": _sha(row["video_path"]) if row["success"] else None}
        out["wall_s"] += wall
        out["cpu_s"] += cpu
        out["hits"] += row["tex_cache_hits"]
        out["published"] += row["tex_cache_published"]
        print(f"{name} {t.id}: {wall:.1f}s hits={row['tex_cache_hits']} published={row['tex_cache_published']}",
              file=sys.stderr, flush=True)
    return out


def main(argv=None) -> int:
    from prism_fast.dataset.bundled import bundled_dataset_path
    from prism_fast.dataset.loader import load_dataset

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--ids", default=None)
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    tasks = load_dataset(bundled_dataset_path()).tasks
    if args.ids:
        wanted = set(args.ids.split(","))
        tasks = [t for t in tasks if t.id in wanted]
    if args.limit:
        tasks = tasks[:args.limit]
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="texcache_bench_"))
    try:
        base = RenderConfig(timeout_s=600, tmp_root=str(work / "tmp"))
        with_tex = replace(base, tex_cache_dir=str(work / "texcache"))
        worker = prefork_worker(base)
        try:
            passes = {"P0": run_pass("P0", tasks, base, worker, work),
                      "T1": run_pass("T1", tasks, with_tex, worker, work),
                      "T2": run_pass("T2", tasks, with_tex, worker, work)}
        finally:
            worker.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    problems = []
    for t in tasks:
        ref = passes["P0"]["samples"][t.id]
        for name in ("T1", "T2"):
            got = passes[name]["samples"][t.id]
            if got["success"] != ref["success"] or got["sha256"] != ref["sha256"]:
                problems.append(f"{t.id}: pass {name} differs from P0")
    print(f"{len(tasks)} samples")
    print("| pass | wall s | CPU s | TeX cache hits | entries published | wall vs P0 | CPU vs P0 |")
    print("|---|---|---|---|---|---|---|")
    p0 = passes["P0"]
    for name, p in passes.items():
        print(f"| {name} | {p['wall_s']:.1f} | {p['cpu_s']:.1f} | {p['hits']} | {p['published']} | "
              f"{p0['wall_s'] / p['wall_s']:.2f}x | {p0['cpu_s'] / p['cpu_s']:.2f}x |")
    print(f"load average before {load_before[0]:.1f}, after {load_after[0]:.1f}; {os.cpu_count()} CPUs")
    for p in problems:
        print(f"PROBLEM {p}")
    if not problems:
        print("every T1/T2 mp4 byte-identical to P0's")
    if args.json:
        Path(args.json).write_text(json.dumps({"passes": passes, "problems": problems}, indent=1))
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
