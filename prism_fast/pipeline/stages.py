"""The generic driver loop of a stage: the :class:`Stage` record (the table of ``eval``'s stages is
``pipeline/eval_stages.py``), :func:`run_stage` over it, and the actor loop underneath: skip finished keys, fan
jobs out over actors with bounded in-flight work, stream rows into the store, turn a lost job into an error row."""

from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from prism_fast.store import ResultsStore


@dataclass(frozen=True)
class Job:
    lang: str
    id: str
    args: tuple  # passed to the actor method after the id


@dataclass
class StageRun:
    """What every stage of one ``eval`` sees: its options, store, selection and settings fingerprints."""

    opts: Any  # pipeline.options.EvalOptions
    store: ResultsStore
    tasks: list  # dataset.loader.Task
    inputs: list  # execute.inputs.ScriptInput, one per task
    fps: Any = None  # pipeline.settings.RunFingerprints; None = untagged rows (library use)
    progress: Any = None  # pipeline.progress.StageProgress

    @functools.cached_property
    def _tasks_by_id(self) -> dict:
        return {t.id: t for t in self.tasks}

    def task(self, sample_id: str):
        return self._tasks_by_id[sample_id]

    def expected(self, stage: str):
        return self.fps.expected(stage) if self.fps is not None else None

    def tagger(self, stage: str):
        return (lambda lang, sid: self.fps.tag(stage, lang, sid)) if self.fps is not None else None


@dataclass(frozen=True)
class Stage:
    """One stage of ``eval``: the table in ``pipeline/eval_stages.py`` lists them in funnel order.

    ``jobs``: one job per selected task (the ones whose row is current are skipped here, generically).
    ``rows``: splits the pending jobs into rows known without a worker (no script, a failed gate) and the jobs
    left for the workers. ``actor``: (make_actor, method, n_actors) of a Ray-backed stage; a stage without one
    runs ``row`` per job in the driver. ``lost``: the fields of a job whose worker never returned; ``finish``:
    what every worker row goes through before it is stored."""

    name: str  # the store's stage, the timings key
    enabled: Callable[[Any], bool]  # options -> on?
    jobs: Callable[[StageRun], Iterable[Job]]
    rows: Callable[[StageRun, list[Job]], tuple[list[dict], list[Job]]] | None = None
    actor: Callable[[StageRun], tuple[Callable[[], Any], str, int]] | None = None
    row: Callable[[StageRun, Job], dict] | None = None
    lost: Callable[[Job, BaseException], dict] | None = None
    finish: Callable[[dict], dict] | None = None
    label: str | None = None  # progress bar label (default: name)
    # an actor method ``(id, row)`` called, once the stage's jobs are done, for each row the head start made
    # (pipeline/headstart.py), while the actors are still up: the Exec stage's TD decode of those videos
    head_follow_up: str | None = None


def stage_jobs(stage: Stage, run: StageRun) -> tuple[list[dict], list[Job]]:
    """(rows known without a worker, jobs left for the workers in hand-out order) of ``stage`` in ``run``."""
    opts = run.opts
    jobs = pending_jobs(run.store, stage.name, opts.model_name, stage.jobs(run), opts.retry_failed,
                        run.expected(stage.name))
    return stage.rows(run, jobs) if stage.rows is not None else ([], jobs)


def run_stage(stage: Stage, run: StageRun, prepared: tuple[list[dict], list[Job]] | None = None,
              head=None) -> None:
    """Run one stage over the pending jobs of ``run`` (``prepared``: :func:`stage_jobs`' answer, taken earlier)
    and store its rows. ``head``: the Exec stage's head start (pipeline/headstart.py), already rendering the
    back of ``prepared``'s jobs."""
    opts = run.opts
    immediate, jobs = prepared if prepared is not None else stage_jobs(stage, run)
    tag = run.tagger(stage.name)
    if stage.actor is None:  # cheap: in the driver, one row per job
        sink = RowSink(run.store, stage.name)
        bar = run.progress(stage.label or stage.name, len(jobs))
        for job in jobs:
            row = stage.row(run, job)
            if tag is not None:
                row.update(tag(job.lang, job.id))
            sink.add(row)
            bar.update(1, failed=row["status"] != "ok")
        sink.flush()
        bar.close()
        return
    make_actor, method, n = stage.actor(run)
    run_actor_stage(stage.name, run.store, opts.model_name, opts.profile.name, jobs, make_actor, method, n,
                    run.progress, immediate, stage.lost, transform=stage.finish, tag=tag, head=head,
                    head_follow_up=stage.head_follow_up)


