"""The ``prism-fast`` process's lifetime: nothing it started outlives it.

A run starts Ray (GCS, raylet, agents, a worker per actor), a prefork manim server per render actor and a
sandboxed child per sample; some of those start their own sessions or namespaces, so neither Ray's process-group
reaper nor a process-group kill reaches them all. :func:`driver_process` wraps a command:

* the process becomes a *child subreaper* (Linux ``PR_SET_CHILD_SUBREAPER``): whatever a descendant leaves
  orphaned is re-parented here instead of to init, so it stays findable as a descendant;
* SIGTERM and SIGHUP raise ``SystemExit`` (128 + signal), SIGINT ``KeyboardInterrupt``, so the stages'
  ``finally`` blocks and this one run (``ray.init`` replaces SIGTERM's handler with one that aborts the process
  without any clean-up; ``ensure_ray`` calls :func:`reinstall_signal_handlers` right after it);
* on the way out, normal or not: ``ray.shutdown()``, then every remaining descendant gets SIGTERM, and SIGKILL
  one second later, and is reaped (:func:`end_descendants`).

Imports no Ray at module level (``prism-fast --help`` stays fast).
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import sys
import threading
import time
from typing import Iterator

log = logging.getLogger(__name__)

PR_SET_CHILD_SUBREAPER = 36
_EXIT_SIGNALS = tuple(s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s)
_active = False
_received: int | None = None  # the exit signal that ended the command (Ray's calls re-raise it as SystemExit(1))


def _raise_exit(signum, frame):
    global _received
    _received = signum
    raise SystemExit(128 + signum)


def _install() -> None:
    if threading.current_thread() is not threading.main_thread():
        return
    for sig in _EXIT_SIGNALS:
        signal.signal(sig, _raise_exit)
    signal.signal(signal.SIGINT, signal.default_int_handler)


@contextlib.contextmanager
def exit_signal_during(what: str) -> Iterator[None]:
    """Around a call that installs its own exit-signal handler for its duration (``ray.init``'s calls
    ``sys.exit(signum)``): in :func:`driver_process`, a ``SystemExit(signum)`` it raises for SIGTERM/SIGHUP ends
    the command as this module's handler would (``128 + signum``, the signal named in the log), not with
    ``signum`` as exit status. With the Exec head start, renders run in the driver during ``ray.init``."""
    try:
        yield
    except SystemExit as exc:
        if _active and exc.code in _EXIT_SIGNALS:
            log.debug("%s ended by signal %s", what, exc.code)
            _raise_exit(exc.code, None)
        raise


def reinstall_signal_handlers() -> None:
    """Put this module's handlers back (no-op outside :func:`driver_process`)."""
    if _active:
        _install()


