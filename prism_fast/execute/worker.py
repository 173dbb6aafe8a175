"""Prefork render worker: import manim once, fork a fresh, contained child per sample.

Importing manim costs ~1.5-3 s of CPU per ``manim`` process. A :class:`PreforkWorker` starts one server
process that imports manim exactly as the ``manim`` console script does (``from manim.__main__ import main``)
and then, for every sample, forks a child that

1. applies the same containment as the exec path (``sandbox._child_setup``: new session, cgroups, rlimits,
   network/mount/PID/IPC/UTS namespaces, the file-system view of ``jail.py``, an unprivileged uid; the
   process that runs manim is PID 1 of its own namespace, the forked child outside relays its exit),
2. gets the sample's cwd, environment, stdin=/dev/null and stdout/stderr pipes, and ``sys.argv`` =
   ``[manim_bin, -ql, <script>, <Scene>, ...]``,
3. reseeds numpy's global RNG from the OS (a fresh process would; ``random`` reseeds itself after fork),
4. runs manim's CLI ``main()`` and exits like the interpreter would (SystemExit code, uncaught exception ->
   traceback + 1, non-daemon threads joined, atexit handlers run).

A fork gives every sample a pristine copy of the imported modules and of manim's global ``config``: user
scripts mutate global state, so a worker must never run two samples in one process. The server itself
supervises each child (it is the child's parent: timeout, group kill, output capture, ``wait4``), and the
client (:meth:`PreforkWorker.run`, a drop-in for ``sandbox.run_sandboxed``) only sends jobs and reads results.

The server is started with the same allow-listed environment and a cwd holding the same ``manim.cfg`` as a
sample's directory, so manim's import-time configuration equals that of the plain CLI. Differences from the
plain CLI that cannot reach the video or the error text: ``wall_s``/``cpu_s``/``peak_rss_mb`` exclude the
import; the server process's ``__main__`` module is this file; ``sys.modules`` additionally holds this
package's sandbox module. ``tests/execute/test_render.py`` checks byte-identical videos and identical rows.
"""

from __future__ import annotations

import base64
import dataclasses
import gc
import json
import logging
import os
import select
import shutil
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict
from pathlib import Path

if __package__ in (None, ""):  # started as a script (the server): make the package importable, then hide it
    _ROOT = str(Path(__file__).resolve().parents[2])
    sys.path.insert(0, _ROOT)
    from prism_fast.execute import fastpaths, observers, sandbox, texcache, textboxes  # noqa: E402
    sys.path.remove(_ROOT)
else:
    from prism_fast.execute import fastpaths, observers, sandbox, texcache, textboxes

log = logging.getLogger(__name__)

SETUP_FAILED_EXIT = 126
SERVER_DIR_PREFIX = "prism_fast_prefork_"
SETUP_FAILED_MARK = b"prism_fast prefork: child set-up failed: "


# ----------------------------------------------------------------------------------------------------------
# Framing: 4-byte big-endian length + UTF-8 JSON