class RowSink:
    """Buffers rows and appends them to the store when ``flush_rows`` rows or ``flush_seconds`` have
    accumulated (and at the end), so a killed driver loses at most a few seconds of finished work."""

    def __init__(self, store: ResultsStore, stage: str, flush_rows: int = 32, flush_seconds: float = 5.0):
        self.store, self.stage = store, stage
        self.flush_rows, self.flush_seconds = flush_rows, flush_seconds
        self.buf: list[dict] = []
        self.last_flush = time.monotonic()

    def add(self, row: dict) -> None:
        self.buf.append(row)
        if len(self.buf) >= self.flush_rows or time.monotonic() - self.last_flush >= self.flush_seconds:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            # no single row may stop a run: a row that fails validation is stored as its sample's error row
            self.store.append(self.stage, self.buf, invalid="error_row")
            self.buf = []
        self.last_flush = time.monotonic()


# Error kinds that say nothing about the sample (its worker vanished), or that another stage's row decided (a
# render that timed out left its audit skipped, audit/stage.py: the resumed run's Exec row may say otherwise):
# such rows are made again on every resume (a skipped audit again at no cost while the render still times out).
RETRIED_ON_RESUME = ("worker_lost", "render_timed_out")


def pending_jobs(store: ResultsStore, stage: str, model: str, jobs: Iterable[Job], retry_failed: bool,
                 expected: dict[tuple[str, str], tuple] | None = None) -> list[Job]:
    """The jobs whose key has no usable row yet. ``expected``: (lang, id) → (settings_sha256, inputs_sha256) of
    this run (pipeline/settings.py); a stored row with another pair was made with other settings and is
    recomputed."""
    done = store.done_keys(stage, include_failed=not retry_failed)
    if done and (not retry_failed or expected is not None):
        table = store.read(stage)
        cols = ("model", "lang", "id", "error_kind", "settings_sha256", "inputs_sha256")
        for m, l, i, kind, ssha, isha in zip(*(table.column(k).to_pylist() for k in cols)):
            if not retry_failed and kind in RETRIED_ON_RESUME:
                done.discard((m, l, i))
            elif expected is not None and m == model and (l, i) in expected and (ssha, isha) != expected[(l, i)]:
                done.discard((m, l, i))
    return [j for j in jobs if (model, j.lang, j.id) not in done]


