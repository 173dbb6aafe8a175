"""Bounded-in-flight fan-out of work items over a set of Ray actors.

Each actor has at most ``per_actor`` outstanding calls, so at most ``len(actors) × per_actor`` items are in
flight (backpressure: memory stays flat however many items there are) and a slow item never queues others
behind it on a busy actor. Results are handed to ``on_result`` as they complete; order never matters
downstream, because rows are keyed by (model, lang, id).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Iterable, Sequence

import ray


def stream_map(
    actors: Sequence[Any],
    method: str,
    items: Iterable[tuple],
    on_result: Callable[[tuple, Any], None],
    on_error: Callable[[tuple, BaseException], None],
    per_actor: int = 1,
) -> None:
    """Call ``getattr(actor, method).remote(*item)`` for every item; report each result or error."""
    if not actors:
        raise ValueError("stream_map needs at least one actor")
    free = deque(a for a in actors for _ in range(per_actor))
    pending: dict[ray.ObjectRef, tuple[Any, tuple]] = {}
    it = iter(items)
    exhausted = False
    while True:
        while free and not exhausted:
            try:
                item = next(it)
            except StopIteration:
                exhausted = True
                break
            actor = free.popleft()
            pending[getattr(actor, method).remote(*item)] = (actor, item)
        if not pending:
            return
        done, _ = ray.wait(list(pending), num_returns=1)
        for ref in done:
            actor, item = pending.pop(ref)
            free.append(actor)
            try:
                result = ray.get(ref)
            except Exception as exc:  # retries exhausted (actor died repeatedly): the item becomes an error row
                on_error(item, exc)
            else:
                on_result(item, result)
