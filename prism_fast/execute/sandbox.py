"""Run one untrusted command (a generated Manim script) in a contained child process.

What the sandbox does, per run:

* a fresh process group (``setsid``); on timeout, and after every normal exit, the whole group is killed with
  SIGKILL, so leftover grandchildren never outlive the sample;
* resource limits (``setrlimit`` in the child before exec): address space, CPU seconds, file size, open files,
  and, for a non-root user, the process count;
* a process-count limit through a cgroup ``pids`` controller when running as root (``RLIMIT_NPROC`` is not
  enforced for uid 0); every process of the cgroup is killed afterwards, including ones that left the group;
* an environment built from an allow-list (no tokens, keys or proxies leak in); ``HOME`` and ``TMPDIR`` point
  into the sample's own directory;
* stdin is ``/dev/null``; stdout and stderr are read incrementally and only a head and a tail of each are
  kept, so 1 GB of output costs a bounded amount of memory;
* when root and the kernel allows it: a new network namespace (no interfaces but a down loopback), a new mount
  namespace in which ``readonly_paths`` (results, inputs, caches) are bind-mounted read-only, and the
  dangerous capabilities (SYS_ADMIN, SYS_RESOURCE, NET_ADMIN, SYS_PTRACE, ...) dropped from the bounding set,
  so the child cannot lift its limits, leave its namespaces or trace the parent;
* CPU time (user + sys of the child and the descendants it waited for) and peak RSS from ``os.wait4``.

Every isolation feature that could not be applied is recorded in the result (``net_isolated``,
``fs_readonly``, ``pids_limit``, ``caps_dropped``) and logged once as a warning. Nothing is silently skipped.

What the OS (and this module) cannot prevent:

* Reading: the child can read every file its uid can read (other samples' scripts, the project, ``/etc``).
  Only writes to ``readonly_paths`` are blocked, and only when a mount namespace is available.
* As uid 0 without a mount namespace, the child can write anywhere root can. A non-root run relies on file
  permissions alone.
* World-writable places outside the sample directory (``/tmp``, ``/dev/shm``) stay writable; the sample's
  ``TMPDIR`` points into its own directory, but nothing forces a script to use it.
* Memory: ``RLIMIT_AS`` bounds virtual memory per process, not the resident memory of a whole tree; several
  processes of one sample can together use up to (process limit × address-space limit).
* CPU: ``RLIMIT_CPU`` is per process; the wall-clock timeout is the real bound for a tree.
* Peak RSS is the maximum over the child and the descendants it reaped, not the sum of a tree.
* CPU time of descendants that the child did not wait for (killed orphans) is not counted.
* Signals: a child running as the same uid can signal that uid's other processes, the parent included
  (``os.kill(os.getppid(), 9)``). The prefork worker survives this (the server is restarted and the row is a
  ``sandbox_error``); the plain path's caller does not. Run renders in a process that may die (a Ray actor),
  or under a dedicated uid where the interpreter is readable by it.
* A process that leaves the process group with ``setsid`` is only found again through the cgroup; without a
  cgroup it can survive the kill.
* Without a network namespace (non-root, or a kernel that refuses it) the child has the host's network.
* ``preexec_fn`` runs Python code between fork and exec. The code here only makes system calls, but a
  parent with many threads that hold locks in C libraries can in principle deadlock it (CPython warns about
  this); Ray actors calling this from one thread at a time are fine.
"""

from __future__ import annotations

import ctypes
import logging
import os
import resource
import selectors
import signal
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

log = logging.getLogger(__name__)

MiB = 1024 * 1024

# Environment variables that may pass from the parent to the untrusted child. Everything else (API keys,
# tokens, proxies, PYTHONPATH, COLUMNS, ...) is dropped.
ENV_ALLOW: tuple[str, ...] = (
    "PATH", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_NUMERIC", "TZ", "LD_LIBRARY_PATH",
    "PYTHONHASHSEED", "SOURCE_DATE_EPOCH",
    "TEXMFCNF", "TEXMFHOME", "TEXMFVAR", "TEXMFCONFIG", "TEXINPUTS",
    "FONTCONFIG_FILE", "FONTCONFIG_PATH",
    "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
)

# Linux constants (ctypes; os.unshare only exists from Python 3.12).
CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
# Capabilities removed from the child's bounding set (so uid 0 loses them at exec).
CAPS_TO_DROP: tuple[int, ...] = (
    12,  # NET_ADMIN
    13,  # NET_RAW
    16,  # SYS_MODULE
    17,  # SYS_RAWIO
    18,  # SYS_CHROOT
    19,  # SYS_PTRACE
    21,  # SYS_ADMIN
    22,  # SYS_BOOT
    24,  # SYS_RESOURCE
    25,  # SYS_TIME
    27,  # MKNOD
    34,  # SYSLOG
    8,   # SETPCAP (last: needed to drop the others)
)

