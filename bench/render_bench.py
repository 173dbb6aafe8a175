"""Render benchmark: plain sandboxed CLI vs the prefork worker vs a render-cache re-run.

Every mode renders the same scripts one after another (one render at a time) through ``render_one`` and the
script checks that all modes give the same outcome and byte-identical mp4s before it prints timings.

    .venv/bin/python -m bench.render_bench [--repeat 2] [--json out.json]

Per sample it reports the caller-side elapsed time (what a pipeline waits for), and the row's ``wall_s`` and
``cpu_s`` (the child: with prefork, the manim import is paid once by the server instead).

Acceptance mode (``--bundled``): our render stage vs a bare ``manim -ql`` per file (the authors' method) on the
bundled reference answers, same machine, one run:

    .venv/bin/python -m bench.render_bench --bundled [--limit N | --ids ID,ID,...] [--json out.json]

Per sample, in this order: (a) baseline = a plain ``subprocess.run`` of the authors' command on the script
written to a fresh temp dir, and (b) ``render_one`` with the sandbox, CLI backend, no cache, alternating which of
(a)/(b) goes first (ABAB) so load drift hits both alike; then (c) ``render_one`` through the prefork worker, with
the render cache on and empty for that sample (a miss that fills the cache). After all samples, (d) a second
pass of ``render_one`` over the filled cache (warm). Timings: caller-side wall (perf_counter) and CPU =
``RUSAGE_CHILDREN`` + ``RUSAGE_SELF`` deltas around the call (for (c) the child is forked by the worker's server,
so its CPU is the row's ``cpu_s`` plus our own process's delta). All modes must succeed; the mp4s of (b), (c), (d)
are compared byte for byte with (a) and every mismatch is printed (exit status 1), never hidden.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import subprocess
import shutil
import statistics
import sys
import tempfile
import textwrap
import time
from dataclasses import replace
from pathlib import Path

from prism_fast.execute.render import RenderConfig, find_final_mp4, prefork_worker, render_one
from prism_fast.execute.scene_select import select_scene
from prism_fast.profile import REFERENCE

SCRIPTS = {
    # Five plays with shapes, Text and MathTex: the spec's "5-play example" size (execution.md §11).
    "five_plays": textwrap.dedent(r"""
        from manim import *
        class FivePlays(Scene):
            def construct(self):
                title = Text("Area under a curve").to_edge(UP)
                ax = Axes(x_range=[0, 3], y_range=[0, 9], x_length=6, y_length=4)
                graph = ax.plot(lambda x: x ** 2, color=YELLOW)
                area = ax.get_area(graph, x_range=[0, 2], color=BLUE, opacity=0.5)
                eq = MathTex(r"\int_0^2 x^2\,dx = \frac{8}{3}").next_to(ax, DOWN)
                self.play(Write(title))
                self.play(Create(ax))
                self.play(Create(graph))
                self.play(FadeIn(area))
                self.play(Write(eq))
    """).lstrip(),
    "text_only": textwrap.dedent("""
        from manim import *
        class TextOnly(Scene):
            def construct(self):
                lines = VGroup(*[Text(f"Line {i}: 你好 hello") for i in range(4)]).arrange(DOWN)
                self.play(Write(lines), run_time=1.5)
                self.wait(0.5)
    """).lstrip(),
    "runtime_error": textwrap.dedent("""
        from manim import *
        class Broken(Scene):
            def construct(self):
                self.play(Create(Circle()))
                self.play(Circle().animate.does_not_exist())
    """).lstrip(),
}


def outcome(row: dict) -> tuple:
    digest = hashlib.sha256(Path(row["video_path"]).read_bytes()).hexdigest() if row["success"] else None
    return row["status"], row["error_kind"], digest


def run_mode(mode: str, cfg: RenderConfig, work: Path, repeat: int) -> dict:
    runner, worker, startup = None, None, 0.0
    if mode == "prefork":
        t0 = time.perf_counter()
        worker = prefork_worker(cfg)
        startup = time.perf_counter() - t0
        runner = worker.run
    results: dict[str, list] = {}
    try:
        for rep in range(repeat):
            for sid, src in SCRIPTS.items():
                out = work / f"{mode}_{rep}"
                t0 = time.perf_counter()
                row = render_one(sid, src, out, cfg, runner=runner)
                elapsed = time.perf_counter() - t0
                results.setdefault(sid, []).append({"elapsed_s": elapsed, "wall_s": row["wall_s"],
                                                    "cpu_s": row["cpu_s"], "outcome": outcome(row),
                                                    "cache_hit": row["cache_hit"]})
    finally:
        if worker is not None:
            worker.close()
    return {"startup_s": startup, "samples": results}


def _cpu_now() -> float:
    """User + system CPU seconds of this process plus its waited-for children."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        ru = resource.getrusage(who)
        total += ru.ru_utime + ru.ru_stime
    return total


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _sha(path: Path | str | None) -> str | None:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest() if path and Path(path).is_file() else None


