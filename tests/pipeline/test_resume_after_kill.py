"""Faults: kill -9 the whole run (driver and its Ray workers) mid-way and restart it; kill -9 one render
worker while the run goes on. Both must end with the rows of a clean run: identical, none lost, none
duplicated."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from prism_fast.store import ResultsStore

IDS = [f"SAMPLE-EN-{i:06d}" for i in range(1, 9)]
SCRIPT = """from manim import *
class Tiny{n}(Scene):
    def construct(self):
        self.play(FadeIn(Circle(radius=0.{n}5)), run_time=0.3)
        self.wait(2)
"""
# Fields that legitimately differ between two runs of the same inputs. The cache flags are provenance: a run
# killed after an audit reached the audit cache but before its row was flushed is served from that cache on
# resume (same row otherwise; the render actors audit during the Exec stage, so a kill there can do this).
VOLATILE = {"written_at_ns", "runtime_sec", "wall_s", "cpu_s", "peak_rss_mb", "video_path", "stderr_tail",
            "stdout_bytes", "cache_hit", "cache_key", "script_path", "backend", "file_path", "report_path",
            "audit_cache_hit"}


def _predictions(tmp_path: Path) -> Path:
    d = tmp_path / "preds"
    d.mkdir()
    for n, sid in enumerate(IDS, start=1):
        text = SCRIPT.format(n=n) if n != 4 else "this is not python\n"
        (d / f"{sid}.py").write_text(text)
    return d


def _cmd(preds: Path, runs_root: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "prism_fast.cli", "model=predictions", "model.name=tiny",
            f"model.predictions={preds}", "lang=en", "dataset.limit=8", f"runs_root={runs_root}",
            "execute.cache.enabled=false", "cluster.num_cpus=2", "hydra.run.dir=" + str(runs_root / "hydra"), *extra]


def _rows(run_dir: Path, stage: str) -> list[dict]:
    out = []
    for r in ResultsStore(run_dir).read(stage).to_pylist():
        if r.get("tex_format") == "not_ready":
            # on a fresh runs_root the head start renders before the driver has built the LaTeX format
            # (pipeline/headstart.py); which samples it takes depends on timing. These scenes compile no TeX.
            assert r.get("tex_format_compiles") == 0, r
            r["tex_format"] = "on"
        out.append({k: v for k, v in r.items() if k not in VOLATILE})
    return out


@pytest.fixture(scope="module")
def clean_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("faults")
    preds = _predictions(tmp_path)
    subprocess.run(_cmd(preds, tmp_path / "clean"), check=True, capture_output=True, timeout=900)
    return preds, tmp_path / "clean" / "tiny-sample-en-reference"


def _assert_same_as_clean(run_dir: Path, clean_dir: Path) -> None:
    store = ResultsStore(run_dir)
    for stage in ("tasks", "exec", "audit", "td", "text_expand"):
        assert store.read(stage, dedupe=False).num_rows == len(IDS), f"{stage}: a row was lost or written twice"
        assert _rows(run_dir, stage) == _rows(clean_dir, stage), stage
    by_id = {r["id"]: r for r in _rows(run_dir, "exec")}
    assert by_id["SAMPLE-EN-000004"]["success"] is False and by_id["SAMPLE-EN-000004"]["error"]
    assert sum(r["success"] for r in by_id.values()) == len(IDS) - 1


def _render_actor_pids(session: int) -> list[int]:
    """Render workers of the run started in process session ``session`` (never another run's on this host)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes()
                stat = (proc / "stat").read_text()
            except OSError:
                continue
            sid = int(stat.rsplit(")", 1)[1].split()[3])  # fields after "(comm)": state ppid pgrp session
            if cmd.startswith(b"ray::RenderActor") and sid == session:
                pids.append(int(proc.name))
    return pids


def test_kill_minus_9_then_resume_equals_clean_run(clean_run, tmp_path):
    preds, clean_dir = clean_run
    killed_root = tmp_path / "killed"

    proc = subprocess.Popen(_cmd(preds, killed_root), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    run_dir = killed_root / "tiny-sample-en-reference"
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
    # Killed mid-way: some rows landed, the run had not finished (it writes summary.json last).
    landed = sum(ResultsStore(run_dir).read(s).num_rows for s in ("exec", "audit", "td", "text_expand"))
    assert 0 < landed < 4 * len(IDS) and not (run_dir / "summary.json").exists()

    subprocess.run(_cmd(preds, killed_root), check=True, capture_output=True, timeout=900)
    _assert_same_as_clean(run_dir, clean_dir)


def test_render_worker_killed_mid_run_is_retried(clean_run, tmp_path):
    preds, clean_dir = clean_run
    root = tmp_path / "worker"
    # every render in an actor: the driver's head start can render all of these tiny scenes while Ray starts
    proc = subprocess.Popen(_cmd(preds, root, "execute.head_start=false"), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    victims: list[int] = []
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and proc.poll() is None and not victims:
            pids = _render_actor_pids(proc.pid)
            if pids:
                time.sleep(3)  # let it take a render
                victims = pids[:1]
                os.kill(victims[0], signal.SIGKILL)
            time.sleep(0.2)
        assert victims, "no render worker was seen"
        _, err = proc.communicate(timeout=900)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 0, err[-3000:]
    _assert_same_as_clean(root / "tiny-sample-en-reference", clean_dir)