_LIBC = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class Limits:
    """Per-sample resource limits; None means "leave the inherited limit"."""

    address_space_mb: int | None = 8192
    cpu_seconds: int | None = None
    file_size_mb: int | None = 2048
    max_processes: int | None = 256
    open_files: int | None = 1024


@dataclass(frozen=True)
class SandboxSpec:
    """One command to run. ``cwd`` must exist and belong to this run alone."""

    argv: Sequence[str]
    cwd: str
    env: Mapping[str, str]
    timeout_s: float | None = None
    limits: Limits = field(default_factory=Limits)
    output_head_bytes: int = 64 * 1024
    output_tail_bytes: int = 256 * 1024
    isolate_network: bool = True
    readonly_paths: tuple[str, ...] = ()
    drop_capabilities: bool = True


@dataclass(frozen=True)
class CapturedStream:
    """A head and a tail of one output stream. ``data`` is the whole stream when not truncated."""

    head: bytes
    tail: bytes
    total_bytes: int

    @property
    def truncated(self) -> bool:
        return self.total_bytes > len(self.head) + len(self.tail)

    @property
    def data(self) -> bytes:
        """The bytes kept: the whole stream, or head + tail with the middle missing."""
        return self.head + self.tail

    def text(self) -> str:
        """Decoded (UTF-8, errors replaced) with universal newlines, as ``subprocess.run(text=True)`` sees it."""
        raw = self.data.decode("utf-8", errors="replace")
        return raw.replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class SandboxResult:
    returncode: int | None  # Popen convention: -N when killed by signal N; None when it never started
    exit_status: int | None  # the exit code when it exited normally
    signal: str | None  # e.g. "SIGKILL" when killed by a signal
    timed_out: bool
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    stdout: CapturedStream
    stderr: CapturedStream
    net_isolated: bool
    fs_readonly: bool
    pids_limit: str  # "cgroup", "rlimit" or "none"
    caps_dropped: bool
    launch_error: str | None = None


class _Bounded:
    """Keeps the first ``head_cap`` and the last ``tail_cap`` bytes of a stream."""

    def __init__(self, head_cap: int, tail_cap: int):
        self.head_cap, self.tail_cap = head_cap, tail_cap
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]

    def freeze(self) -> CapturedStream:
        tail = bytes(self.tail[-self.tail_cap:]) if self.tail_cap else b""
        return CapturedStream(bytes(self.head), tail, self.total)


# ----------------------------------------------------------------------------------------------------------
# What this host allows (probed once per process, each probe is a real child that execs /bin/true)


@dataclass(frozen=True)
class HostIsolation:
    is_root: bool
    netns: bool
    mountns: bool
    capdrop: bool
    cgroup_pids_root: str | None


def _probe(preexec) -> bool:
    try:
        return subprocess.run(["/bin/true"], preexec_fn=preexec, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=20).returncode == 0
    except (subprocess.SubprocessError, OSError):
        return False


def _cgroup_pids_root() -> str | None:
    """A writable directory of the cgroup pids controller where per-sample groups can be made."""
    candidates = [Path("/sys/fs/cgroup/pids")]
    unified = Path("/sys/fs/cgroup")
    if (unified / "cgroup.controllers").exists():
        candidates.append(unified)
    for base in candidates:
        if not (base / "cgroup.procs").exists():
            continue
        root = base / "prism_fast"
        try:
            root.mkdir(exist_ok=True)
            if base == unified:  # v2: the controller must be enabled for children of our directory
                (root / "cgroup.subtree_control").write_text("+pids")
            probe = root / f"probe_{os.getpid()}"
            probe.mkdir(exist_ok=True)
            ok = (probe / "pids.max").exists()
            probe.rmdir()
            if ok:
                _sweep_stale_cgroups(root)
                return str(root)
        except OSError:
            continue
    return None


def _sweep_stale_cgroups(root: Path) -> None:
    """Remove empty per-run groups left by processes that died (``s_<pid>_<id>``, the pid gone). A group can
    outlive its run when killed processes were still zombies at clean-up time."""
    for group in root.glob("s_*"):
        try:
            os.kill(int(group.name.split("_")[1]), 0)
            continue  # its owner is alive
        except ProcessLookupError:
            pass
        except (ValueError, IndexError, PermissionError):
            continue
        try:
            group.rmdir()
        except OSError:
            pass


