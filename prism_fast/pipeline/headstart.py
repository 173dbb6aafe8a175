"""The Exec stage's head start: renders in the driver process while Ray starts (issue #19 item 4).

Starting this run's own Ray instance takes ≈ 4.5 s here, then a render actor ≈ 0.4 s and its prefork manim
server ≈ 1.3 s: without a head start the first render began ≈ 9 s after the command. With it, right after the
dataset stage (before ``ray.init``) the driver builds one :class:`~prism_fast.pipeline.actors.RenderWorker` -- the
very body of a ``RenderActor``: same sandbox, same prefork server, same row -- in a thread, and renders the Exec
stage's jobs from the **end** of the schedule (the expected-shortest; the actors take the longest first from the
front) while the main thread starts Ray.

The lane is one of the stage's ``execute.workers`` slots, never one more: once Ray is up the stage dispatches to
one actor fewer (:func:`~prism_fast.pipeline.streaming.stream_map`'s ``side``) until the lane has finished its
last job; the lane takes no new job once that last actor has started (its ``ready()`` answered). So at most
``workers`` renders run at once, as without it. Its rows go through the same path as the actors' (finish, tag,
store) in the main thread. A render's failure is its row, exactly as in an actor (``contained``); a lane that
cannot start (its prefork server) says so in a warning and leaves every job to the actors.

Only for a run's own Ray instance (``cluster=local``: on a joined cluster the driver's node need not be a render
node) and a prefork Exec stage; ``execute.head_start=false`` turns it off (rows identical either way: tested).
"""

from __future__ import annotations

import logging
import threading
from collections import deque
from concurrent.futures import Future
from typing import Any, Callable, Iterable

log = logging.getLogger(__name__)


class JobQueue:
    """The stage's pending work items in schedule order, taken from both ends (thread-safe)."""

    def __init__(self, items: Iterable[tuple]):
        self._items = deque(items)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)

    def pop_front(self) -> tuple | None:
        with self._lock:
            return self._items.popleft() if self._items else None

    def pop_back(self) -> tuple | None:
        with self._lock:
            return self._items.pop() if self._items else None


class HeadStart:
    """One worker in a thread of this process, taking items from the back of ``queue`` until stopped or empty.

    ``make_worker()`` builds the worker (in the thread); ``render_cfg`` (a Future) is the render configuration the
    worker must use (``worker.use_render_cfg``), known only once the driver's LaTeX format is built (pipeline/run.py, ≈ 3 s on a runs_root's
    first run). A worker with ``render_early()`` does not wait for it: until the Future is done it renders without
    the format (``RenderConfig.tex_format_deferred``: TeX compiles in full, the same SVG bytes and videos; its rows
    say ``tex_format=not_ready``), and takes the configuration before its first item after that. Any other worker
    waits for the Future before its first item."""

    def __init__(self, make_worker: Callable[[], Any], method: str, queue: JobQueue,
                 render_cfg: Future | None = None):
        self.queue, self.method = queue, method
        self._make_worker, self._render_cfg = make_worker, render_cfg
        self._results: list[tuple[tuple, Any]] = []
        self.rendered: list[tuple[tuple, Any]] = []  # every (item, result) of the lane, kept after take_results
        self._returned: list[tuple] = []  # items the lane took and could not run: the actors run them
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._idle = threading.Event()  # set once the lane will take no more items (its last result is stored)
        self.done_items = 0
        self.ready_ref = None  # set by the stage: the ObjectRef of the actor that takes the lane's slot
        self._thread = threading.Thread(target=self._run, name="prism-head-start", daemon=True)

    def start(self) -> "HeadStart":
        self._thread.start()
        return self

    def _run(self) -> None:
        worker = None
        try:
            worker = self._make_worker()
            pending = self._render_cfg
            if pending is not None and not pending.done() and callable(getattr(worker, "render_early", None)) \
                    and worker.render_early():
                log.info("the Exec stage's head start renders without the LaTeX format until the driver has built it "
                         "(rows: tex_format=not_ready)")
            elif pending is not None:
                worker.use_render_cfg(pending.result())
                pending = None
            while not self._stop.is_set():
                if pending is not None and pending.done():  # the driver's format is ready: the actors' settings
                    worker.use_render_cfg(pending.result())
                    pending = None
                item = self.queue.pop_back()
                if item is None:
                    break
                try:
                    result = getattr(worker, self.method)(*item)
                except BaseException:
                    with self._lock:
                        self._returned.append(item)  # not this item's doing (``contained`` rows every render)
                    raise
                with self._lock:
                    self._results.append((item, result))
                    self.rendered.append((item, result))
                    self.done_items += 1
        except BaseException as exc:  # noqa: BLE001 - the actors take every job left; never the run's end
            log.warning("the Exec stage's head start stopped after %d render(s) (%s: %s); the render actors "
                        "take the rest", self.done_items, type(exc).__name__, exc)
        finally:
            self._idle.set()
            log.info("the Exec stage's head start rendered %d sample(s) in the driver while Ray started",
                     self.done_items)
            if worker is not None and hasattr(worker, "close"):
                try:
                    worker.close()
                except Exception:  # noqa: BLE001 - its server dies with this process anyway
                    pass

    def stop(self) -> None:
        """Take no new item after the current one."""
        self._stop.set()

    def busy(self) -> bool:
        return not self._idle.is_set()

    def take_results(self) -> list[tuple[tuple, Any]]:
        with self._lock:
            out, self._results = self._results, []
        return out

    def take_returned(self) -> list[tuple]:
        with self._lock:
            out, self._returned = self._returned, []
        return out

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the lane takes no more items; True when it has finished."""
        return self._idle.wait(timeout)

    def join(self, timeout: float | None = None) -> None:
        """Wait for the thread itself (its worker closed)."""
        self._thread.join(timeout)
