"""kill -9 the whole run (driver and its Ray workers) mid-way, restart it, and compare with a clean run:
identical final rows, none lost, none duplicated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from prism_fast.store import ResultsStore

IDS = [f"SAMPLE-EN-{i:06d}" for i in range(1, 9)]
SCRIPT = """from manim import *
class Tiny{n}(Scene):
    def construct(self):
        self.play(FadeIn(Circle(radius=0.{n}5)), run_time=0.3)
"""
# Fields that legitimately differ between two runs of the same inputs.
VOLATILE = {"written_at_ns", "runtime_sec", "wall_s", "cpu_s", "peak_rss_mb", "video_path", "stderr_tail",
            "stdout_bytes", "cache_hit", "cache_key", "script_path", "backend"}


def _predictions(tmp_path: Path) -> Path:
    d = tmp_path / "preds"
    d.mkdir()
    for n, sid in enumerate(IDS, start=1):
        text = SCRIPT.format(n=n) if n != 4 else "this is not python\n"
        (d / f"{sid}.py").write_text(text)
    return d


def _cmd(preds: Path, runs_root: Path) -> list[str]:
    return [sys.executable, "-m", "prism_fast.cli", "model=predictions", "model.name=tiny",
            f"model.predictions={preds}", "lang=en", "dataset.limit=8", f"runs_root={runs_root}",
            "render.cache.enabled=false", "cluster.num_cpus=2", "hydra.run.dir=" + str(runs_root / "hydra")]


def _rows(run_dir: Path, stage: str) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in VOLATILE} for r in ResultsStore(run_dir).read(stage).to_pylist()]


def test_kill_minus_9_then_resume_equals_clean_run(tmp_path):
    preds = _predictions(tmp_path)
    clean_root, killed_root = tmp_path / "clean", tmp_path / "killed"
    subprocess.run(_cmd(preds, clean_root), check=True, capture_output=True, timeout=600)

    proc = subprocess.Popen(_cmd(preds, killed_root), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    run_dir = killed_root / "tiny-en-reference"
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            if ResultsStore(run_dir).part_files("exec"):
                break  # some rows landed, others are still rendering
            time.sleep(0.2)
        assert proc.poll() is None, "run finished before it could be killed"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
    partial = ResultsStore(run_dir).read("exec").num_rows
    assert 0 < partial < len(IDS)

    subprocess.run(_cmd(preds, killed_root), check=True, capture_output=True, timeout=600)
    store = ResultsStore(run_dir)
    assert store.read("exec", dedupe=False).num_rows == len(IDS), "a row was written twice"
    assert _rows(run_dir, "exec") == _rows(clean_root / "tiny-en-reference", "exec")
    assert _rows(run_dir, "tasks") == _rows(clean_root / "tiny-en-reference", "tasks")
    by_id = {r["id"]: r for r in _rows(run_dir, "exec")}
    assert by_id["SAMPLE-EN-000004"]["success"] is False and by_id["SAMPLE-EN-000004"]["error"]
    assert sum(r["success"] for r in by_id.values()) == len(IDS) - 1