@lru_cache(maxsize=1)
def host_isolation() -> HostIsolation:
    """Probe which isolation features work here. Warns once for every feature that is missing."""
    is_root = os.geteuid() == 0
    netns = is_root and _probe(lambda: _unshare(CLONE_NEWNET))
    mountns = is_root and _probe(lambda: (_unshare(CLONE_NEWNS), _mount(None, "/", None, MS_REC | MS_PRIVATE)))
    capdrop = is_root and _probe(_drop_caps)
    cgroup = _cgroup_pids_root() if is_root else None
    info = HostIsolation(is_root, netns, mountns, capdrop, cgroup)
    missing = [name for name, ok in (("network namespace", netns), ("mount namespace", mountns),
                                     ("capability drop", capdrop), ("cgroup pids", cgroup)) if not ok]
    if missing:
        log.warning("sandbox: not available on this host (%s): %s; rows record what was applied",
                    "root" if is_root else "non-root", ", ".join(missing))
    return info


# ----------------------------------------------------------------------------------------------------------
# Child-side set-up (runs between fork and exec: system calls only)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _unshare(flags: int) -> None:
    _check(_LIBC.unshare(ctypes.c_int(flags)), "unshare")


def _mount(source: str | None, target: str, fstype: str | None, flags: int) -> None:
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    _check(_LIBC.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), None), f"mount {target}")


def _drop_caps(now: bool = False) -> None:
    """Remove CAPS_TO_DROP from the bounding set (effective from the next exec) and, with ``now``, also from
    this process's effective/permitted/inheritable sets (for a forked child that never execs)."""
    for cap in CAPS_TO_DROP:
        _check(_LIBC.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0), f"drop capability {cap}")
    _check(_LIBC.prctl(PR_SET_NO_NEW_PRIVS, ctypes.c_ulong(1), 0, 0, 0), "no_new_privs")
    if now:
        header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
        data = (_CapData * 2)()
        _check(_LIBC.capget(ctypes.byref(header), data), "capget")
        for cap in CAPS_TO_DROP:
            word, bit = divmod(cap, 32)
            mask = ~(1 << bit) & 0xFFFFFFFF
            data[word].effective &= mask
            data[word].permitted &= mask
            data[word].inheritable &= mask
        _check(_LIBC.capset(ctypes.byref(header), data), "capset")


_LINUX_CAPABILITY_VERSION_3 = 0x20080522


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


@dataclass(frozen=True)
class _ChildPlan:
    rlimits: tuple[tuple[int, int, int], ...]
    cgroup_procs: str | None
    netns: bool
    mountns: bool
    readonly_paths: tuple[str, ...]
    keep_writable: str
    drop_caps: bool


def _child_setup(plan: _ChildPlan, exec_follows: bool = True) -> None:
    """Applied in the child after fork: before exec (sandbox) or before running manim in-process (worker)."""
    os.setsid()
    if plan.cgroup_procs:
        fd = os.open(plan.cgroup_procs, os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)
    for which, soft, hard in plan.rlimits:
        resource.setrlimit(which, (soft, hard))
    if plan.netns:
        _unshare(CLONE_NEWNET)
    if plan.mountns:
        _unshare(CLONE_NEWNS)
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        # Keep the sample's own directory writable even when it lies below a read-only path: bind it onto
        # itself first, so the recursive read-only bind below carries it along as a writable sub-mount.
        _mount(plan.keep_writable, plan.keep_writable, None, MS_BIND | MS_REC)
        for path in plan.readonly_paths:
            _mount(path, path, None, MS_BIND | MS_REC)
            _mount(None, path, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)
    if plan.drop_caps:
        _drop_caps(now=not exec_follows)


# ----------------------------------------------------------------------------------------------------------
# Parent side