def run_baseline(manim_bin: str, sid: str, script_text: str, scene: str, work: Path, timeout_s: int) -> dict:
    """The authors' method: script in a temp dir, bare ``manim -ql`` with a fresh media dir, nothing else."""
    tmp = Path(tempfile.mkdtemp(prefix=f"base_{sid[:32]}_", dir=str(work)))
    script = tmp / f"{sid}.py"
    script.write_text(script_text, encoding="utf-8")
    media = tmp / "media"
    argv = [manim_bin, "-ql", str(script), scene, "--media_dir", str(media), "-o", f"{sid}.mp4",
            "--progress_bar", "none"]
    cpu0, ch0, t0 = _cpu_now(), _children_cpu(), time.perf_counter()
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=timeout_s)
        rc = proc.returncode
    except subprocess.TimeoutExpired:
        rc = None
    wall = time.perf_counter() - t0
    cpu, child_cpu = _cpu_now() - cpu0, _children_cpu() - ch0
    final = find_final_mp4(media, f"{sid}.mp4") if media.exists() else None
    keep = work / "baseline_videos" / f"{sid}.mp4"
    if rc == 0 and final is not None:
        keep.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(final), keep)
    shutil.rmtree(tmp, ignore_errors=True)
    return {"success": rc == 0 and keep.exists(), "rc": rc, "wall_s": wall, "cpu_s": cpu, "child_cpu_s": child_cpu,
            "sha256": _sha(keep) if rc == 0 else None}


def run_ours(sid: str, script_text: str, out: Path, cfg: RenderConfig, runner=None) -> dict:
    cpu0, ch0, t0 = _cpu_now(), _children_cpu(), time.perf_counter()
    row = render_one(sid, script_text, out, cfg, profile=REFERENCE, runner=runner)
    wall = time.perf_counter() - t0
    cpu, child_cpu = _cpu_now() - cpu0, _children_cpu() - ch0
    if runner is not None and not row["cache_hit"]:
        cpu += row["cpu_s"]  # the forked child is the worker server's, not ours
    return {"success": bool(row["success"]), "status": row["status"], "error_kind": row["error_kind"],
            "backend": row["backend"], "cache_hit": row["cache_hit"], "wall_s": wall, "cpu_s": cpu,
            "child_cpu_s": child_cpu, "row_wall_s": row["wall_s"], "row_cpu_s": row["cpu_s"],
            "sha256": _sha(row["video_path"]) if row["success"] else None}


