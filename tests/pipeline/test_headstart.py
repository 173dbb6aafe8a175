"""The Exec stage's head start (pipeline/headstart.py, issue #19 item 4): the driver renders the back of the
schedule while Ray starts, in one of the stage's worker slots, never in one more.

Real local Ray, the real stage driver (``run_actor_stage`` → ``stream_map``), a real store; the last test runs
real sandboxed renders through ``run_eval`` with the head start on and off and compares every row."""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from concurrent.futures import Future
from pathlib import Path

import pyarrow as pa
import pytest
import ray

from prism_fast.pipeline.actors import RESTARTS
from prism_fast.pipeline.headstart import HeadStart, JobQueue
from prism_fast.pipeline.progress import StageProgress
from prism_fast.pipeline.stages import Job, run_actor_stage
from prism_fast.schema import register_stage
from prism_fast.store import ResultsStore

from tests.pipeline.conftest import compose_config

STAGE = "head_start_probe"
register_stage(STAGE, [("pid", pa.int64()), ("start", pa.float64()), ("end", pa.float64())])
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class Sleeper:
    """Stands in for a render worker: each item sleeps ``seconds`` and says where and when it ran."""

    def __init__(self, gate: str | None = None):
        if gate is not None:  # the actor that takes the head start's slot: up only once the test opens the gate
            while not Path(gate).exists():
                time.sleep(0.01)

    def ready(self) -> bool:
        return True

    def work(self, sample_id: str, seconds: float) -> dict:
        start = time.time()
        time.sleep(seconds)
        return {"status": "ok", "pid": os.getpid(), "start": start, "end": time.time()}


SleeperActor = ray.remote(num_cpus=0, **RESTARTS)(Sleeper)


@pytest.fixture(scope="module", autouse=True)
def _ray():
    from prism_fast.pipeline.ray_runtime import ensure_ray

    ensure_ray(num_cpus=2)


def _max_concurrent(rows) -> int:
    events = sorted([(r["start"], 1) for r in rows] + [(r["end"], -1) for r in rows], key=lambda e: (e[0], e[1]))
    now = peak = 0
    for _, d in events:
        now += d
        peak = max(peak, now)
    return peak


@pytest.mark.parametrize("n_actors", [1, 2])
def test_the_head_start_takes_a_slot_from_the_back_and_hands_it_over(tmp_path, n_actors):
    jobs = [Job("en", f"S{i:02d}", (0.4,)) for i in range(8)]
    queue = JobQueue((j.id, *j.args) for j in jobs)
    head = HeadStart(Sleeper, "work", queue).start()
    while len(queue) == len(jobs):  # the head start has taken its first item (from the back)
        time.sleep(0.01)
    gate = tmp_path / "gate"
    opened = threading.Timer(1.0, gate.touch)  # the last actor starts a second later: the head start renders on
    opened.start()
    made = []

    def make():
        made.append(1)
        # the actor taking the head start's slot is the last one made before the stage starts
        return SleeperActor.remote(str(gate) if len(made) == n_actors else None)

    store = ResultsStore(tmp_path / "run")
    run_actor_stage(STAGE, store, "m", "reference", jobs, make, "work", n_actors, StageProgress, head=head)
    opened.join()
    rows = {r["id"]: r for r in store.read(STAGE).to_pylist()}
    assert set(rows) == {j.id for j in jobs} and all(r["status"] == "ok" for r in rows.values())
    assert len(store.read(STAGE)) == len(jobs)  # every item exactly once
    local = sorted((sid for sid, r in rows.items() if r["pid"] == os.getpid()), key=lambda sid: rows[sid]["start"])
    assert local and local[0] == "S07"  # the driver rendered, starting from the back of the schedule
    assert "S00" not in local  # the front went to the actors
    assert len(local) < len(jobs)  # and it handed its slot over once the last actor was up
    assert _max_concurrent(rows.values()) <= n_actors  # never one worker more than asked for
    assert head.wait(5.0) and not head.busy()


def test_a_head_start_that_cannot_start_leaves_every_item_to_the_actors(tmp_path, caplog):
    jobs = [Job("en", f"S{i:02d}", (0.05,)) for i in range(4)]

    def broken():
        raise RuntimeError("no prefork server here")

    queue = JobQueue((j.id, *j.args) for j in jobs)
    head = HeadStart(broken, "work", queue).start()
    with caplog.at_level(logging.WARNING, logger="prism_fast.pipeline.headstart"):
        head.wait(10.0)
    assert "head start stopped after 0 render(s) (RuntimeError: no prefork server here)" in caplog.text
    store = ResultsStore(tmp_path / "run")
    run_actor_stage(STAGE, store, "m", "reference", jobs, lambda: SleeperActor.remote(None), "work", 2, StageProgress,
                    head=head)
    rows = store.read(STAGE).to_pylist()
    assert sorted(r["id"] for r in rows) == [j.id for j in jobs]
    assert all(r["status"] == "ok" and r["pid"] != os.getpid() for r in rows)