def scrub_env(parent_env: Mapping[str, str], home: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: allow-listed variables, HOME/TMPDIR in the sample directory, then ``extra``."""
    env = {k: parent_env[k] for k in ENV_ALLOW if k in parent_env}
    env.setdefault("PATH", "/usr/local/bin:/usr/bin:/bin")
    env["HOME"] = home
    env["TMPDIR"] = home
    env.update(extra or {})
    return env


def _count_user_processes(uid: int) -> int:
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += 1
            except OSError:
                pass
    return count


def _rlimits(limits: Limits, use_nproc: bool) -> tuple[tuple[int, int, int], ...]:
    out = []
    if limits.address_space_mb:
        out.append((resource.RLIMIT_AS, limits.address_space_mb * MiB, limits.address_space_mb * MiB))
    if limits.cpu_seconds:
        # SIGXCPU at the soft limit, SIGKILL a little later at the hard limit.
        out.append((resource.RLIMIT_CPU, limits.cpu_seconds, limits.cpu_seconds + 5))
    if limits.file_size_mb:
        out.append((resource.RLIMIT_FSIZE, limits.file_size_mb * MiB, limits.file_size_mb * MiB))
    if limits.open_files:
        out.append((resource.RLIMIT_NOFILE, limits.open_files, limits.open_files))
    if use_nproc and limits.max_processes:
        # RLIMIT_NPROC counts every process of the uid, so the limit is "what the user has now + N".
        n = _count_user_processes(os.getuid()) + limits.max_processes
        out.append((resource.RLIMIT_NPROC, n, n))
    return tuple(out)


def _kill_group(pgid: int, until_empty: bool) -> None:
    """SIGKILL the process group; with ``until_empty`` repeat until no member is left (call that only after
    the leader was reaped: a zombie leader still counts as a member). A pgid is not reused while the group
    has members, so repeating is safe."""
    for _ in range(200 if until_empty else 1):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            return
        if until_empty and not _group_has_live_members(pgid):
            return  # only zombies left: they are dead, waiting for init to reap them
        time.sleep(0.01)
    if until_empty:
        log.warning("sandbox: process group %d still has live members after repeated SIGKILL", pgid)


def _group_has_live_members(pgid: int) -> bool:
    """Any non-zombie process in group ``pgid`` (from /proc/<pid>/stat: state is field 3, pgrp field 5)."""
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as fh:
                fields = fh.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _kill_cgroup(cg: Path, wait_s: float = 5.0) -> None:
    end = time.monotonic() + wait_s
    while time.monotonic() < end:
        try:
            pids = [int(p) for p in (cg / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)
    log.warning("sandbox: cgroup %s still has processes after %.1fs", cg, wait_s)


def _remove_cgroup(cg: Path) -> None:
    for _ in range(50):
        try:
            cg.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
    log.warning("sandbox: could not remove cgroup %s", cg)


def _signal_name(num: int) -> str:
    try:
        return signal.Signals(num).name
    except ValueError:
        return f"SIG{num}"


@dataclass
class Prepared:
    """Parent-side set-up of one run: the child plan and the cgroup to clean up afterwards."""

    plan: _ChildPlan
    cgroup: Path | None
    pids_limit: str

    def cleanup(self) -> None:
        if self.cgroup is not None:
            _kill_cgroup(self.cgroup)
            _remove_cgroup(self.cgroup)


def prepare(spec: SandboxSpec) -> Prepared:
    """Create the per-run cgroup (if any) and the plan the child applies before running anything."""
    host = host_isolation()
    cg: Path | None = None
    if host.cgroup_pids_root and spec.limits.max_processes:
        cg = Path(host.cgroup_pids_root) / f"s_{os.getpid()}_{uuid.uuid4().hex[:12]}"
        try:
            cg.mkdir()
            (cg / "pids.max").write_text(str(spec.limits.max_processes))
        except OSError as exc:
            log.warning("sandbox: cgroup set-up failed (%s); no process-count limit for this run", exc)
            if cg.exists():
                _remove_cgroup(cg)
            cg = None
    use_nproc = not host.is_root
    pids_limit = "cgroup" if cg else ("rlimit" if use_nproc and spec.limits.max_processes else "none")
    readonly = tuple(str(Path(p).resolve()) for p in spec.readonly_paths if Path(p).exists())
    plan = _ChildPlan(
        rlimits=_rlimits(spec.limits, use_nproc),
        cgroup_procs=str(cg / "cgroup.procs") if cg else None,
        netns=spec.isolate_network and host.netns,
        mountns=bool(readonly) and host.mountns,
        readonly_paths=readonly,
        keep_writable=str(Path(spec.cwd).resolve()),
        drop_caps=spec.drop_capabilities and host.capdrop,
    )
    return Prepared(plan, cg, pids_limit)


@dataclass(frozen=True)
class Supervised:
    """What supervising one child produced (the parts of SandboxResult that the parent measures)."""

    returncode: int
    timed_out: bool
    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    stdout: CapturedStream
    stderr: CapturedStream


def supervise(pid: int, out_fd: int, err_fd: int, started: float, timeout_s: float | None,
              head_bytes: int, tail_bytes: int) -> Supervised:
    """Capture a child's output, enforce the wall-clock timeout, kill its group, reap it with wait4.

    ``pid`` must be our child and the leader of its own process group; ``out_fd``/``err_fd`` are the read
    ends of its stdout/stderr pipes (closed here).
    """
    out = _Bounded(head_bytes, tail_bytes)
    err = _Bounded(head_bytes, tail_bytes)
    sel = selectors.DefaultSelector()
    sinks = {out_fd: out, err_fd: err}
    for fd in sinks:
        os.set_blocking(fd, False)
        sel.register(fd, selectors.EVENT_READ)
    pidfd = None
    try:
        pidfd = os.pidfd_open(pid)
        sel.register(pidfd, selectors.EVENT_READ)
    except (AttributeError, OSError):
        pidfd = None  # fall back to polling every 50 ms
    base = 1 if pidfd is not None else 0

    def pump(wait: float) -> None:
        for key, _ in sel.select(wait):
            if key.fd == pidfd:
                continue
            try:
                chunk = os.read(key.fd, MiB)
            except BlockingIOError:
                continue
            if chunk:
                sinks[key.fd].add(chunk)
            else:
                sel.unregister(key.fd)

    def exited() -> bool:
        # WNOWAIT: leave the child a zombie so its pid (= our pgid) cannot be reused before killpg.
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None

    deadline = started + timeout_s if timeout_s and timeout_s > 0 else None
    timed_out = False
    while not exited():
        now = time.perf_counter()
        if deadline is not None and now >= deadline:
            timed_out = True
            break
        wait = 0.05 if pidfd is None else 1.0
        if deadline is not None:
            wait = min(wait, max(0.0, deadline - now))
        if len(sel.get_map()) > base:
            pump(wait)  # also wakes up when the pidfd reports the exit
        elif pidfd is not None:
            sel.select(wait)
        else:
            time.sleep(wait)
    # Kill the group while the child (alive or zombie) still holds the pgid, then reap it.
    _kill_group(pid, until_empty=False)
    _, status, usage = os.wait4(pid, 0)
    wall_s = time.perf_counter() - started
    _kill_group(pid, until_empty=True)
    drain_end = time.monotonic() + 2.0  # pipes held by escaped processes must not block us
    while len(sel.get_map()) > base and time.monotonic() < drain_end:
        pump(0.1)
    sel.close()
    for fd in (out_fd, err_fd, pidfd):
        if fd is not None:
            os.close(fd)
    return Supervised(os.waitstatus_to_exitcode(status), timed_out, wall_s, usage.ru_utime + usage.ru_stime,
                      usage.ru_maxrss / 1024.0, out.freeze(), err.freeze())


def result_from(sup: Supervised, prep: Prepared) -> SandboxResult:
    rc = sup.returncode
    return SandboxResult(
        returncode=rc, exit_status=rc if rc >= 0 else None, signal=_signal_name(-rc) if rc < 0 else None,
        timed_out=sup.timed_out, wall_s=sup.wall_s, cpu_s=sup.cpu_s, peak_rss_mb=sup.peak_rss_mb,
        stdout=sup.stdout, stderr=sup.stderr, net_isolated=prep.plan.netns, fs_readonly=prep.plan.mountns,
        pids_limit=prep.pids_limit, caps_dropped=prep.plan.drop_caps,
    )


def launch_failure(prep: Prepared, started: float, message: str) -> SandboxResult:
    empty = CapturedStream(b"", b"", 0)
    return SandboxResult(None, None, None, False, time.perf_counter() - started, 0.0, 0.0, empty, empty,
                         False, False, prep.pids_limit, False, launch_error=message)


def run_sandboxed(spec: SandboxSpec) -> SandboxResult:
    """Run ``spec.argv`` (exec'd) contained; never raises for anything the child does."""
    prep = prepare(spec)
    started = time.perf_counter()
    try:
        try:
            proc = subprocess.Popen(
                list(spec.argv), cwd=spec.cwd, env=dict(spec.env), stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=lambda: _child_setup(prep.plan),
                close_fds=True,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return launch_failure(prep, started, f"{type(exc).__name__}: {exc}")
        # supervise() owns (and closes) duplicates of the pipe ends; Popen's own objects are closed here.
        out_fd, err_fd = os.dup(proc.stdout.fileno()), os.dup(proc.stderr.fileno())
        proc.stdout.close()
        proc.stderr.close()
        sup = supervise(proc.pid, out_fd, err_fd, started, spec.timeout_s, spec.output_head_bytes,
                        spec.output_tail_bytes)
        proc.returncode = sup.returncode  # reaped by supervise(); keep Popen from waiting again
        return result_from(sup, prep)
    finally:
        prep.cleanup()
