"""Scaling benchmark (issue "Ray pipeline"): render workers 1 vs 2, and end-to-end samples/hour vs the
authors' sequence of scripts. One run, same scripts (the bundled reference answers), same machine.

    .venv/bin/python -m bench.scaling [--ids ID,ID,... | --limit N | --per-lang N] [--a-limit N] [--skip-a]
                                      [--skip-baseline] [--json out.json]

Part A — render stage throughput with 1 and 2 render workers: ``prism-fast eval`` restricted to the Exec stage
(audit / TD / TextExpand off, render cache and TeX cache off, fresh run dir), ``cluster.num_cpus=N``,
``execute.workers=N``, after one untimed warm-up pass over the same samples (first renders fill the OS page cache
and font/TeX caches; without it the second timed run profits). Throughput = samples / Exec stage wall time.
Target: 2 workers >= 1.8x of 1 worker.

Part B — end to end, samples/hour:
  ours      ``prism-fast eval`` (Exec -> Spatial -> TD -> TextExpand), all CPUs, fresh runs_root (empty caches).
  baseline  the authors' sequence, one sample after another, written from the spec (no checkout needed):
            render_directory = a bare ``manim -ql`` per file; audit_batch = the authors' auditor mode
            (1920x1080 at 60 fps, every frame rasterised and PNG-encoded, play hashing, per-pair matplotlib
            geometry: ``AuditConfig(full_fidelity=True, geometry_backend="matplotlib")``); score_td = OpenCV
            decodes frame by frame and the per-frame NumPy TD (``bench.oracle.td_raw_video``).
            PADVC is left out of both sides (OCR-bound, not enabled in the default config).
Target: ours >= 10x baseline samples/hour. The script checks that both sides agree on every sample's Exec
success and Spatial pass, and on TD_raw, and prints any disagreement as a PROBLEM (exit status 1).
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

DEFAULT_IDS = ("SAMPLE-EN-000001", "SAMPLE-EN-000002", "SAMPLE-ZH-000001", "SAMPLE-ZH-000002")


def _compose(*overrides: str):
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="prism_fast.conf", version_base=None):
        return compose(config_name="config", overrides=list(overrides))


def _ids_override(ids) -> str:
    return "dataset.ids=[" + ",".join(ids) + "]"


def _eval(runs_root: Path, ids, *overrides: str) -> dict:
    import ray

    from prism_fast.pipeline.run import options_from_config, run_eval

    if ray.is_initialized():
        ray.shutdown()
    cfg = _compose(f"runs_root={runs_root}", _ids_override(ids), *overrides)
    opts = options_from_config(cfg)
    t0 = time.perf_counter()
    summary = run_eval(opts)
    wall = time.perf_counter() - t0
    ray.shutdown()
    return {"summary": summary, "wall_s": wall, "run_dir": str(opts.run_dir)}


def part_a(ids, work: Path, warmup: bool = True) -> dict:
    exec_only = ("audit.enabled=false", "metrics.td.enabled=false", "metrics.text_expand.enabled=false",
                 "execute.cache.enabled=false", "execute.tex_cache.enabled=false")
    if warmup:  # untimed: OS page cache, font and TeX caches warm for both timed runs, not only the second
        _eval(work / "a_warmup", ids, "cluster.num_cpus=2", "execute.workers=2", *exec_only)
        print(f"[A] warm-up pass over {len(ids)} samples done", file=sys.stderr, flush=True)
    out = {}
    for n in (1, 2):
        res = _eval(work / f"a{n}", ids, f"cluster.num_cpus={n}", f"execute.workers={n}", *exec_only)
        exec_s = res["summary"]["stage_seconds"]["exec"]
        rows = _rows(res["run_dir"], "exec").values()
        # cores one render keeps busy (CPU of its process tree / its wall time): above 1, a lone render
        # also uses the idle core (manim's writer thread, x264 threads)
        cores = sum(r["cpu_s"] for r in rows) / max(sum(r["wall_s"] for r in rows), 1e-9)
        out[n] = {"exec_s": exec_s, "samples_per_hour": 3600.0 * len(ids) / exec_s, "render_cores": cores}
        print(f"[A] {n} worker(s): Exec stage {exec_s:.1f} s for {len(ids)} samples; a render keeps "
              f"{cores:.2f} cores busy", file=sys.stderr, flush=True)
    out["ratio"] = out[2]["samples_per_hour"] / out[1]["samples_per_hour"]
    return out


def _rows(run_dir: str, stage: str) -> dict:
    import pyarrow.parquet as pq

    rows = {}
    for f in sorted((Path(run_dir) / "rows" / stage).rglob("*.parquet")):
        for r in pq.read_table(f).to_pylist():
            rows[r["id"]] = r
    return rows


def baseline(tasks, work: Path) -> dict:
    from bench.oracle import td_raw_video
    from bench.render_bench import run_baseline
    from prism_fast.audit.config import AuditConfig
    from prism_fast.audit.runner import audit_one
    from prism_fast.execute.scene_select import select_scene
    from prism_fast.profile import REFERENCE

    manim_bin = str(Path(sys.executable).with_name("manim"))
    full = AuditConfig(full_fidelity=True, geometry_backend="matplotlib")
    work.mkdir(parents=True, exist_ok=True)
    per = {}
    t_all = time.perf_counter()
    for t in tasks:
        rec = {}
        t0 = time.perf_counter()
        scene = select_scene(t.reference_answer, REFERENCE).name
        r = run_baseline(manim_bin, t.id, t.reference_answer, scene, work, 600)
        rec["render_s"] = time.perf_counter() - t0
        rec["exec_success"] = bool(r["success"])
        t0 = time.perf_counter()
        a = audit_one(t.id, t.reference_answer, work / "audit", full)
        rec["audit_s"] = time.perf_counter() - t0
        rec["spatial_pass"] = int(a["visual_structure_pass"])
        t0 = time.perf_counter()
        video = work / "baseline_videos" / f"{t.id}.mp4"
        rec["td_raw"] = td_raw_video(str(video)) if r["success"] else None
        rec["td_s"] = time.perf_counter() - t0
        per[t.id] = rec
        print(f"[B baseline] {t.id}: render {rec['render_s']:.1f}s audit {rec['audit_s']:.1f}s "
              f"td {rec['td_s']:.1f}s", file=sys.stderr, flush=True)
    wall = time.perf_counter() - t_all
    return {"samples": per, "wall_s": wall, "samples_per_hour": 3600.0 * len(tasks) / wall}


def main(argv=None) -> int:
    from prism_fast.dataset.bundled import bundled_dataset_path
    from prism_fast.dataset.loader import load_dataset

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ids", default=",".join(DEFAULT_IDS))
    ap.add_argument("--limit", type=int, default=None, help="the first N bundled samples instead of --ids")
    ap.add_argument("--per-lang", type=int, default=None,
                    help="the first N bundled samples of each language (parts A and B) instead of --ids")
    ap.add_argument("--skip-a", action="store_true")
    ap.add_argument("--a-limit", type=int, default=None,
                    help="part A on the first N bundled samples instead of the part B ids (more samples, less imbalance)")
    ap.add_argument("--skip-baseline", action="store_true")
    ap.add_argument("--no-a-warmup", action="store_true", help="part A without its untimed warm-up pass")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    tasks = load_dataset(bundled_dataset_path()).tasks
    if args.per_lang:
        tasks = [t for lang in ("en", "zh") for t in [t for t in tasks if t.language == lang][:args.per_lang]]
    elif args.limit:
        tasks = tasks[:args.limit]
    else:
        wanted = args.ids.split(",")
        tasks = [t for t in tasks if t.id in wanted]
    ids = [t.id for t in tasks]
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="scaling_bench_"))
    report: dict = {"ids": ids, "cpus": os.cpu_count()}
    problems = []
    try:
        if not args.skip_a:
            a_ids = [t.id for t in load_dataset(bundled_dataset_path()).tasks[:args.a_limit]] if args.a_limit else ids
            report["A"] = part_a(a_ids, work, warmup=not args.no_a_warmup)
            report["A_ids"] = a_ids
        ours = _eval(work / "b", ids, f"cluster.num_cpus={os.cpu_count()}")
        ours_wall = ours["wall_s"]
        report["B_ours"] = {"wall_s": ours_wall, "samples_per_hour": 3600.0 * len(ids) / ours_wall,
                            "stage_seconds": ours["summary"]["stage_seconds"]}
        print(f"[B ours] {ours_wall:.1f} s end to end", file=sys.stderr, flush=True)
        if not args.skip_baseline:
            base = baseline(tasks, work / "baseline")
            report["B_baseline"] = base
            ex, au, td = (_rows(ours["run_dir"], s) for s in ("exec", "audit", "td"))
            for sid, rec in base["samples"].items():
                if bool(ex[sid]["success"]) != rec["exec_success"]:
                    problems.append(f"{sid}: Exec success differs")
                if int(au[sid]["visual_structure_pass"]) != rec["spatial_pass"]:
                    problems.append(f"{sid}: Spatial pass differs")
                if rec["td_raw"] is not None and td[sid].get("td_raw") != rec["td_raw"]:
                    problems.append(f"{sid}: TD_raw differs ({td[sid].get('td_raw')} vs {rec['td_raw']})")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    report.update(load_before=load_before, load_after=load_after, problems=problems)
    print(f"samples: {len(ids)} ({', '.join(ids)}); {os.cpu_count()} CPUs")
    if "A" in report:
        a = report["A"]
        print(f"A  samples: {len(report['A_ids'])}")
        print(f"A  render stage, 1 worker : {a[1]['exec_s']:.1f} s  ({a[1]['samples_per_hour']:.0f} samples/h)")
        print(f"A  render stage, 2 workers: {a[2]['exec_s']:.1f} s  ({a[2]['samples_per_hour']:.0f} samples/h)")
        print(f"A  ratio 2 vs 1 workers   : {a['ratio']:.2f}x (target >= 1.8x: {'met' if a['ratio'] >= 1.8 else 'NOT met'})")
        print(f"A  cores per render       : {a[1]['render_cores']:.2f} alone, {a[2]['render_cores']:.2f} with 2 workers")
    b = report["B_ours"]
    print(f"B  ours end to end        : {b['wall_s']:.1f} s  ({b['samples_per_hour']:.0f} samples/h); stages "
          + ", ".join(f"{k}={v}" for k, v in b["stage_seconds"].items()))
    if "B_baseline" in report:
        base = report["B_baseline"]
        ratio = b["samples_per_hour"] / base["samples_per_hour"]
        report["B_ratio"] = ratio
        print(f"B  authors' sequence      : {base['wall_s']:.1f} s  ({base['samples_per_hour']:.0f} samples/h)")
        print(f"B  ratio ours vs authors  : {ratio:.1f}x (target >= 10x: {'met' if ratio >= 10 else 'NOT met'})")
    print(f"load average before {load_before[0]:.1f}, after {load_after[0]:.1f}")
    for p in problems:
        print(f"PROBLEM {p}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