def become_subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants(root: int | None = None) -> list[int]:
    """PIDs below ``root`` (default: this process) in the process tree, read from /proc."""
    root = os.getpid() if root is None else root
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                ppid = int(fh.read().rsplit(b")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], list(children.get(root, ()))
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def _reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def _alive(pids: list[int]) -> list[int]:
    """Those of ``pids`` still running (a zombie is dead: it only waits for its reaping)."""
    out = []
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                state = fh.read().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state not in (b"Z", b"X"):
            out.append(pid)
    return out


def end_descendants(grace_s: float = 1.0, timeout_s: float = 4.0) -> list[int]:
    """SIGTERM every descendant, SIGKILL those still alive after ``grace_s``, reap; returns the PIDs signalled."""
    if not os.path.isdir("/proc"):
        return []
    signalled: list[int] = []
    deadline = time.monotonic() + timeout_s
    term_at: float | None = None
    while True:
        _reap()
        alive = _alive(descendants())
        if not alive or time.monotonic() > deadline:
            break
        escalate = term_at is not None and time.monotonic() - term_at >= grace_s
        for pid in alive:
            try:
                os.kill(pid, signal.SIGKILL if escalate else signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                continue
            if pid not in signalled:
                signalled.append(pid)
        if term_at is None:
            term_at = time.monotonic()
        time.sleep(0.05)
    _reap()
    return signalled


def _end_autoscaler_monitor(ray) -> None:
    """Before ``ray.shutdown()`` of an instance this process started: SIGKILL its autoscaler monitor. Ray stops the
    GCS first and then gives the monitor a second to exit on SIGTERM, which it spends failing to reach the GCS
    (then it is killed anyway): ~1 s of every run's end. The monitor of a private single-node instance holds no
    state. Only processes Ray's node object started here are touched (none when this process joined a cluster);
    anything unexpected in Ray's internals leaves ``ray.shutdown()`` to do it as before."""
    try:
        from ray._private import ray_constants

        node = getattr(ray._private.worker, "_global_node", None)
        infos = list(getattr(node, "all_processes", {}).get(ray_constants.PROCESS_TYPE_MONITOR, ()) or ())
        for info in infos:
            proc = info.process
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=5)
    except Exception:  # noqa: BLE001 - a faster end only; ray.shutdown() ends it otherwise
        log.debug("autoscaler monitor not ended ahead of ray.shutdown()", exc_info=True)


def shutdown_run_processes() -> None:
    """``ray.shutdown()`` when this process started or joined Ray, then :func:`end_descendants`."""
    ray = sys.modules.get("ray")
    if ray is not None:
        try:
            if ray.is_initialized():
                _end_autoscaler_monitor(ray)
                ray.shutdown()
        except Exception:  # noqa: BLE001 - the sweep below still ends what it started
            log.warning("ray.shutdown failed", exc_info=True)
    left = end_descendants()
    if left:
        log.info("ended %d process(es) left by the run: %s", len(left), left[:20])


@contextlib.contextmanager
def driver_process() -> Iterator[None]:
    """Run a command so that no process it starts is alive after it returns or raises (signals included)."""
    global _active, _received
    _received = None
    become_subreaper()
    main = threading.current_thread() is threading.main_thread()
    previous = {s: signal.getsignal(s) for s in (*_EXIT_SIGNALS, signal.SIGINT)} if main else {}
    _active = True
    _install()
    try:
        yield
    except SystemExit:
        if _received is not None:
            log.warning("%s received: stopping the run", signal.Signals(_received).name)
            raise SystemExit(128 + _received) from None
        raise
    finally:
        _active = False
        if main:  # a second Ctrl-C or SIGTERM must not cut the clean-up short
            for sig in previous:
                signal.signal(sig, signal.SIG_IGN)
        try:
            shutdown_run_processes()
        finally:
            for sig, handler in previous.items():
                signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


# -- the invocation's record in its run directory --------------------------------------------------------------
LOG_NAME = "prism-fast.log"
_run_log: logging.FileHandler | None = None
_LOG_FORMAT = "[%(asctime)s][%(name)s][%(levelname)s] - %(message)s"


def record_invocation(run_dir, cfg=None) -> None:
    """Write this invocation's Hydra record into ``run_dir`` — ``.hydra/config.yaml`` (the composed config),
    ``overrides.yaml``, ``hydra.yaml`` — and send the log to ``run_dir/prism-fast.log`` (appended; one file per
    run directory, however many invocations resume it).

    Hydra writes nothing itself (``hydra.run.dir: .``, ``output_subdir: null``): it would have to do so before
    the command checks its settings, leaving ``outputs/<date>/<time>/`` with an empty log behind every refused
    run. Commands call this once their settings passed (eval: after the resume check), so a refused run writes
    nothing. Outside Hydra (library use, tests) only the log file is set up."""
    from pathlib import Path

    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        from hydra.core.hydra_config import HydraConfig
        from omegaconf import OmegaConf

        if HydraConfig.initialized():
            hc = HydraConfig.get()
            out = run_dir / ".hydra"
            out.mkdir(exist_ok=True)
            if cfg is not None:
                OmegaConf.save(cfg if OmegaConf.is_config(cfg) else OmegaConf.create(cfg), out / "config.yaml")
            OmegaConf.save(hc.overrides.task, out / "overrides.yaml")
            OmegaConf.save(OmegaConf.create({"hydra": hc}), out / "hydra.yaml")
    except Exception:  # noqa: BLE001 - the record is documentation; the run goes on without it
        log.warning("could not write the Hydra record into %s", run_dir, exc_info=True)
    global _run_log
    path = str((run_dir / LOG_NAME).absolute())
    root = logging.getLogger()
    if _run_log is not None:  # one run directory at a time (a multirun's jobs run one after the other in-process)
        if _run_log.baseFilename == path and _run_log in root.handlers:
            return
        root.removeHandler(_run_log)
        _run_log.close()
    _run_log = logging.FileHandler(path, encoding="utf-8")
    _run_log.setFormatter(logging.Formatter(_LOG_FORMAT))
    _run_log.setLevel(logging.INFO)
    root.addHandler(_run_log)
    if root.level > logging.INFO or root.level == logging.NOTSET:
        root.setLevel(logging.INFO)
