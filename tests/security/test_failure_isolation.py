"""Failure isolation (issue #13, docs/security.md): a sample whose job kills its worker process costs that sample
its row, never another sample's. Real local Ray, the real stage driver (``run_actor_stage`` → ``stream_map``)
and a real results store; no mocks.

The killing job is a test-only hook: a *trusted* test actor kills its own process when its item says so. A
model-written script can no longer reach its worker through the sandbox, but the driver's handling of a
dead worker is the same whoever killed it."""

from __future__ import annotations

import hashlib
import os
import signal
import sys
from pathlib import Path

import pyarrow as pa
import pytest
import ray

from prism_fast.pipeline.actors import RESTARTS, AuditActor, RenderActor, VideoMetricsActor, contained
from prism_fast.pipeline.progress import StageProgress
from prism_fast.pipeline.stages import Job, pending_jobs, run_actor_stage
from prism_fast.schema import register_stage
from prism_fast.store import ResultsStore

STAGE = "isolation_probe"
register_stage(STAGE, [("value", pa.string()), ("pid", pa.int64())])
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the workers need not import this test file

CLEAN = [Job("en", f"S{i:02d}", (f"clean-{i}",)) for i in range(6)]
KILLER = Job("en", "S-KILLER", ("kill",))


@ray.remote(num_cpus=1, **RESTARTS)
class Probe:
    """Stands in for a render actor. Payloads: ``kill`` (the job kills this very process, as a script that
    reached its parent would: SIGKILL), ``exit`` / ``interrupt`` / ``error`` (the job raises SystemExit /
    KeyboardInterrupt / ValueError on a path a script can trigger), anything else: a clean result."""

    def __init__(self, marks: str, fail_init: bool = False):
        if fail_init:
            raise RuntimeError("this worker cannot start")
        self.marks = marks

    @contained(lambda detail, payload: {"value": None})
    def work(self, sample_id: str, payload: str) -> dict:
        if payload == "kill":
            (Path(self.marks) / f"{sample_id}.{os.getpid()}").touch()
            os.kill(os.getpid(), signal.SIGKILL)
        if payload == "exit":
            raise SystemExit(3)
        if payload == "interrupt":
            raise KeyboardInterrupt
        if payload == "error":
            raise ValueError("boom")
        return {"status": "ok", "value": hashlib.sha256(payload.encode()).hexdigest(), "pid": os.getpid()}


@pytest.fixture(scope="module", autouse=True)
def _ray():
    from prism_fast.pipeline.ray_runtime import ensure_ray

    ensure_ray(num_cpus=2)


def _run(root: Path, jobs: list[Job], n_actors: int = 2, make=None) -> dict[str, dict]:
    marks = root / "marks"
    marks.mkdir(parents=True, exist_ok=True)
    store = ResultsStore(root / "run")
    run_actor_stage(STAGE, store, "m", "p", jobs, make or (lambda: Probe.remote(str(marks))), "work", n_actors,
                    StageProgress)
    assert store.read(STAGE, dedupe=False).num_rows == len(jobs), "a row was lost or written twice"
    return {r["id"]: r for r in store.read(STAGE).to_pylist()}


def _stable(row: dict) -> dict:
    return {k: v for k, v in row.items() if k not in ("pid", "written_at_ns")}


def test_a_job_that_kills_its_worker_costs_only_its_own_row(tmp_path):
    clean = _run(tmp_path / "clean", CLEAN)
    assert all(r["status"] == "ok" for r in clean.values())

    jobs = CLEAN[:2] + [KILLER] + CLEAN[2:]
    rows = _run(tmp_path / "killer", jobs)
    # every other sample: exactly the rows of a run without the killer
    assert {i: _stable(r) for i, r in rows.items() if i != KILLER.id} == {i: _stable(r) for i, r in clean.items()}
    killer = rows[KILLER.id]
    assert (killer["status"], killer["error_kind"]) == ("error", "worker_killed_by_sample")
    assert "died 2 times" in killer["error_detail"]
    # exactly two worker deaths, on two different workers: re-queued once on a fresh actor, then given up
    deaths = sorted(p.name for p in (tmp_path / "killer" / "marks").iterdir())
    assert len(deaths) == 2 and all(d.startswith(KILLER.id + ".") for d in deaths)
    assert len({d.rsplit(".", 1)[1] for d in deaths}) == 2

    # resume: the killer's row is final (no third death), like any failed row
    store = ResultsStore(tmp_path / "killer" / "run")
    assert pending_jobs(store, STAGE, "m", jobs, retry_failed=False) == []


def test_base_exceptions_of_a_job_become_its_row_and_the_actor_lives_on(tmp_path):
    payloads = ["a", "exit", "b", "interrupt", "c", "error", "d"]
    jobs = [Job("en", f"E{i}", (p,)) for i, p in enumerate(payloads)]
    rows = _run(tmp_path, jobs, n_actors=1)
    for job, payload in zip(jobs, payloads):
        row = rows[job.id]
        if payload in ("exit", "interrupt", "error"):
            assert (row["status"], row["error_kind"]) == ("error", "worker_exception"), row
            assert row["error_detail"].startswith({"exit": "SystemExit", "interrupt": "KeyboardInterrupt",
                                                   "error": "ValueError: boom"}[payload])
        else:
            assert row["status"] == "ok" and row["value"] == hashlib.sha256(payload.encode()).hexdigest()
    assert len({r["pid"] for r in rows.values() if r["status"] == "ok"}) == 1  # one actor process throughout
    assert not any((tmp_path / "marks").iterdir())


def test_a_worker_that_cannot_start_is_dropped_without_charging_a_sample(tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    made = []

    def make():  # the first actor fails in its constructor, every later one starts
        made.append(1)
        return Probe.remote(str(marks), fail_init=len(made) == 1)

    rows = _run(tmp_path, CLEAN, make=make)
    assert all(r["status"] == "ok" for r in rows.values())
    assert len(made) == 2  # the broken one is not replaced over and over

    rows = _run(tmp_path / "none", CLEAN[:2], make=lambda: Probe.remote(str(marks), fail_init=True))
    assert {r["error_kind"] for r in rows.values()} == {"worker_lost"}  # nothing ran: retried on resume


def test_worker_lost_rows_are_retried_on_resume_other_failures_are_not(tmp_path):
    store = ResultsStore(tmp_path)
    kinds = {"L": "worker_lost", "K": "worker_killed_by_sample", "X": "worker_exception", "O": None}
    store.append(STAGE, [{"model": "m", "lang": "en", "id": i, "status": "error" if k else "ok", "error_kind": k}
                         for i, k in kinds.items()])
    jobs = [Job("en", i, ()) for i in kinds]
    assert [j.id for j in pending_jobs(store, STAGE, "m", jobs, retry_failed=False)] == ["L"]
    assert [j.id for j in pending_jobs(store, STAGE, "m", jobs, retry_failed=True)] == ["L", "K", "X"]


@pytest.mark.parametrize("actor,method", [(RenderActor, "render"), (AuditActor, "audit"),
                                          (VideoMetricsActor, "td")])
def test_every_stage_actor_is_contained_and_not_restarted_by_ray(actor, method):
    meta = actor.__ray_metadata__
    assert (meta.max_restarts, meta.max_task_retries) == (0, 0)  # stream_map replaces; Ray's budget is shared
    assert getattr(getattr(meta.modified_class, method), "__wrapped__", None) is not None  # @contained