class EarlyWorker:
    """A worker that may start before its configuration is known (``render_early``), as ``RenderWorker`` does
    while the driver builds the LaTeX format; each item returns the configuration it ran under."""

    def __init__(self, early: bool):
        self.render_cfg, self.early, self.taken = "base", early, []

    def render_early(self) -> bool:
        if not self.early:
            return False
        self.render_cfg = "early"
        return True

    def use_render_cfg(self, cfg) -> None:
        self.taken.append(cfg)
        self.render_cfg = cfg

    def work(self, sample_id: str, arrives: Future | None) -> str:
        used = self.render_cfg
        if arrives is not None:  # the configuration becomes known while this item runs
            arrives.set_result("final")
        return used


@pytest.mark.parametrize("early", [True, False])
def test_the_head_start_renders_before_the_format_is_built_only_where_the_worker_can(early):
    """``render_early`` workers start under their early configuration and take the final one before their first
    item after it is known; any other worker waits for it (its first item already runs under the final one)."""
    cfg: Future = Future()
    queue = JobQueue([("S00", None), ("S01", None), ("S02", cfg if early else None)])
    worker = EarlyWorker(early)
    if not early:
        threading.Timer(0.3, cfg.set_result, ("final",)).start()
    head = HeadStart(lambda: worker, "work", queue, cfg).start()
    assert head.wait(10.0)
    done = {item[0]: result for item, result in head.take_results()}
    if early:
        assert done == {"S02": "early", "S01": "final", "S00": "final"} and worker.taken == ["final"]
    else:
        assert done == {"S02": "final", "S01": "final", "S00": "final"} and worker.taken == ["final"]


def test_a_render_worker_defers_the_format_and_then_takes_the_actors_configuration(tmp_path):
    """``RenderWorker.render_early``: its renders and separate audits defer the format (compile in full, rows
    ``not_ready``: tests/execute/test_texformat.py renders both ways) until ``use_render_cfg`` hands over the
    configuration the actors get; a worker whose format is off has nothing to wait for."""
    from dataclasses import replace

    from prism_fast.audit.config import AuditConfig
    from prism_fast.execute.render import RenderConfig
    from prism_fast.pipeline.actors import RenderWorker
    from prism_fast.profile import REFERENCE

    cfg = RenderConfig(tex_cache_dir=str(tmp_path / "tex"))
    worker = RenderWorker(cfg, REFERENCE, str(tmp_path / "out"), prefork=False, onepass=AuditConfig().to_dict(),
                          audit_dir=str(tmp_path / "audit"))
    assert not worker.render_cfg.tex_format_deferred and not worker.auditor.tex_format_deferred
    assert worker.render_early()
    assert worker.render_cfg.tex_format and worker.render_cfg.tex_format_deferred
    assert worker.auditor.tex_format and worker.auditor.tex_format_deferred
    final = replace(cfg, tex_format_prebuilt=("format.fmt", "0" * 64, "env"))
    worker.use_render_cfg(final)
    assert worker.render_cfg is final and worker.auditor.tex_format and not worker.auditor.tex_format_deferred
    off = RenderWorker(replace(cfg, tex_format=False), REFERENCE, str(tmp_path / "out"), prefork=False,
                       onepass=AuditConfig().to_dict(), audit_dir=str(tmp_path / "audit"))
    assert not off.render_early() and not off.render_cfg.tex_format_deferred and not off.auditor.tex_format


VOLATILE = {"written_at_ns", "runtime_sec", "wall_s", "cpu_s", "peak_rss_mb", "stderr_tail", "stdout_bytes",
            "stderr_bytes", "audit_runtime_sec", "onepass_audit_s", "report_path"}


# which sample publishes a TeX cache entry first depends on the order of the renders (as with execute.schedule)
ORDER = {"tex_cache_published", "tex_cache_hits"}


def _rows(run_dir: Path) -> dict:
    """Every exec/audit/TD row by (stage, id), without timings; each video's bytes in place of its path, and the
    run directory's path replaced by RUN in every other text."""
    store = ResultsStore(run_dir)
    out = {}
    for stage in ("exec", "audit", "td"):
        for r in store.read(stage).to_pylist():
            row = {k: (v.replace(str(run_dir), "RUN") if isinstance(v, str) else v) for k, v in r.items()
                   if k not in VOLATILE | ORDER}
            if stage == "exec" and r.get("video_path"):
                row["video_path"] = Path(r["video_path"]).read_bytes()
            out[(stage, r["id"])] = row
    return out


# the LaTeX format's provenance: the head start renders without it until the driver has built it (not_ready)
FORMAT = ("tex_format", "tex_format_compiles")