def _send(fd: int, obj: dict) -> None:
    data = json.dumps(obj).encode("utf-8")
    view = memoryview(struct.pack(">I", len(data)) + data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _recv_exact(fd: int, n: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < n:
        chunk = os.read(fd, n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def _recv(fd: int) -> dict | None:
    head = _recv_exact(fd, 4)
    if head is None:
        return None
    body = _recv_exact(fd, struct.unpack(">I", head)[0])
    return None if body is None else json.loads(body.decode("utf-8"))


def _stream_to_json(s: sandbox.CapturedStream) -> dict:
    return {"head": base64.b64encode(s.head).decode(), "tail": base64.b64encode(s.tail).decode(),
            "total": s.total_bytes}


def _stream_from_json(d: dict) -> sandbox.CapturedStream:
    return sandbox.CapturedStream(base64.b64decode(d["head"]), base64.b64decode(d["tail"]), d["total"])


# ----------------------------------------------------------------------------------------------------------
# Server side (runs in the worker process; only trusted code until it forks)


def _exit_code(exc: SystemExit) -> int:
    """The process exit status the interpreter derives from SystemExit (printing non-int codes)."""
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    try:
        sys.stderr.write(f"{code}\n")
    except Exception:  # noqa: BLE001 - a broken stderr must not change the exit status
        pass
    return 1


def _run_child(job: dict, main, out_w: int, err_w: int, close_fds: list[int]) -> None:
    """In the forked child: contain, become the sample's process, run manim's CLI, exit. Never returns."""
    try:
        for fd in close_fds:
            os.close(fd)
        os.dup2(out_w, 1)  # first, so that a set-up failure below reaches the server through the pipe
        os.dup2(err_w, 2)
        os.close(out_w)
        os.close(err_w)
        sandbox._child_setup(sandbox._ChildPlan.from_dict(job["plan"]), exec_follows=False)
        os.chdir(job["cwd"])
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
        os.environ.clear()
        os.environ.update(job["env"])
        fastpaths.install_from_env()  # exact fast paths of manim helpers, when the parent asked (fastpaths.py)
        texcache.install_from_env()  # shared TeX SVG cache, when the parent asked for it (texcache.py)
        observers.install_from_env()  # render-time observers, when the parent asked (observers.py)
        textboxes.install_from_env()  # text boxes of every written frame, when the parent asked (textboxes.py)
        texcache.arm()  # the TeX cache's gate compares against the process as the script gets it (texcache.py)
        sys.argv = [job["manim_bin"], *job["args"]]
        if "numpy" in sys.modules:  # a fresh interpreter seeds numpy's legacy global RNG from the OS
            sys.modules["numpy"].random.seed()
    except BaseException as exc:  # noqa: BLE001 - report and leave; nothing of the sample ran
        try:
            os.write(2, SETUP_FAILED_MARK + f"{type(exc).__name__}: {exc}".encode())
        finally:
            os._exit(SETUP_FAILED_EXIT)

    code = 0
    try:
        main()
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:  # noqa: BLE001 - what the interpreter does with an uncaught exception
        sys.excepthook(*sys.exc_info())
        code = 1
    try:
        import atexit
        import threading

        threading._shutdown()  # join non-daemon threads, as interpreter shutdown does
        atexit._run_exitfuncs()
    except BaseException:  # noqa: BLE001
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except Exception:  # noqa: BLE001
            pass
    os._exit(code)


def _load_entry(entry: str):
    """``module:function:argument`` (given by trusted code, never by a script) -> the child's main callable:
    ``function(argument)`` runs once in the server, before any fork, and returns ``main()``."""
    module, function, arg = entry.split(":", 2)
    root = str(Path(__file__).resolve().parents[2])
    if root not in sys.path:  # the entry's package (this one) must import; the server's sys.path hides it
        sys.path.append(root)
    import importlib

    return getattr(importlib.import_module(module), function)(arg)


# What a render child imports only after its scene has run, in every render or every failed one: manim's log of
# the finished movie (a rich Table) and a failure's traceback (rich's Traceback and Syntax with pygments' Python
# lexer, rich's pretty-printer and its attrs support). Imported once in the server as the child would import them --
# none of them reads the environment, the working directory or the time at import -- instead of in each child
# (≈ 5 ms a render, ≈ 25 ms a failure). Not here: rich's cell-width table (``rich._unicode_data``: chosen by the
# ``UNICODE_VERSION`` variable at first use, which is the child's) and tqdm's multiprocessing lock (a lock created
# here would be shared by every child).
CONSOLE_MODULES = ("rich.table", "rich.box", "rich.padding", "rich._ratio", "rich._emoji_codes", "rich.traceback",
                   "rich.syntax", "rich.panel", "rich.columns", "rich.pretty", "rich.scope", "rich.abc",
                   "pygments.lexers.python", "pygments.filters", "pygments.regexopt", "pygments.unistring")


def preload_console() -> None:
    """Import :data:`CONSOLE_MODULES` and build pygments' Python lexer class once (its token table is compiled at
    the class's first instantiation and kept on the class: the same regular expressions a child would compile).
    A module that does not import is left to the children, as before, and said on the server's stderr (its log)."""
    import importlib

    for name in CONSOLE_MODULES:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 - a cache, not a result: the child imports it itself
            print(f"prism_fast prefork: preloading {name} failed: {exc!r}", file=sys.stderr, flush=True)
    try:
        from pygments.lexers import get_lexer_by_name

        get_lexer_by_name("python")  # rich.syntax looks the lexer up by this name
    except Exception as exc:  # noqa: BLE001
        print(f"prism_fast prefork: building pygments' Python lexer failed: {exc!r}", file=sys.stderr, flush=True)


def serve(req_fd: int, resp_fd: int, manim_bin: str, entry: str = "manim", preload: tuple[str, ...] = ()) -> None:
    """The server loop: import manim (and the entry's modules), then one forked child per job, until the
    request pipe closes. ``entry``: ``manim`` (manim's CLI) or ``module:function:argument`` (another child main,
    e.g. the spatial audit's, see :func:`_load_entry`). ``preload``: modules of trusted code imported here once,
    so that children do not import them each (e.g. a render observer's child half, ``observers.py``); a preloaded
    module's ``warm()``, when it has one, runs once here too (its result is inherited by every child)."""
    t0 = time.perf_counter()
    from manim import __version__ as manim_version

    if entry != "manim":
        main = _load_entry(entry)
    else:
        # What the console script's process has: its own directory first on sys.path.
        sys.path[0] = str(Path(manim_bin).resolve().parent)
        from manim.__main__ import main
        preload_console()
    if preload:
        import importlib

        for module in preload:
            warm = getattr(importlib.import_module(module), "warm", None)
            if callable(warm):
                try:
                    warm()  # a preloaded module's one-time set-up, shared by every forked child
                except Exception as exc:  # noqa: BLE001 - a cache, not a result: its children do without it
                    print(f"prism_fast prefork: {module}.warm() failed: {exc!r}", file=sys.stderr, flush=True)

    # Everything imported so far (manim, the preloaded modules) lives as long as the server: freeze it, so the
    # cyclic garbage collector of every forked child neither walks it nor writes to its pages (copy-on-write).
    # A child's own objects are collected as before; a forked child's collection timing never equalled a fresh
    # `manim` process's anyway (its heap differs). Renders ~5 % less CPU on small scenes, ~1 % on heavy ones
    # (docs/scaling.md "Fifteenth session").
    gc.collect()
    gc.freeze()
    _send(resp_fd, {"ready": True, "manim": manim_version, "import_s": time.perf_counter() - t0})
    while True:
        job = _recv(req_fd)
        if job is None:
            return
        if job["manim_bin"] != manim_bin:
            _send(resp_fd, {"ok": False, "error": f"worker serves {manim_bin}, job asks for {job['manim_bin']}"})
            continue
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        sys.stdout.flush()
        sys.stderr.flush()
        started = time.perf_counter()
        try:
            pid = os.fork()
        except OSError as exc:
            for fd in (out_r, out_w, err_r, err_w):
                os.close(fd)
            _send(resp_fd, {"ok": False, "error": f"fork failed: {exc}"})
            continue
        if pid == 0:
            _run_child(job, main, out_w, err_w, [out_r, err_r, req_fd, resp_fd])
        os.close(out_w)
        os.close(err_w)
        sup = sandbox.supervise(pid, out_r, err_r, started, job["timeout_s"], job["head"], job["tail"])
        if sup.returncode == SETUP_FAILED_EXIT and sup.stderr.data.startswith(SETUP_FAILED_MARK):
            _send(resp_fd, {"ok": False, "error": sup.stderr.data[len(SETUP_FAILED_MARK):].decode("utf-8", "replace")})
            continue
        _send(resp_fd, {
            "ok": True, "returncode": sup.returncode, "timed_out": sup.timed_out, "wall_s": sup.wall_s,
            "cpu_s": sup.cpu_s, "peak_rss_mb": sup.peak_rss_mb,
            "stdout": _stream_to_json(sup.stdout), "stderr": _stream_to_json(sup.stderr),
        })


# ----------------------------------------------------------------------------------------------------------
# Client side


def _owner_file(server_dir: Path) -> Path:
    """``.<name>.owner`` beside a server directory: the pid of the process that owns it."""
    return server_dir.with_name(f".{server_dir.name}.owner")


def sweep_stale_server_dirs(parent: str | os.PathLike | None = None) -> int:
    """Remove the server directories (manim.cfg, server.log) of workers whose owner process is gone: a Ray actor
    killed at the end of a run never reaches ``close``. Only directories named by this module with an owner file
    are touched; a live (or unreadable) owner keeps its directory. Returns how many were removed. Default
    ``parent``: this process's private run root (``sandbox.run_root``; a dead process's whole run root is swept by
    the next one's)."""
    parent = Path(parent or sandbox.run_root())
    removed = 0
    for owner in parent.glob(f".{SERVER_DIR_PREFIX}*.owner"):
        try:
            os.kill(int(owner.read_text()), 0)
            continue  # alive (or a reused pid: kept, never wrongly removed)
        except ProcessLookupError:
            pass
        except (ValueError, OSError):
            continue
        shutil.rmtree(owner.with_name(owner.name[1:-len(".owner")]), ignore_errors=True)
        owner.unlink(missing_ok=True)
        removed += 1
    return removed


def own_server_dir(parent: str | os.PathLike | None = None) -> Path:
    """A fresh server directory owned by this process (after sweeping those of dead owners), by default in this
    process's private run root (``sandbox.run_root``), never directly in the shared temp dir."""
    parent = Path(parent or sandbox.run_root())
    sweep_stale_server_dirs(parent)
    path = Path(tempfile.mkdtemp(prefix=SERVER_DIR_PREFIX, dir=str(parent)))
    _owner_file(path).write_text(str(os.getpid()))
    return path


class PreforkWorker:
    """One warm manim process that forks a contained child per render. Use one per CPU core.

    ``run(spec)`` is a drop-in for ``sandbox.run_sandboxed(spec)`` when ``spec.argv[0]`` is ``manim_bin``.
    Not thread-safe: one job at a time per worker. The server is restarted if it dies; the job that was
    running then gets a ``launch_error`` result (never a silent retry).
    """

    backend_name = "prefork"

    def __init__(self, manim_bin: str, server_dir: str | None = None, start_timeout_s: float = 300,
                 manim_cfg: str | None = None, entry: str = "manim", preload: tuple[str, ...] = ()):
        self.manim_bin = os.path.abspath(manim_bin)
        self.entry = entry
        self.preload = tuple(preload)  # trusted modules the server imports before forking (see serve)
        self.start_timeout_s = start_timeout_s
        self._own_dir = server_dir is None
        self.server_dir = Path(server_dir) if server_dir else own_server_dir()
        self.manim_cfg = manim_cfg
        self.proc: subprocess.Popen | None = None
        self.launched_env: dict | None = None  # the environment the server was started with (launch)
        self.import_s: float | None = None
        self.restarts = 0
        self._warned_bwrap = False

    # lifecycle
    def start(self) -> None:
        self.launch()
        self.await_ready()

    def launch_env(self) -> dict:
        """The environment the server starts with (the allow-listed variables of this process's, now)."""
        return sandbox.scrub_env(os.environ, home=str(self.server_dir))

    def launch(self) -> None:
        """Start the server process without waiting for its imports (:meth:`await_ready` does): a caller that will
        need a worker soon starts it early, while it does other work (``render.prestart_prefork``)."""
        from prism_fast.execute.fingerprint import interpreter_of

        self.server_dir.mkdir(parents=True, exist_ok=True)
        if self.manim_cfg is not None:
            (self.server_dir / "manim.cfg").write_text(self.manim_cfg, encoding="utf-8")
        req_r, self._req_w = os.pipe()
        self._resp_r, resp_w = os.pipe()
        env = self.launched_env = self.launch_env()
        with open(self.server_dir / "server.log", "ab") as server_log:
            self.proc = subprocess.Popen(
                [interpreter_of(self.manim_bin), str(Path(__file__).resolve()), str(req_r), str(resp_w),
                 self.manim_bin, self.entry, *self.preload],
                cwd=str(self.server_dir), env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=server_log, pass_fds=(req_r, resp_w), start_new_session=True,
                preexec_fn=sandbox.die_with_parent,  # the server (and its samples) never outlive this process
            )
        os.close(req_r)
        os.close(resp_w)

    def await_ready(self) -> None:
        """Wait for the launched server's hello (its imports done); raises RuntimeError if it does not come."""
        hello = self._read_with_timeout(self.start_timeout_s)
        if not hello or not hello.get("ready"):
            self.close()
            raise RuntimeError(f"prefork worker did not start; see {self.server_dir / 'server.log'}")
        self.import_s = hello["import_s"]

    def close(self) -> None:
        if self.proc is not None:
            for fd in (self._req_w, self._resp_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait()
            self.proc = None
        if self._own_dir:
            shutil.rmtree(self.server_dir, ignore_errors=True)
            _owner_file(self.server_dir).unlink(missing_ok=True)

    def __enter__(self) -> "PreforkWorker":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _read_with_timeout(self, timeout_s: float) -> dict | None:
        ready, _, _ = select.select([self._resp_r], [], [], timeout_s)
        return _recv(self._resp_r) if ready else None

    # jobs
    def run(self, spec: sandbox.SandboxSpec) -> sandbox.SandboxResult:
        prep = sandbox.prepare(spec)
        started = time.perf_counter()
        try:
            if prep.refusal:
                return sandbox.launch_failure(prep, started, prep.refusal)
            if prep.level == "bwrap":  # no root: a forked child cannot build the view; bubblewrap must exec
                prep.cleanup()
                if not self._warned_bwrap:
                    self._warned_bwrap = True
                    log.warning("prefork worker: no root, so each render runs as `manim` under bubblewrap "
                                "(backend recorded as cli)")
                return dataclasses.replace(sandbox.run_sandboxed(spec), ran_as="cli")
            if self.proc is None or self.proc.poll() is not None:
                if self.proc is not None:
                    self.restarts += 1
                    self.close_quietly()
                try:
                    self.start()
                except (OSError, RuntimeError) as exc:
                    return sandbox.launch_failure(prep, started, f"prefork worker could not start: {exc}")
            if os.path.abspath(spec.argv[0]) != self.manim_bin:
                return sandbox.launch_failure(prep, started, f"prefork worker serves {self.manim_bin}, "
                                                             f"not {spec.argv[0]}")
            job = {"manim_bin": self.manim_bin, "args": list(spec.argv[1:]), "cwd": spec.cwd, "env": dict(spec.env),
                   "timeout_s": spec.timeout_s, "head": spec.output_head_bytes, "tail": spec.output_tail_bytes,
                   "plan": asdict(prep.plan)}
            try:
                _send(self._req_w, job)
                wait = (spec.timeout_s or 24 * 3600) + 120
                reply = self._read_with_timeout(wait)
            except OSError:
                reply = None
            if reply is None:
                self.restarts += 1  # the next job starts a fresh server
                self.close_quietly()
                return sandbox.launch_failure(prep, started, "prefork worker died or stopped answering; restarted")
            if not reply["ok"]:
                return sandbox.launch_failure(prep, started, f"prefork: {reply['error']}")
            sup = sandbox.Supervised(reply["returncode"], reply["timed_out"], reply["wall_s"], reply["cpu_s"],
                                     reply["peak_rss_mb"], _stream_from_json(reply["stdout"]),
                                     _stream_from_json(reply["stderr"]))
            return sandbox.result_from(sup, prep)
        finally:
            prep.cleanup()

    def close_quietly(self) -> None:
        if self.proc is not None:
            try:
                os.killpg(self.proc.pid, 9)
            except OSError:
                pass
            own, self._own_dir = self._own_dir, False
            self.close()
            self._own_dir = own


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], *sys.argv[4:5], preload=tuple(sys.argv[5:]))