def run_actor_stage(
    stage: str,
    store: ResultsStore,
    model: str,
    profile_name: str,
    jobs: list[Job],
    make_actor: Callable[[], Any],
    method: str,
    n_actors: int,
    progress,
    immediate_rows: Iterable[dict] = (),
    lost_row: Callable[[Job, BaseException], dict] | None = None,
    transform: Callable[[dict], dict] | None = None,
    tag: Callable[[str, str], dict] | None = None,
    head=None,
    head_follow_up: str | None = None,
    follow_up_timeout_s: float = 120.0,
) -> int:
    """Run ``jobs`` (already filtered to pending ones) on ``n_actors`` actors; returns rows written.

    ``tag(lang, id)``: fields every row of the sample gets (its settings fingerprint, pipeline/settings.py).
    ``head``: a :class:`~prism_fast.pipeline.headstart.HeadStart` rendering the back of ``jobs`` (its queue
    holds the items not taken yet) on one of the ``n_actors`` slots. ``head_follow_up``: an actor method called
    with ``(id, row)`` for each successful row of the head start once every job is done (its answers are not rows;
    what is not done within ``follow_up_timeout_s`` is dropped).
    Whatever an actor returns, no row stops the stage: a result that is not a row, or whose ``transform``
    raises, becomes the sample's error row (``error_kind=stage_exception``), and the store turns a row that fails
    validation into the sample's error row (``invalid_row``)."""
    from prism_fast.pipeline.streaming import WorkerKilledBySample, stream_map

    immediate = list(immediate_rows)
    sink = RowSink(store, stage)
    key = {"model": model, "profile": profile_name}

    def tagged(row: dict, lang: str, sample_id: str) -> dict:
        return {**key, **row, **(tag(lang, sample_id) if tag is not None else {}), "id": sample_id, "lang": lang}

    bar = progress(stage, len(jobs) + len(immediate))
    for row in immediate:
        sink.add(tagged(row, row["lang"], row["id"]))
        bar.update(1, failed=row.get("status") != "ok")
    if jobs:
        holds = False
        if head is None:
            items: Iterable[tuple] = ((j.id, *j.args) for j in jobs)
            actors = [make_actor() for _ in range(max(1, min(n_actors, len(jobs))))]
        else:
            items = iter(head.queue.pop_front, None)
            left = len(head.queue)
            # the head start has a slot of its own: with enough jobs left, the last actor waits for it
            holds = left >= n_actors
            actors = [make_actor() for _ in range(min(n_actors, left))]
            if holds:
                head.ready_ref = actors[-1].ready.remote()
        by_id = {j.id: j for j in jobs}

        def on_result(item, row):
            job = by_id[item[0]]
            try:
                if not isinstance(row, dict):
                    raise TypeError(f"the {method} call returned {type(row).__name__}, not a row")
                if transform is not None:
                    row = transform(row)
            except Exception as exc:  # noqa: BLE001 - the sample's error row, never the run's end
                row = {"status": "error", "error_kind": "stage_exception",
                       "error_detail": f"{type(exc).__name__} while recording the {stage} row: {exc}"[:4000]}
            sink.add(tagged(row, job.lang, job.id))
            bar.update(1, failed=row.get("status") != "ok")

        def on_error(item, exc):
            # worker_killed_by_sample: final (stream_map already gave it a second worker); worker_lost: retried
            # on resume (RETRIED_ON_RESUME)
            job = by_id[item[0]]
            kind = "worker_killed_by_sample" if isinstance(exc, WorkerKilledBySample) else "worker_lost"
            row = {"status": "error", "error_kind": kind, "error_detail": f"{type(exc).__name__}: {exc}"[:4000]}
            if lost_row is not None:
                row.update(lost_row(job, exc))
            sink.add(tagged(row, job.lang, job.id))
            bar.update(1, failed=True)

        finished = False
        try:  # stream_map swaps a dead actor for a fresh one in `actors`: the list always names the live ones
            stream_map(actors, method, items, on_result, on_error, make_actor=make_actor, side=head,
                       side_holds_slot=holds)
            finished = True
            if head is not None and head_follow_up is not None:
                if not actors and any(isinstance(r, dict) and r.get("success") for _, r in head.rendered):
                    actors.append(make_actor())  # the head start rendered every job: one worker for what it left
                follow_up(actors, head_follow_up, head.rendered, follow_up_timeout_s)
        finally:
            if head is not None:
                head.stop()
            sink.flush()
            # interrupted: an actor's close() would queue behind its running call (up to a render timeout)
            close_actors(actors, timeout_s=30.0 if finished else 0.0)
    sink.flush()
    bar.close()
    return len(jobs) + len(immediate)


def follow_up(actors: list, method: str, rendered: Iterable[tuple[tuple, Any]], timeout_s: float) -> int:
    """Call ``actor.<method>(id, row)`` for every successful ``(item, row)`` of ``rendered``, spread over
    ``actors``, and wait up to ``timeout_s`` for the answers (ignored: a follow-up never changes a row). Returns
    the number of calls made."""
    import ray

    todo = [(item[0], row) for item, row in rendered if isinstance(row, dict) and row.get("success")]
    refs = []
    for k, (sample_id, row) in enumerate(todo):
        if not actors:
            break
        try:
            refs.append(getattr(actors[k % len(actors)], method).remote(sample_id, row))
        except Exception:  # noqa: BLE001 - a dead actor: the stage that needs it does the work itself
            pass
    if refs:
        ray.wait(refs, num_returns=len(refs), timeout=timeout_s)
    return len(refs)


def close_actors(actors: Iterable[Any], timeout_s: float = 30.0) -> None:
    """``close()`` every actor that has one (its prefork worker and that worker's children exit), each on its
    own (a dead actor does not keep the others from closing), then kill them all (``timeout_s=0``: at once)."""
    import ray

    actors = list(actors)
    closing = []
    for a in actors if timeout_s > 0 else ():
        if hasattr(a, "close"):
            try:
                closing.append(a.close.remote())
            except Exception:  # noqa: BLE001 - a dead actor: killed below anyway
                pass
    if closing:
        ray.wait(closing, num_returns=len(closing), timeout=timeout_s)
    for a in actors:
        try:
            ray.kill(a, no_restart=True)
        except Exception:  # noqa: BLE001 - already gone
            pass
