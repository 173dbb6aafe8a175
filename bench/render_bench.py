"""Render benchmark: plain sandboxed CLI vs the prefork worker vs a render-cache re-run.

Every mode renders the same scripts one after another (one render at a time) through ``render_one`` and the
script checks that all modes give the same outcome and byte-identical mp4s before it prints timings.

    .venv/bin/python -m bench.render_bench [--repeat 2] [--json out.json]

Per sample it reports the caller-side elapsed time (what a pipeline waits for), and the row's ``wall_s`` and
``cpu_s`` (the child: with prefork, the manim import is paid once by the server instead).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import shutil
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from prism_fast.execute.render import RenderConfig, prefork_worker, render_one

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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--manim-bin", default=str(Path(sys.executable).with_name("manim")))
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)

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