def _format_ready_after_the_lanes_first_render(monkeypatch) -> None:
    """Make the driver's render configuration (which names its LaTeX format) known exactly when the head start's
    first render returns, whatever the machine's speed: the lane's first sample is then always rendered before the
    format is ready and every later one after (the Ray actors wait for the configuration as usual)."""
    from prism_fast.pipeline import run as run_mod
    from prism_fast.pipeline.actors import RenderWorker

    real_config, real_render = run_mod._render_config, RenderWorker.render
    held: Future = Future()
    args: list = []

    def render_config(opts, prebuild):
        args.extend((opts, prebuild))
        return held

    def release() -> None:
        if not held.done():
            held.set_result(real_config(*args).result())

    def render(self, *a):
        try:
            return real_render(self, *a)
        finally:  # in the lane's thread: the configuration is known before the lane looks for its next item
            release()

    safety = threading.Timer(300.0, release)  # a lane that never renders must not hang the run
    safety.daemon = True
    safety.start()
    monkeypatch.setattr(run_mod, "_render_config", render_config)
    monkeypatch.setattr(RenderWorker, "render", render)


@pytest.mark.parametrize("tex_format", [False, True])
def test_rows_are_the_same_with_and_without_the_head_start(tmp_path, caplog, monkeypatch, tex_format):
    """Three bundled samples, one render worker, each run on a fresh runs_root: with the head start the driver
    renders the back of the schedule while Ray starts (seen in its log line), and every exec, audit and TD row equals
    the run without it. With the LaTeX format on, the format is built while Ray starts (no earlier run published
    one); the lane renders its first sample before the format is ready (held until then here): only that row's
    ``tex_format`` says so (``not_ready``, no compile from the format), every other field, the videos included,
    and every other row (``on``) are the same."""
    from prism_fast.pipeline.run import options_from_config, run_eval

    ids = "SAMPLE-EN-000001,SAMPLE-EN-000002,SAMPLE-ZH-000001"
    results = {}
    for head_start in (False, True):
        cfg = compose_config(f"runs_root={tmp_path / str(head_start)}", f"dataset.ids=[{ids}]", "cluster.num_cpus=2",
                             "execute.workers=1", "execute.cache.enabled=false", "audit.cache=false",
                             f"execute.tex_cache.format={str(tex_format).lower()}",
                             f"execute.head_start={str(head_start).lower()}")
        opts = options_from_config(cfg)
        if head_start and tex_format:
            _format_ready_after_the_lanes_first_render(monkeypatch)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="prism_fast.pipeline.headstart"):
            run_eval(opts)
        monkeypatch.undo()
        results[head_start] = _rows(opts.run_dir)
        said = [r.getMessage() for r in caplog.records if r.name == "prism_fast.pipeline.headstart"]
        if head_start:
            assert any(m.startswith("the Exec stage's head start rendered") and " 0 sample" not in m for m in said), said
            early = any("renders without the LaTeX format" in m for m in said)
        else:
            assert not said
    formats = {head_start: {k: tuple(r.pop(f, None) for f in FORMAT) for k, r in rows.items() if k[0] != "td"}
               for head_start, rows in results.items()}
    assert results[True] == results[False]
    assert len(results[True]) == 9 and all(r.get("success", True) for k, r in results[True].items() if k[0] == "exec")
    if not tex_format:
        assert formats[True] == formats[False]
        assert {v[0] for k, v in formats[True].items() if k[0] == "exec"} == {"off"}
        assert not early
        return
    # every render of the run without a head start used the format; the audits are shared with the renders here
    assert {v[0] for k, v in formats[False].items() if k[0] == "exec"} == {"on"}
    assert {k: v for k, v in formats[True].items() if k[0] == "audit"} == \
        {k: v for k, v in formats[False].items() if k[0] == "audit"}
    labels = sorted(v[0] for k, v in formats[True].items() if k[0] == "exec")
    assert early and labels == ["not_ready", "on", "on"], labels
    # the one early render compiled without the format; the same sample with it compiled from the format if it used
    # MathTex at all
    (sid,) = [k for k, v in formats[True].items() if v[0] == "not_ready"]
    assert formats[True][sid] == ("not_ready", 0) and formats[False][sid][0] == "on"


def test_the_driver_builds_the_latex_format_once_per_cache(tmp_path):
    """The head start waits for the render configuration, which waits for the driver's LaTeX format (≈ 3 s to
    build and self-check): the first run of a runs_root builds it and publishes it under the TeX cache root; the next
    run takes the published one at once (tests/execute/test_texformat.py checks what it takes)."""
    from prism_fast.execute import texformat
    from prism_fast.pipeline.eval_stages import STAGES
    from prism_fast.pipeline.run import _start_format_prebuild, options_from_config

    opts = options_from_config(compose_config(f"runs_root={tmp_path}", "cluster.num_cpus=2"))
    stages = [s for s in STAGES if s.enabled(opts)]
    future, where = _start_format_prebuild(opts, stages)
    built, why = future.result()
    assert built is not None, why
    assert where is not None and Path(where) in built.path.parents  # this run's own copy
    future2, where2 = _start_format_prebuild(opts, stages)
    assert where2 is None and future2.done()  # nothing built
    taken, _ = future2.result()
    assert taken.sha256 == built.sha256
    assert taken.path.parent == Path(opts.render.tex_cache_dir).resolve() / texformat.PUBLISHED_DIR
