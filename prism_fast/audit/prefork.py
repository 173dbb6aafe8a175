"""Pre-forked audit children (spec spatial_audit.md §13.3): opt-in via ``AuditConfig(prefork=True)``.

A zygote process imports manim once (plus the reference shims when the profile keeps them) and, per
sample, forks one fresh child that runs ``child.main`` exactly like ``python -m prism_fast.audit.child``:
its own session (killable as a group), stdout/stderr to files, exit code from ``SystemExit`` as the
interpreter would set it. Nothing runs user code in the zygote, so every child starts from the same pristine
state. Protocol on the zygote's stdin/stdout: one JSON request per line, answered by ``{"pid"}`` when the
child starts and ``{"pid", "rc"}`` when it ends.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time


def _exit_code(exc: SystemExit) -> int:
    code = exc.code
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    try:
        sys.stderr.write(f"{code}\n")
    except Exception:
        pass
    return 1


def _run_child(req: dict) -> None:
    """Inside the forked child: never returns."""
    code = 1
    try:
        os.setsid()
        out = os.open(req["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        err = os.open(req["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.dup2(out, 1)
        os.dup2(err, 2)
        os.environ.update(req.get("env", {}))
        import tempfile

        tempfile.tempdir = None  # re-read TMPDIR
        os.chdir(req["cwd"])
        from prism_fast.audit import child

        try:
            child.main(req["argv"])
            code = 0
        except SystemExit as exc:
            code = _exit_code(exc)
        except KeyboardInterrupt:
            import traceback

            traceback.print_exc()
            code = 128 + signal.SIGINT
        except BaseException:
            import traceback

            traceback.print_exc()
            code = 1
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(code)


def serve(quirks_fixed: str) -> None:
    """Zygote main loop (``python -m prism_fast.audit.prefork <quirks>``)."""
    from prism_fast.audit import atoms, cascade, hooks, inject, segments  # noqa: F401  (pre-import)
    from prism_fast.audit.child import _profile_from, _setup_process

    _setup_process(_profile_from(quirks_fixed))
    reply = sys.__stdout__
    reply.write('{"ready": true}\n')
    reply.flush()
    for line in sys.stdin:
        if not line.strip():
            continue
        req = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _run_child(req)
        reply.write(json.dumps({"pid": pid}) + "\n")
        reply.flush()
        _, status = os.waitpid(pid, 0)
        reply.write(json.dumps({"pid": pid, "rc": os.waitstatus_to_exitcode(status)}) + "\n")
        reply.flush()


class ForkServer:
    """Parent-side handle of one zygote; one sample at a time (use one per worker thread)."""

    def __init__(self, quirks_fixed: str, env: dict):
        self.quirks_fixed = quirks_fixed
        self.proc = subprocess.Popen([sys.executable, "-m", "prism_fast.audit.prefork", quirks_fixed],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                     start_new_session=True)
        self._buf = b""
        ready = self._read(timeout=300)
        if not ready or not ready.get("ready"):
            self.close()
            raise RuntimeError(f"audit fork server failed to start (got {ready!r})")

    def _read(self, timeout: float | None):
        deadline = None if timeout is None else time.monotonic() + timeout
        fd = self.proc.stdout.fileno()
        while b"\n" not in self._buf:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                return None
            chunk = os.read(fd, 65536)
            if not chunk:
                raise RuntimeError("audit fork server exited")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def run(self, argv: list[str], cwd: str, stdout: str, stderr: str, env: dict, timeout: float):
        """Run one child; returns (returncode, or None on timeout)."""
        req = {"argv": argv, "cwd": cwd, "stdout": stdout, "stderr": stderr, "env": env}
        self.proc.stdin.write((json.dumps(req) + "\n").encode())
        self.proc.stdin.flush()
        started = self._read(timeout=60)
        if started is None:
            raise RuntimeError("audit fork server did not start a child")
        pid = started["pid"]
        done = self._read(timeout=timeout)
        if done is None:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self._read(timeout=60)  # the zygote reaps the child
            return None
        return done["rc"]

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=10)
            except Exception:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


_local = threading.local()


def server_for(quirks_fixed: str, env: dict) -> ForkServer:
    """The calling thread's fork server for this profile (started on first use)."""
    servers = getattr(_local, "servers", None)
    if servers is None:
        servers = _local.servers = {}
    srv = servers.get(quirks_fixed)
    if srv is None or srv.proc.poll() is not None:
        srv = servers[quirks_fixed] = ForkServer(quirks_fixed, env)
    return srv


if __name__ == "__main__":
    serve(sys.argv[1] if len(sys.argv) > 1 else "")
