"""Generic driver loop of one actor-backed stage: skip finished keys, fan jobs out over actors with bounded
in-flight work, stream rows into the store, turn a lost job into an error row."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from prism_fast.store import ResultsStore


@dataclass(frozen=True)
class Job:
    lang: str
    id: str
    args: tuple  # passed to the actor method after the id


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
            self.store.append(self.stage, self.buf)
            self.buf = []
        self.last_flush = time.monotonic()


def pending_jobs(store: ResultsStore, stage: str, model: str, jobs: Iterable[Job], retry_failed: bool) -> list[Job]:
    done = store.done_keys(stage, include_failed=not retry_failed)
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
) -> int:
    """Run ``jobs`` (already filtered to pending ones) on ``n_actors`` actors; returns rows written."""
    import ray

    from prism_fast.pipeline.streaming import stream_map

    immediate = list(immediate_rows)
    sink = RowSink(store, stage)
    key = {"model": model, "profile": profile_name}
    bar = progress(stage, len(jobs) + len(immediate))
    for row in immediate:
        sink.add({**key, **row})
        bar.update(1, failed=row.get("status") != "ok")
    if jobs:
        actors = [make_actor() for _ in range(max(1, min(n_actors, len(jobs))))]
        by_id = {j.id: j for j in jobs}

        def on_result(item, row):
            job = by_id[item[0]]
            if transform is not None:
                row = transform(row)
            sink.add({**key, **row, "id": job.id, "lang": job.lang})
            bar.update(1, failed=row.get("status") != "ok")

        def on_error(item, exc):
            job = by_id[item[0]]
            row = {"status": "error", "error_kind": "worker_lost",
                   "error_detail": f"{type(exc).__name__}: {exc}"[:4000]}
            if lost_row is not None:
                row.update(lost_row(job, exc))
            sink.add({**key, **row, "id": job.id, "lang": job.lang})
            bar.update(1, failed=True)

        try:
            stream_map(actors, method, ((j.id, *j.args) for j in jobs), on_result, on_error)
        finally:
            sink.flush()
            closing = [a.close.remote() for a in actors if hasattr(a, "close")]
            try:
                ray.get(closing, timeout=30)
            except Exception:  # an actor that cannot close cleanly is killed below anyway
                pass
            for a in actors:
                ray.kill(a)
    sink.flush()
    bar.close()
    return len(jobs) + len(immediate)
