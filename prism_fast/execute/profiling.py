"""Render-time profiling (the paper's "mean render time in the same controlled environment").

Method: samples are rendered one at a time (never concurrently), each ``warmup`` times (discarded: page cache,
bytecode, font cache) and then ``repeats`` times, with the render cache off so every repeat really renders.
Optionally the whole process tree is pinned to one CPU (``pin_cpu``), so timings do not depend on how many
other cores are free. Wall time is the subprocess wall time (the toolkit's ``runtime_sec``); CPU time is
user+sys of the child tree.
"""

from __future__ import annotations

import math
import os
import statistics
import tempfile
from dataclasses import dataclass, replace
from typing import Iterable

from prism_fast.execute.render import RenderConfig, render_one
from prism_fast.profile import REFERENCE, Profile


def percentile(values: list[float], q: float) -> float:
    """Linear-interpolation percentile (numpy's default method), q in [0, 100]."""
    if not values:
        raise ValueError("percentile of an empty list")
    xs = sorted(values)
    pos = (len(xs) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def describe(values: list[float]) -> dict:
    if not values:
        return {"n": 0, "mean": None, "median": None, "p95": None}
    return {"n": len(values), "mean": statistics.fmean(values), "median": statistics.median(values),
            "p95": percentile(values, 95)}


@dataclass(frozen=True)
class ProfileSettings:
    repeats: int = 3
    warmup: int = 1
    pin_cpu: int | None = None  # CPU index to pin the render tree to; None = no pinning
    # Warm shared TeX SVG cache (texcache.py): renders then run through a prefork worker (manim import not
    # timed) and repeats after the second one hit the cache. Off = the authors' method: a cold `manim` process.
    tex_cache: bool = False
    # Manim's per-play hashing, as in the authors' command (execute.play_hashing is the pipeline's setting).
    play_hashing: bool = True
    # execute/fastpaths.py in the render child (prefork worker only, i.e. with tex_cache); off = manim's own helpers
    fast_paths: bool = False


def profile_renders(items: Iterable[tuple[str, str, str]], cfg: RenderConfig, settings: ProfileSettings,
                    profile: Profile = REFERENCE, on_render=None) -> dict:
    """Profile ``(model, sample_id, script)`` items; returns per-sample and per-model statistics. ``on_render(failed)``
    is called after every render, warm-ups included (the caller's progress)."""
    if settings.repeats < 1:
        raise ValueError("repeats must be >= 1")
    cfg = replace(cfg, cache_dir=None, play_hashing=settings.play_hashing, fast_paths=settings.fast_paths,
                  tex_cache_dir=cfg.tex_cache_dir if settings.tex_cache else None)  # every repeat must render
    if settings.tex_cache and not cfg.tex_cache_dir:
        raise ValueError("profile_render.tex_cache=true needs execute.tex_cache.enabled=true")
    worker = None
    old_affinity = os.sched_getaffinity(0) if settings.pin_cpu is not None else None
    samples, per_model = [], {}
    try:
        if settings.pin_cpu is not None:
            os.sched_setaffinity(0, {settings.pin_cpu})  # inherited by the render subprocesses
        if settings.tex_cache:
            from prism_fast.execute.render import prefork_worker

            worker = prefork_worker(cfg)
        for model, sample_id, script in items:
            walls, cpus, errors = [], [], []
            for k in range(settings.warmup + settings.repeats):
                with tempfile.TemporaryDirectory(prefix="prism_profile_") as out:
                    row = render_one(sample_id, script, out, cfg, profile, runner=worker.run if worker else None)
                if on_render is not None:
                    on_render(not row["success"])
                if k < settings.warmup:
                    continue
                if row["success"]:
                    walls.append(row["wall_s"])
                    cpus.append(row["cpu_s"])
                else:
                    errors.append((row["error"] or "")[-200:])
            samples.append({"model": model, "id": sample_id, "wall_s": describe(walls), "cpu_s": describe(cpus),
                            "failures": len(errors), "last_error": errors[-1] if errors else None})
            agg = per_model.setdefault(model, {"wall": [], "cpu": []})
            if walls:  # per-sample means, so every sample weighs the same whatever its repeats
                agg["wall"].append(statistics.fmean(walls))
                agg["cpu"].append(statistics.fmean(cpus))
    finally:
        if worker is not None:
            worker.close()
        if old_affinity is not None:
            os.sched_setaffinity(0, old_affinity)
    models = {m: {"samples": len(v["wall"]), "wall_s": describe(v["wall"]), "cpu_s": describe(v["cpu"])}
              for m, v in per_model.items()}
    return {"method": {"repeats": settings.repeats, "warmup": settings.warmup, "pin_cpu": settings.pin_cpu,
                       "render_cache": "off", "tex_cache": "warm" if settings.tex_cache else "off",
                       "backend": "prefork" if settings.tex_cache else "cli", "concurrency": 1,
                       "play_hashing": settings.play_hashing,
                       "fast_paths": settings.fast_paths and settings.tex_cache,
                       "profile": profile.name},
            "samples": samples, "models": models}


def format_profile(result: dict) -> str:
    def f(x):
        return "-" if x is None else f"{x:.2f}"

    lines = ["| model | id | n | wall mean | wall median | wall p95 | cpu mean | cpu median | cpu p95 | failures |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for s in result["samples"]:
        w, c = s["wall_s"], s["cpu_s"]
        lines.append(f"| {s['model']} | {s['id']} | {w['n']} | {f(w['mean'])} | {f(w['median'])} | {f(w['p95'])} | "
                     f"{f(c['mean'])} | {f(c['median'])} | {f(c['p95'])} | {s['failures']} |")
    lines += ["", "| model | samples | wall mean | wall median | wall p95 | cpu mean | cpu median | cpu p95 |",
              "|---|---|---|---|---|---|---|---|"]
    for m, v in result["models"].items():
        w, c = v["wall_s"], v["cpu_s"]
        lines.append(f"| {m} | {v['samples']} | {f(w['mean'])} | {f(w['median'])} | {f(w['p95'])} | "
                     f"{f(c['mean'])} | {f(c['median'])} | {f(c['p95'])} |")
    m = result["method"]
    lines += ["", f"Method: {m['repeats']} measured repeat(s) after {m['warmup']} warm-up, one render at a time, "
                  f"render cache off, TeX cache {m.get('tex_cache', 'off')} ({m.get('backend', 'cli')} backend), "
                  f"CPU pinning: {m['pin_cpu'] if m['pin_cpu'] is not None else 'none'}; "
                  "wall = subprocess wall time, cpu = user+sys of the render tree."]
    return "\n".join(lines) + "\n"