def bundled_main(args) -> int:
    from prism_fast.dataset.bundled import bundled_dataset_path
    from prism_fast.dataset.loader import load_dataset

    tasks = load_dataset(bundled_dataset_path()).tasks
    if args.ids:
        wanted = [i.strip() for i in args.ids.split(",") if i.strip()]
        by_id = {t.id: t for t in tasks}
        missing = [i for i in wanted if i not in by_id]
        if missing:
            print(f"unknown ids: {missing}", file=sys.stderr)
            return 2
        tasks = [by_id[i] for i in wanted]
    if args.limit is not None:
        tasks = tasks[:args.limit]
    manim_bin = args.manim_bin
    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="render_bench_bundled_"))
    problems: list[str] = []
    results: dict[str, dict] = {}
    t_all = time.perf_counter()
    try:
        cold = RenderConfig(manim_bin=manim_bin, timeout_s=args.timeout, tmp_root=str(work / "tmp"))
        cached = replace(cold, cache_dir=str(work / "cache"))
        t0 = time.perf_counter()
        worker = prefork_worker(cold)
        startup = time.perf_counter() - t0
        try:
            for i, task in enumerate(tasks):
                scene = select_scene(task.reference_answer, REFERENCE).name
                res: dict = {"scene": scene}
                if scene is None:
                    problems.append(f"{task.id}: no scene found by the reference rule")
                    results[task.id] = res
                    continue
                order = ("a", "b") if i % 2 == 0 else ("b", "a")
                for mode in order:
                    if mode == "a":
                        res["a"] = run_baseline(manim_bin, task.id, task.reference_answer, scene, work, args.timeout)
                    else:
                        res["b"] = run_ours(task.id, task.reference_answer, work / "out_cli", cold)
                res["c"] = run_ours(task.id, task.reference_answer, work / "out_prefork", cached, runner=worker.run)
                res["order"] = "".join(order)
                results[task.id] = res
                print(f"[{i + 1}/{len(tasks)}] {task.id} {scene}: a {res['a']['wall_s']:.1f}s  "
                      f"b {res['b']['wall_s']:.1f}s  c {res['c']['wall_s']:.1f}s", file=sys.stderr, flush=True)
        finally:
            worker.close()
        for task in tasks:
            if "a" in results[task.id]:
                results[task.id]["d"] = run_ours(task.id, task.reference_answer, work / "out_warm", cached)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    elapsed_all = time.perf_counter() - t_all
    load_after = os.getloadavg()

    # Checks: every mode succeeded; (c) was a miss and (d) a hit; mp4s byte-identical to the baseline.
    for sid, res in results.items():
        if "a" not in res:
            continue
        for mode in ("a", "b", "c", "d"):
            r = res[mode]
            if not r["success"]:
                problems.append(f"{sid}: mode {mode} failed ({r.get('status', r.get('rc'))}, {r.get('error_kind')})")
        if res["c"]["cache_hit"]:
            problems.append(f"{sid}: mode c was a cache hit (expected a cold render)")
        if not res["d"]["cache_hit"]:
            problems.append(f"{sid}: mode d was not a cache hit")
        for mode in ("b", "c", "d"):
            if res["a"]["sha256"] and res[mode]["sha256"] != res["a"]["sha256"]:
                problems.append(f"{sid}: mp4 of mode {mode} differs from the baseline's "
                                f"({str(res[mode]['sha256'])[:12]} vs {res['a']['sha256'][:12]})")

    done = [sid for sid, res in results.items() if "a" in res]
    tot = {m: {k: sum(results[s][m][k] for s in done) for k in ("wall_s", "cpu_s")} for m in "abcd"} if done else {}
    print(f"{'sample':<18} {'scene':<24} {'ord':<3} {'a wall':>7} {'a cpu':>6} {'b wall':>7} {'b cpu':>6} "
          f"{'c wall':>7} {'c cpu':>6} {'d wall':>7} {'same':>5}")
    for sid in done:
        r = results[sid]
        same = all(r[m]["sha256"] == r["a"]["sha256"] and r["a"]["sha256"] for m in "bcd")
        print(f"{sid:<18} {r['scene'][:24]:<24} {r['order']:<3} {r['a']['wall_s']:>7.2f} {r['a']['cpu_s']:>6.2f} "
              f"{r['b']['wall_s']:>7.2f} {r['b']['cpu_s']:>6.2f} {r['c']['wall_s']:>7.2f} {r['c']['cpu_s']:>6.2f} "
              f"{r['d']['wall_s']:>7.3f} {'yes' if same else 'NO':>5}")
    summary = {}
    if done:
        a, b, c, d = (tot[m] for m in "abcd")
        print(f"{'TOTAL':<18} {'':<24} {'':<3} {a['wall_s']:>7.2f} {a['cpu_s']:>6.2f} {b['wall_s']:>7.2f} "
              f"{b['cpu_s']:>6.2f} {c['wall_s']:>7.2f} {c['cpu_s']:>6.2f} {d['wall_s']:>7.3f}")
        summary = {
            "samples": len(done),
            "sandbox_overhead_wall_pct": 100.0 * (b["wall_s"] / a["wall_s"] - 1.0),
            "sandbox_overhead_cpu_pct": 100.0 * (b["cpu_s"] / a["cpu_s"] - 1.0),
            "prefork_speedup_vs_cli_wall": b["wall_s"] / c["wall_s"],
            "prefork_speedup_vs_baseline_wall": a["wall_s"] / c["wall_s"],
            "prefork_cpu_saving_pct": 100.0 * (1.0 - c["cpu_s"] / b["cpu_s"]),
            "prefork_startup_s": startup,
            "warm_cache_speedup": b["wall_s"] / d["wall_s"] if d["wall_s"] > 0 else float("inf"),
            "warm_cache_speedup_vs_baseline": a["wall_s"] / d["wall_s"] if d["wall_s"] > 0 else float("inf"),
            "median_per_sample_overhead_wall_pct": statistics.median(
                100.0 * (results[s]["b"]["wall_s"] / results[s]["a"]["wall_s"] - 1.0) for s in done),
        }
        print()
        print(f"(a) baseline bare manim -ql   : {a['wall_s']:.2f} s wall, {a['cpu_s']:.2f} CPU-s")
        print(f"(b) ours, sandbox, CLI, cold  : {b['wall_s']:.2f} s wall, {b['cpu_s']:.2f} CPU-s")
        print(f"(c) ours, prefork, cold       : {c['wall_s']:.2f} s wall, {c['cpu_s']:.2f} CPU-s "
              f"(+ worker start {startup:.2f} s once)")
        print(f"(d) ours, warm render cache   : {d['wall_s']:.3f} s wall")
        print(f"sandbox overhead (b vs a)     : wall {summary['sandbox_overhead_wall_pct']:+.1f} %, "
              f"CPU {summary['sandbox_overhead_cpu_pct']:+.1f} % (target <= 5 %: "
              f"{'met' if summary['sandbox_overhead_wall_pct'] <= 5 else 'NOT met'} on wall); "
              f"median per sample {summary['median_per_sample_overhead_wall_pct']:+.1f} %")
        print(f"prefork speed-up (b / c)      : {summary['prefork_speedup_vs_cli_wall']:.2f}x wall "
              f"({summary['prefork_speedup_vs_baseline_wall']:.2f}x vs baseline), "
              f"CPU saved {summary['prefork_cpu_saving_pct']:.0f} %")
        print(f"warm-cache speed-up (b / d)   : {summary['warm_cache_speedup']:.0f}x "
              f"({summary['warm_cache_speedup_vs_baseline']:.0f}x vs baseline; target >= 50x: "
              f"{'met' if summary['warm_cache_speedup'] >= 50 else 'NOT met'})")
    print(f"load average before {load_before[0]:.2f}/{load_before[1]:.2f}/{load_before[2]:.2f}, after "
          f"{load_after[0]:.2f}/{load_after[1]:.2f}/{load_after[2]:.2f}; {os.cpu_count()} CPUs; "
          f"bench took {elapsed_all:.0f} s")
    for p in problems:
        print(f"PROBLEM {p}")
    if not problems:
        print("all modes succeeded; (b), (c), (d) mp4s byte-identical to the baseline's")
    if args.json:
        Path(args.json).write_text(json.dumps({"host": platform.node(), "python": platform.python_version(),
                                               "load_before": load_before, "load_after": load_after,
                                               "prefork_startup_s": startup, "samples": results,
                                               "summary": summary, "problems": problems}, indent=1))
    return 1 if problems else 0


