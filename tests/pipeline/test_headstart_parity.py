"""Red team of the Exec stage's head start (pipeline/headstart.py): a script rendered by the driver's lane must see
the very process state it sees in a render actor, and the driver must do nothing with a script's output that only
a Ray worker did before.

Real local Ray, real sandboxed prefork renders (no mocks): the same probe script goes through a ``RenderWorker`` in
this process (what the head start builds) and through a ``RenderActor``; the state the script reports (in its
error text) must be the same."""

from __future__ import annotations

import os
import re

import pytest

from tests.pipeline.conftest import compose_config

PROBE = r'''
import os, resource, signal, sys
from manim import *


class Probe(Scene):
    def construct(self):
        # what the sandbox hands on from its parent (sandbox.ENV_ALLOW); HOME, TMPDIR and the like name the scratch
        names = ("PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "TZ", "LD_LIBRARY_PATH",
                 "PYTHONHASHSEED", "SOURCE_DATE_EPOCH", "TEXMFCNF", "TEXMFHOME", "TEXMFVAR", "TEXMFCONFIG",
                 "TEXINPUTS", "FONTCONFIG_FILE", "FONTCONFIG_PATH", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                 "MKL_NUM_THREADS")
        env = {k: os.environ.get(k) for k in names}
        blocked = sorted(int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, []))
        ignored = sorted(s for s in range(1, 32) if s not in (9, 19) and signal.getsignal(s) is signal.SIG_IGN)
        limits = [resource.getrlimit(getattr(resource, n)) for n in ("RLIMIT_STACK", "RLIMIT_CORE", "RLIMIT_MEMLOCK")]
        with open("/proc/self/oom_score_adj") as fh:
            oom = fh.read().strip()
        print("PROBE " + repr((env, sorted(os.environ), blocked, ignored, limits, os.nice(0), oom)), file=sys.stderr,
              flush=True)
        raise SystemExit(3)
'''


def _probe_line(row: dict) -> str:
    text = "\n".join(str(row.get(k) or "") for k in ("error", "error_detail", "stderr_tail"))
    found = re.findall(r"^PROBE \(.*$", text, re.M)
    assert found, row
    return found[-1]


@pytest.fixture(scope="module")
def render_opts(tmp_path_factory):
    from prism_fast.execute import sandbox
    from prism_fast.pipeline.run import options_from_config

    if sandbox.effective_level("auto") not in ("namespaces", "bwrap"):
        pytest.skip("the head start runs only at the namespaces/bwrap sandbox levels")
    root = tmp_path_factory.mktemp("parity")
    opts = options_from_config(compose_config(f"runs_root={root}", "cluster.num_cpus=2",
                                              "execute.cache.enabled=false", "execute.tex_cache.enabled=false"))
    return opts, root


def _lane_and_actor_rows(render_opts, out_name: str, script: str) -> tuple[dict, dict]:
    """The script's Exec row from a ``RenderWorker`` in this process (the head start's) and from a ``RenderActor``."""
    import ray

    from prism_fast.pipeline.actors import RenderActor, RenderWorker
    from prism_fast.pipeline.ray_runtime import ensure_ray

    opts, root = render_opts
    args = (opts.render, opts.profile, str(root / out_name), True)
    local = RenderWorker(*args)  # the head start's worker: in this (the driver's) process
    try:
        lane_row = local.render("PROBE-000001", script)
    finally:
        local.close()
    ensure_ray(num_cpus=2)
    actor = RenderActor.remote(*args)
    try:
        actor_row = ray.get(actor.render.remote("PROBE-000002", script))
    finally:
        ray.get(actor.close.remote())
        ray.kill(actor)
    return lane_row, actor_row


def test_a_script_sees_the_same_process_state_in_the_head_start_lane_and_in_a_render_actor(render_opts):
    """The lane is documented as 'the very body of a RenderActor: same sandbox, same prefork server, same row'. A
    Ray worker process is not a plain Python process, though: Ray sets OMP_NUM_THREADS to the actor's CPUs when
    it is unset (an allow-listed variable the sandbox hands on to the script, and the BLAS thread count of the
    prefork server that imports numpy) and its workers are started with SIGINT blocked (a mask every descendant
    inherits). A script that reports either renders a different row in the driver's lane."""
    lane_row, actor_row = _lane_and_actor_rows(render_opts, "out", PROBE)
    assert lane_row["status"] == actor_row["status"] == "failed"
    assert _probe_line(lane_row) == _probe_line(actor_row)
    for key in ("error_kind", "exit_status", "signal", "sandbox", "sandbox_protections", "backend"):
        assert lane_row.get(key) == actor_row.get(key), key


