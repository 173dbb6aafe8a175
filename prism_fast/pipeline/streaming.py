"""Bounded-in-flight fan-out of work items over a set of Ray actors.

Each actor has at most ``per_actor`` outstanding calls, so at most ``len(actors) × per_actor`` items are in
flight (backpressure: memory stays flat however many items there are) and a slow item never queues others
behind it on a busy actor. Results are handed to ``on_result`` as they complete; order never matters
downstream, because rows are keyed by (model, lang, id).

Failure isolation (docs/security.md): the actors are not restarted by Ray (``max_restarts=0``). An actor whose
process dies is replaced here by a fresh one (``make_actor``) and the item it was running goes back to the
queue, so no other item ever inherits that failure. An item that has now been in flight on
``max_worker_deaths`` dead workers is reported as :class:`WorkerKilledBySample` and not tried again. An actor
whose constructor fails is dropped without a replacement (it would fail for every item); its item is
re-queued at no cost to it.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any, Callable, Iterable, MutableSequence

import ray

log = logging.getLogger(__name__)

MAX_WORKER_DEATHS = 2  # an item that was in flight on this many dead workers is not tried again

# What a call reports when its worker process is gone (killed, crashed, OOM-killed, node lost).
_WORKER_DEATHS = tuple(getattr(ray.exceptions, n) for n in ("RayActorError", "WorkerCrashedError", "OutOfMemoryError",
                                                            "NodeDiedError", "LocalRayletDiedError")
                       if hasattr(ray.exceptions, n))


class WorkerKilledBySample(Exception):
    """An item whose call killed its worker process ``deaths`` times (retrying it would only kill more)."""

    def __init__(self, deaths: int, last: BaseException):
        self.deaths, self.last = deaths, last
        cause = str(last).splitlines()[0] if str(last) else type(last).__name__
        super().__init__(f"the worker process died {deaths} times while running this sample; not retried "
                         f"(last: {type(last).__name__}: {cause})")


class _Entry:
    __slots__ = ("item", "deaths")

    def __init__(self, item: tuple):
        self.item, self.deaths = item, 0


def stream_map(
    actors: MutableSequence[Any],
    method: str,
    items: Iterable[tuple],
    on_result: Callable[[tuple, Any], None],
    on_error: Callable[[tuple, BaseException], None],
    per_actor: int = 1,
    make_actor: Callable[[], Any] | None = None,
    max_worker_deaths: int = MAX_WORKER_DEATHS,
    side: Any = None,
    side_holds_slot: bool = False,
) -> None:
    """Call ``getattr(actor, method).remote(*item)`` for every item; report each result or error.

    A dead actor is replaced in place in ``actors`` by ``make_actor()`` (without a factory its slot is
    dropped), so the caller's list always names the actors to close. With ``per_actor=1`` (every stage) the
    death is charged to exactly the item that was running; with more, to every item in flight on that actor.

    ``side``: work done outside Ray on items of the same source (the Exec stage's head start,
    pipeline/headstart.py: ``busy()``, ``take_results()``, ``take_returned()``, ``wait()``, ``stop()``,
    ``ready_ref``); its results are reported through ``on_result`` here, in this thread, and items it gave back are
    re-queued. With ``side_holds_slot`` the last actor gets no item until the side is no longer busy, and the side is
    stopped once ``side.ready_ref`` (that actor's start) is done.
    """
    if not actors and side is None:
        raise ValueError("stream_map needs at least one actor")
    held = len(actors) - 1 if side is not None and side_holds_slot and actors else None
    free = deque(i for i in range(len(actors)) if i != held for _ in range(per_actor))
    live = set(range(len(actors)))
    watch = [side.ready_ref] if held is not None and side.ready_ref is not None else []
    pending: dict[ray.ObjectRef, tuple[int, Any, _Entry]] = {}
    requeued: deque[_Entry] = deque()
    it = iter(items)
    exhausted = False
    last_init_error: BaseException | None = None

    def next_entry() -> _Entry | None:
        nonlocal exhausted
        if requeued:
            return requeued.popleft()
        if exhausted:
            return None
        try:
            return _Entry(next(it))
        except StopIteration:
            exhausted = True
            return None

    while True:
        side_busy = side is not None and side.busy()  # (before its results: a finished side has stored them all)
        if side is not None:
            for item, result in side.take_results():
                on_result(item, result)
            requeued.extend(_Entry(item) for item in side.take_returned())
            if held is not None and not side_busy:
                free.extend([held] * per_actor)
                held = None
        while free:
            slot = free.popleft()
            if slot not in live:
                continue
            entry = next_entry()
            if entry is None:
                free.appendleft(slot)
                break
            actor = actors[slot]
            pending[getattr(actor, method).remote(*entry.item)] = (slot, actor, entry)
        if not pending and not side_busy:
            # all done, or every actor failed in its constructor and nothing can run the rest
            while (entry := next_entry()) is not None:
                on_error(entry.item, last_init_error or RuntimeError("no worker could be started"))
            return
        if not pending and not watch:  # only the side is working (it has a slot of its own)
            side.wait(0.05)
            continue
        # while the side works, look at it every 50 ms (its results, the slot it holds)
        done, _ = ray.wait([*pending, *watch], num_returns=1, timeout=0.05 if side_busy else None)
        for ref in done:
            if ref in watch:  # the actor taking the side's slot has started: the side takes no new item
                watch.remove(ref)
                try:
                    ray.get(ref)
                except Exception:  # noqa: BLE001 - it could not start: the side keeps working (its slot is
                    continue  # handed to that actor once the side is done, whose calls then fail and requeue)
                side.stop()
                continue
            slot, actor, entry = pending.pop(ref)
            try:
                result = ray.get(ref)
            except _WORKER_DEATHS as exc:  # the worker process is gone
                _actor_died(actors, slot, actor, exc, live, free, per_actor, make_actor)
                if getattr(exc, "actor_init_failed", False):
                    last_init_error = exc
                    requeued.append(entry)  # not this item's doing
                    continue
                entry.deaths += 1
                key = entry.item[0] if entry.item else None
                if entry.deaths >= max_worker_deaths:
                    log.error("%s: the worker died %d times running %r; recorded as killed by it, not retried",
                              method, entry.deaths, key)
                    on_error(entry.item, WorkerKilledBySample(entry.deaths, exc))
                else:
                    log.warning("%s: the worker died running %r (%d of %d); re-queued on a fresh worker", method,
                                key, entry.deaths, max_worker_deaths)
                    requeued.append(entry)
            except Exception as exc:  # the call failed without killing its worker: that item's error row
                _release(actors, slot, actor, free)
                on_error(entry.item, exc)
            else:
                _release(actors, slot, actor, free)
                on_result(entry.item, result)


def _release(actors: MutableSequence[Any], slot: int, actor: Any, free: deque) -> None:
    if actors[slot] is actor:  # (a call that a since replaced actor finished frees no slot of its successor)
        free.append(slot)


def _actor_died(actors: MutableSequence[Any], slot: int, actor: Any, exc: BaseException, live: set, free: deque,
                per_actor: int, make_actor: Callable[[], Any] | None) -> None:
    """Replace (or drop) the dead actor of ``slot``, once, whichever of its calls reports the death first."""
    if actors[slot] is not actor:  # already replaced when another of its calls failed
        return
    try:
        ray.kill(actor, no_restart=True)
    except Exception:  # noqa: BLE001 - already gone
        pass
    if make_actor is None or getattr(exc, "actor_init_failed", False):
        live.discard(slot)
        if getattr(exc, "actor_init_failed", False):
            log.error("a worker failed to start and is not replaced: %s", str(exc).splitlines()[0])
        return
    actors[slot] = make_actor()
    free.extend([slot] * per_actor)