def sandbox_main(args) -> int:
    """``--sandbox-overhead``: the view (``execute.sandbox=auto``: namespaces, pivot_root, uid drop, cgroups,
    scratch tmpfs) vs ``unsafe`` (the pre-view protections), same prefork worker, same bundled answers, ABAB
    order per sample. CPU = our process's delta + the forked child's ``cpu_s``; mp4s must be identical."""
    from prism_fast.dataset.bundled import bundled_dataset_path
    from prism_fast.dataset.loader import load_dataset

    tasks = load_dataset(bundled_dataset_path()).tasks
    if args.ids:
        wanted = args.ids.split(",")
        tasks = [t for t in tasks if t.id in wanted]
    tasks = tasks[: args.limit] if args.limit else tasks
    work = Path(tempfile.mkdtemp(prefix="render_bench_sandbox_"))
    cfgs = {lvl: RenderConfig(manim_bin=args.manim_bin, timeout_s=args.timeout, tmp_root=str(work / "tmp"),
                              sandbox=lvl) for lvl in ("unsafe", "auto")}
    worker = prefork_worker(cfgs["auto"])
    rows: list[dict] = []
    problems: list[str] = []
    try:
        for i, task in enumerate(tasks):
            order = ("unsafe", "auto") if i % 2 == 0 else ("auto", "unsafe")
            res = {}
            for lvl in order:
                res[lvl] = run_ours(task.id, task.reference_answer, work / lvl, cfgs[lvl], runner=worker.run)
            if res["unsafe"]["sha256"] != res["auto"]["sha256"] or res["unsafe"]["status"] != res["auto"]["status"]:
                problems.append(f"{task.id}: outcome differs between levels")
            rows.append({"id": task.id, **{f"{lvl}_{k}": res[lvl][k] for lvl in res for k in ("cpu_s", "wall_s")}})
            print(f"{task.id:<22} cpu unsafe {res['unsafe']['cpu_s']:6.2f}  auto {res['auto']['cpu_s']:6.2f}   "
                  f"wall unsafe {res['unsafe']['wall_s']:6.2f}  auto {res['auto']['wall_s']:6.2f}", flush=True)
    finally:
        worker.close()
        shutil.rmtree(work, ignore_errors=True)
    tot = {k: sum(r[k] for r in rows) for k in ("unsafe_cpu_s", "auto_cpu_s", "unsafe_wall_s", "auto_wall_s")}
    print(f"\n{len(rows)} renders per level: CPU unsafe {tot['unsafe_cpu_s']:.1f} s, view {tot['auto_cpu_s']:.1f} s "
          f"-> overhead {100 * (tot['auto_cpu_s'] / tot['unsafe_cpu_s'] - 1):+.1f} %; wall {tot['unsafe_wall_s']:.1f} "
          f"-> {tot['auto_wall_s']:.1f} s ({100 * (tot['auto_wall_s'] / tot['unsafe_wall_s'] - 1):+.1f} %)")
    for p in problems:
        print(f"PROBLEM {p}")
    if args.json:
        Path(args.json).write_text(json.dumps({"rows": rows, "totals": tot, "problems": problems}, indent=1))
    return 1 if problems else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--manim-bin", default=str(Path(sys.executable).with_name("manim")))
    ap.add_argument("--json", default=None)
    ap.add_argument("--bundled", action="store_true",
                    help="acceptance mode: bare manim -ql vs our render stage on the bundled reference answers")
    ap.add_argument("--limit", type=int, default=None, help="--bundled: the first N samples (default all 48)")
    ap.add_argument("--ids", default=None, help="--bundled: comma-separated sample ids")
    ap.add_argument("--timeout", type=int, default=600, help="--bundled: per-render timeout in seconds")
    ap.add_argument("--sandbox-overhead", action="store_true",
                    help="the sandbox view (execute.sandbox=auto) vs the unsafe level on the bundled answers")
    args = ap.parse_args(argv)
    if args.sandbox_overhead:
        return sandbox_main(args)
    if args.bundled:
        return bundled_main(args)

    work = Path(tempfile.mkdtemp(prefix="render_bench_"))
    try:
        base = RenderConfig(manim_bin=args.manim_bin, timeout_s=600, tmp_root=str(work / "tmp"))
        cached = RenderConfig(manim_bin=args.manim_bin, timeout_s=600, tmp_root=str(work / "tmp"),
                              cache_dir=str(work / "cache"))
        report = {"host": platform.node(), "python": platform.python_version(), "repeat": args.repeat, "modes": {}}
        report["modes"]["cli"] = run_mode("cli", base, work, args.repeat)
        report["modes"]["prefork"] = run_mode("prefork", base, work, args.repeat)
        run_mode("cache_fill", cached, work, 1)  # fills the cache (not reported)
        report["modes"]["cache_rerun"] = run_mode("cache_rerun", cached, work, args.repeat)

        reference = {sid: runs[0]["outcome"] for sid, runs in report["modes"]["cli"]["samples"].items()}
        for mode, res in report["modes"].items():
            for sid, runs in res["samples"].items():
                for run in runs:
                    if tuple(run["outcome"]) != tuple(reference[sid]):
                        print(f"MISMATCH {mode} {sid}: {run['outcome']} vs {reference[sid]}", file=sys.stderr)
                        return 1
        print(f"{'mode':<12} {'sample':<14} {'elapsed_s':>10} {'wall_s':>8} {'cpu_s':>7}  (median of {args.repeat})")
        for mode, res in report["modes"].items():
            for sid, runs in res["samples"].items():
                med = {k: statistics.median(r[k] for r in runs) for k in ("elapsed_s", "wall_s", "cpu_s")}
                print(f"{mode:<12} {sid:<14} {med['elapsed_s']:>10.2f} {med['wall_s']:>8.2f} {med['cpu_s']:>7.2f}")
            if res["startup_s"]:
                print(f"{mode:<12} {'(startup)':<14} {res['startup_s']:>10.2f}")
        print("all modes: identical outcomes and byte-identical mp4s")
        if args.json:
            Path(args.json).write_text(json.dumps(report, indent=1))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