INTERRUPTED = r"""
import os, signal
from manim import *


class Interrupted(Scene):
    def construct(self):
        os.kill(os.getpid(), signal.SIGINT)  # what Ctrl-C does to `manim` run from a shell: KeyboardInterrupt
        self.add(Dot())
        self.wait(0.1)
"""


def test_a_script_interrupting_itself_renders_the_same_row_in_the_lane_and_in_an_actor(render_opts):
    """A script that sends itself SIGINT gets a KeyboardInterrupt in a plain process (the toolkit's `manim`, the
    driver's lane) but nothing at all where SIGINT is blocked: Ray starts its raylet with SIGINT blocked and every
    worker, prefork server and sample inherits that mask. The same script must give one row wherever it renders,
    the toolkit's (failed)."""
    lane_row, actor_row = _lane_and_actor_rows(render_opts, "out_sigint", INTERRUPTED)
    assert (lane_row["success"], lane_row["exit_status"]) == (actor_row["success"], actor_row["exit_status"])
    assert not lane_row["success"]


def test_the_driver_never_decodes_a_video_the_head_start_rendered(tmp_path, monkeypatch, caplog):
    """The driver builds TD rows 'without decoding' (eval_stages._td_rows): a video is a script's output (a script
    can leave any bytes at manim's output path from an atexit handler), and decoding it (OpenCV/FFmpeg, in-process)
    belongs in a Ray worker, never in the process that holds the run's secrets and the store. A RenderActor decodes
    its fresh video for the TD stage (td_pre); the head start's worker is the same class in the driver, and must
    leave that decode to the TD stage's actors (which give the same row: metrics/td_store.py)."""
    import logging

    from prism_fast.metrics import td as td_module
    from prism_fast.pipeline.run import options_from_config, run_eval

    decoded_here: list[str] = []
    real = td_module.compute_td_raw

    def spy(video_path, *args, **kwargs):
        decoded_here.append(str(video_path))  # (a monkeypatch reaches this process only: actors are not spied on)
        return real(video_path, *args, **kwargs)

    monkeypatch.setattr(td_module, "compute_td_raw", spy)
    from prism_fast.video import scan as scan_module

    real_read = scan_module.read_frames_at

    def spy_read(video_path, *args, **kwargs):  # the video witness's own decode (video/witness.py)
        decoded_here.append(str(video_path))
        return real_read(video_path, *args, **kwargs)

    monkeypatch.setattr(scan_module, "read_frames_at", spy_read)
    ids = "SAMPLE-EN-000001,SAMPLE-EN-000002"
    cfg = compose_config(f"runs_root={tmp_path}", f"dataset.ids=[{ids}]", "cluster.num_cpus=2", "execute.workers=1",
                         "execute.cache.enabled=false", "audit.cache=false", "execute.tex_cache.format=false",
                         "execute.head_start=true", "metrics.td.enabled=true")
    opts = options_from_config(cfg)
    with caplog.at_level(logging.INFO, logger="prism_fast.pipeline.headstart"):
        run_eval(opts)
    said = [r.getMessage() for r in caplog.records if r.name == "prism_fast.pipeline.headstart"]
    assert any(m.startswith("the Exec stage's head start rendered") and " 0 sample" not in m for m in said), said
    assert decoded_here == []
    from prism_fast.store import ResultsStore

    td_rows = ResultsStore(opts.run_dir).read("td").to_pylist()
    assert len(td_rows) == 2 and all(r.get("status") == "ok" for r in td_rows), td_rows
    # ... and the render actor decoded the head start's videos at the Exec stage's end (RenderWorker.head_start_video:
    # the video witness of their audit rows and the TD decode), so the TD stage started no actor: every rendered video
    # has its stored TD_raw, every audit row its witness
    audit_rows = ResultsStore(opts.run_dir).read("audit").to_pylist()
    assert [r["video_consistency"] for r in audit_rows] == ["ok", "ok"], audit_rows
    from prism_fast.metrics import td_store
    from prism_fast.pipeline.options import model_output_dir

    exec_rows = ResultsStore(opts.run_dir).read("exec").to_pylist()
    assert [r["id"] for r in exec_rows if r["success"]], exec_rows
    for r in exec_rows:
        assert td_store.entry_path(model_output_dir(opts), r["id"]).is_file() == bool(r["success"]), r["id"]
