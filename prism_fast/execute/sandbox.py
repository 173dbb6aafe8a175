"""Run one untrusted command (a generated Manim script, an audit of one, a TeX re-compile) contained.

This module is the one execution service: everything that runs a script goes through :func:`prepare` and
:func:`_child_setup` (the exec path :func:`run_sandboxed`, and the prefork worker's forked children in
``worker.py``). Threat model and what is and is not contained: docs/security.md.

Per run, at the ``namespaces`` level (root):

* a fresh session and process group; per-run ``pids`` and ``memory`` cgroups, killed as a whole and removed
  afterwards; rlimits (address space, CPU seconds, file size, open files); a wall-clock timeout;
* new mount, PID, network, IPC and UTS namespaces. The process that runs the script is PID 1 of its PID
  namespace (the forked process outside only relays its exit status, :func:`_relay_exit`), so nothing it starts
  survives it, and it sees neither its parent nor any other process (no ``/proc/<pid>/environ`` of ancestors);
* the file-system view of ``jail.py``: system, Python and package code read-only (the package's data hidden),
  its own scratch directory (:class:`scratch_dir`, a size-capped tmpfs) and a private ``/tmp`` writable, nothing
  else mounted (no project, no ``runs_root``, no store, no caches but the verified TeX cache, read-only);
* uid/gid 65534, no capabilities, ``no_new_privs``; ``PR_SET_PDEATHSIG`` so that a worker killed with SIGKILL
  takes its sample with it;
* an environment built from an allow-list (no tokens, keys or proxies); ``HOME``/``TMPDIR`` in the scratch;
* stdin ``/dev/null``; stdout/stderr read incrementally, a bounded head and tail kept;
* CPU time and peak RSS of the tree from ``os.wait4``.

Without root the same view is built by bubblewrap (level ``bwrap``); where neither works the run is refused
(``launch_error``) unless the caller asked for level ``unsafe`` explicitly, which keeps only the older
protections (rlimits, cgroups, network namespace, read-only binds of ``readonly_paths``). Every result records
the level (``sandbox``) and each protection that applied (``protections``); nothing is silently skipped.

Known limits: ``RLIMIT_CPU`` is per process (the wall-clock timeout bounds a tree); peak RSS is the maximum over
the processes reaped, not a sum; ``preexec_fn`` runs Python between fork and exec (system calls only here, from
one thread at a time in our callers).
"""

from __future__ import annotations

import atexit
import ctypes
import logging
import os
import re
import resource
import selectors
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

from prism_fast.execute import jail

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
CLONE_NEWUTS = 0x04000000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
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
    # resident memory of the whole tree (cgroup memory controller; tmpfs pages of /tmp and the scratch count)
    memory_mb: int | None = 8192
    tmp_mb: int = 512  # the private /tmp and /dev/shm of the view


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
    readonly_paths: tuple[str, ...] = ()  # "unsafe" level only: paths bind-mounted read-only
    drop_capabilities: bool = True
    # The view (jail.py): extra host paths the script may read (e.g. the verified TeX cache) and the Python
    # interpreters the command runs (their installations are made visible read-only).
    visible_paths: tuple[str, ...] = ()
    visible_at: tuple[tuple[str, str], ...] = ()  # (host path, path inside): read-only under another name
    interpreters: tuple[str, ...] = ()
    # "auto": the strongest level this host offers, refusing to run when neither root namespaces nor
    # bubblewrap work; "unsafe": run without the view (explicit opt-in, recorded per row).
    level: str = "auto"


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
    sandbox: str = "unsafe"  # the level applied: namespaces | bwrap | unsafe
    protections: tuple[str, ...] = ()  # every protection that applied (sorted)
    ran_as: str | None = None  # set when a backend ran the command another way (prefork -> cli under bwrap)


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
    pidns: bool = False
    cgroup_memory_root: str | None = None
    bwrap: str | None = None  # path of a bubblewrap that works here without root

    @property
    def level(self) -> str:
        """The strongest level this host offers: namespaces (root) | bwrap (no root) | none."""
        if self.is_root and self.mountns and self.pidns:
            return "namespaces"
        if self.bwrap:
            return "bwrap"
        return "none"


def _probe(preexec) -> bool:
    try:
        return subprocess.run(["/bin/true"], preexec_fn=preexec, stdin=subprocess.DEVNULL,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              timeout=20).returncode == 0
    except (subprocess.SubprocessError, OSError):
        return False


def _probe_pidns() -> None:
    """unshare a PID namespace and fork into it, as the real set-up does."""
    _unshare(CLONE_NEWNS | CLONE_NEWPID)
    pid = os.fork()
    if pid:
        _relay_exit(pid)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    _mount("proc", "/proc", "proc", 0)


def _probe_bwrap() -> str | None:
    exe = shutil.which("bwrap")
    if exe is None:
        return None
    try:
        ok = subprocess.run([exe, "--unshare-all", "--ro-bind", "/", "/", "--proc", "/proc", "--dev", "/dev",
                             "/bin/true"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, timeout=20).returncode == 0
    except (subprocess.SubprocessError, OSError):
        ok = False
    return exe if ok else None


def _cgroup_root(controller: str) -> str | None:
    """A writable directory of a cgroup controller (``pids`` or ``memory``) where per-sample groups can be made."""
    limit_file = {"pids": ("pids.max",), "memory": ("memory.limit_in_bytes", "memory.max")}[controller]
    candidates = [Path("/sys/fs/cgroup") / controller]
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
                (root / "cgroup.subtree_control").write_text(f"+{controller}")
            probe = root / f"probe_{os.getpid()}"
            probe.mkdir(exist_ok=True)
            ok = any((probe / f).exists() for f in limit_file)
            probe.rmdir()
            if ok:
                _sweep_stale_cgroups(root)
                return str(root)
        except OSError:
            continue
    return None


def _cgroup_pids_root() -> str | None:
    return _cgroup_root("pids")


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
    pidns = is_root and mountns and _probe(_probe_pidns)
    capdrop = is_root and _probe(_drop_caps)
    cgroup = _cgroup_root("pids") if is_root else None
    memory = _cgroup_root("memory") if is_root else None
    bwrap = None if (is_root and mountns and pidns) else _probe_bwrap()
    info = HostIsolation(is_root, netns, mountns, capdrop, cgroup, pidns, memory, bwrap)
    missing = [name for name, ok in (("network namespace", netns), ("mount namespace", mountns),
                                     ("PID namespace", pidns), ("capability drop", capdrop),
                                     ("cgroup pids", cgroup), ("cgroup memory", memory)) if not ok]
    if missing and info.level != "bwrap":
        log.warning("sandbox: not available on this host (%s): %s; rows record what was applied",
                    "root" if is_root else "non-root", ", ".join(missing))
    if info.level == "none":
        log.warning("sandbox: neither root namespaces nor a working bubblewrap (unprivileged user namespaces) "
                    "here: untrusted scripts are refused unless execute.sandbox=unsafe is set explicitly")
    return info


# ----------------------------------------------------------------------------------------------------------
# Child-side set-up (runs between fork and exec: system calls only)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _unshare(flags: int) -> None:
    _check(_LIBC.unshare(ctypes.c_int(flags)), "unshare")


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    _check(_LIBC.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


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
    cgroup_procs: tuple[str, ...]  # cgroup.procs files to join (pids, memory)
    netns: bool
    mountns: bool
    readonly_paths: tuple[str, ...]
    keep_writable: str
    drop_caps: bool
    pidns: bool = False
    view: dict | None = None  # jail.View.to_dict(): the script's whole file-system view, then an unprivileged uid

    @classmethod
    def from_dict(cls, d: dict) -> "_ChildPlan":
        """Inverse of ``dataclasses.asdict`` (the prefork worker receives the plan as JSON)."""
        return cls(rlimits=tuple(tuple(r) for r in d["rlimits"]), cgroup_procs=tuple(d["cgroup_procs"]),
                   netns=d["netns"], mountns=d["mountns"], readonly_paths=tuple(d["readonly_paths"]),
                   keep_writable=d["keep_writable"], drop_caps=d["drop_caps"], pidns=d.get("pidns", False),
                   view=d.get("view"))


PR_SET_PDEATHSIG = 1
OOM_SCORE_ADJ = 1000  # Ray's worker_oom_score_adjustment: what every actor's process (and so its samples) has
NICENESS = 15  # Ray's default worker niceness (RAY_worker_niceness): what every actor's process (and its samples) has


def _raise_niceness(value: int) -> None:
    """Lower this process's CPU priority to niceness ``value`` where it is higher (never needs a privilege)."""
    try:
        now = os.nice(0)
        if now < value:
            os.nice(value - now)
    except OSError:
        pass


def _raise_oom_score_adj(value: int) -> None:
    """Set this process's ``oom_score_adj`` to ``value`` where that raises it (never needs a privilege)."""
    try:
        fd = os.open("/proc/self/oom_score_adj", os.O_RDWR)
    except OSError:
        return
    try:
        if int(os.read(fd, 16) or b"0") < value:
            os.lseek(fd, 0, os.SEEK_SET)
            os.write(fd, str(value).encode())
    except (OSError, ValueError):
        pass
    finally:
        os.close(fd)


def die_with_parent() -> None:
    """SIGKILL this process when the thread that forked it exits (``prctl(PR_SET_PDEATHSIG)``)."""
    _LIBC.prctl(PR_SET_PDEATHSIG, ctypes.c_ulong(signal.SIGKILL), 0, 0, 0)


def _relay_exit(pid: int) -> None:
    """The process left outside a new PID namespace: wait for its only child (PID 1 inside) and end exactly
    as it ended (same exit status, or killed by the same signal), so the supervisor sees the sample's status.
    Its own descriptors are closed first: the output pipes must report EOF when the sample is gone, and a
    ``subprocess`` error pipe must see only the exec'ing process. Never returns."""
    try:
        os.closerange(0, 65536)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        while True:
            try:
                _, status = os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
        if os.WIFSIGNALED(status):
            sig = os.WTERMSIG(status)
            try:
                signal.signal(sig, signal.SIG_DFL)
            except (OSError, ValueError):
                pass
            os.kill(os.getpid(), sig)
            os._exit(128 + sig)
        os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)
    except BaseException:  # noqa: BLE001 - never fall through into the sample's code path
        os._exit(125)


# What a Python interpreter sets for itself at start-up when it inherits default dispositions (a `manim` started
# from a shell): KeyboardInterrupt on SIGINT, SIGPIPE and SIGXFSZ ignored (errors instead), the rest default.
_PYTHON_STARTUP_DISPOSITIONS = {signal.SIGINT: signal.default_int_handler, signal.SIGPIPE: signal.SIG_IGN,
                                signal.SIGXFSZ: signal.SIG_IGN}


def _shell_signal_dispositions(in_process: bool) -> None:
    """Signal dispositions as a shell-started `manim` has them, whoever started the evaluator: a command run with
    ``&`` from a script ignores SIGINT and SIGQUIT, ``nohup`` SIGHUP, and an ignored signal stays ignored across
    fork and exec — a script that signals itself would otherwise get another row (found when the suite ran in
    the background). Before an exec only ignored signals need resetting (handlers end with the exec, and the new
    interpreter sets its own); a prefork child runs manim in this interpreter, so it gets the start-up state."""
    for sig in signal.valid_signals():
        if sig in (signal.SIGKILL, signal.SIGSTOP):
            continue
        try:
            if in_process:
                signal.signal(sig, _PYTHON_STARTUP_DISPOSITIONS.get(sig, signal.SIG_DFL))
            elif signal.getsignal(sig) == signal.SIG_IGN:
                signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError, RuntimeError):  # not settable here (e.g. a real-time signal in use)
            pass


def _child_setup(plan: _ChildPlan, exec_follows: bool = True) -> None:
    """Applied in the child after fork: before exec (sandbox) or before running manim in-process (worker).

    With a PID namespace this forks once more: the caller's process stays outside and relays the exit status
    (``_relay_exit``); the function returns in the new namespace's PID 1, which becomes the sample. Killing
    that process (the supervisor's group kill, a timeout) makes the kernel kill everything else inside."""
    # The same process state whoever starts the sample (a Ray actor, or the Exec head start in the driver):
    # no blocked signal, as in a `manim` started from a shell (the toolkit's; a Ray worker inherits SIGINT blocked
    # from its raylet, and a mask passes to every descendant), and the OOM killer's first choice, as every Ray
    # worker is (oom_score_adj 1000): a runaway sample goes before the driver, Ray or a render actor of another
    # sample, never after them
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    _shell_signal_dispositions(in_process=not exec_follows)
    _raise_oom_score_adj(OOM_SCORE_ADJ)
    _raise_niceness(NICENESS)  # (and no more CPU than an actor's sample gets: the driver runs at its user's niceness)
    os.setsid()
    die_with_parent()  # a worker killed with -9 takes its sample down with it (no orphan to outlive the run)
    for procs in plan.cgroup_procs:
        fd = os.open(procs, os.O_WRONLY)
        try:
            os.write(fd, str(os.getpid()).encode())
        finally:
            os.close(fd)
    for which, soft, hard in plan.rlimits:
        resource.setrlimit(which, (soft, hard))
    flags = (CLONE_NEWNET if plan.netns else 0) | (CLONE_NEWNS if plan.mountns else 0)
    if plan.view is not None:
        flags |= CLONE_NEWIPC | CLONE_NEWUTS
    if plan.pidns:
        flags |= CLONE_NEWPID
    if flags:
        _unshare(flags)
    if plan.pidns:
        pid = os.fork()
        if pid:
            _relay_exit(pid)
    if plan.view is not None:
        view = jail.View.from_dict(plan.view)
        jail.enter(view)
        if plan.drop_caps:
            _drop_caps(now=True)
        jail.drop_privileges(view)
        die_with_parent()  # cleared by the fork and by the uid change: PID 1 dies with the relaying process
        os.chdir(plan.keep_writable)
        return
    if plan.mountns:
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


# Allow-listed variables a child gets where its parent has none: what a Ray render or audit actor hands on (Ray sets
# OMP_NUM_THREADS to a worker's CPUs, 1, where it is unset), so that a script -- and the BLAS thread pool of the numpy
# it imports -- sees the same value in a process outside Ray (the Exec head start in the driver, profile-render).
ENV_DEFAULTS: dict[str, str] = {"OMP_NUM_THREADS": "1"}


def scrub_env(parent_env: Mapping[str, str], home: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's environment: allow-listed variables (:data:`ENV_DEFAULTS` where the parent has none),
    HOME/TMPDIR in the sample directory, then ``extra``."""
    # (.get: another thread may remove a variable meanwhile -- the driver's head start renders during ray.init)
    env = {k: v for k in ENV_ALLOW if (v := parent_env.get(k)) is not None}
    for k, v in ENV_DEFAULTS.items():
        env.setdefault(k, v)
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
    """Parent-side set-up of one run: the child plan, the level and the cgroups to clean up afterwards."""

    plan: _ChildPlan
    cgroup: Path | None
    pids_limit: str
    level: str = "unsafe"
    protections: tuple[str, ...] = ()
    cgroups: tuple[Path, ...] = ()
    refusal: str | None = None  # set when the run must not start (no sandbox and no explicit opt-out)
    bwrap_prefix: tuple[str, ...] = ()  # bwrap level: the command line that builds the view

    def cleanup(self) -> None:
        for cg in self.cgroups:
            _kill_cgroup(cg)
        for cg in self.cgroups:
            _remove_cgroup(cg)


def jail_root() -> str:
    """An empty directory the new root's tmpfs is mounted on, inside each child's own mount namespace: in this
    process's private run root (:func:`run_root`), never a fixed name in the shared temp dir that another user could
    have made first (or made a symbolic link)."""
    path = run_root() / ".jail_root"
    path.mkdir(mode=0o700, exist_ok=True)
    return str(path)


def _make_cgroup(root: str, controller: str, limit: int) -> Path | None:
    cg = Path(root) / f"s_{os.getpid()}_{uuid.uuid4().hex[:12]}"
    try:
        cg.mkdir()
        if controller == "pids":
            (cg / "pids.max").write_text(str(limit))
        elif (cg / "memory.limit_in_bytes").exists():  # v1
            (cg / "memory.limit_in_bytes").write_text(str(limit))
        else:  # v2
            (cg / "memory.max").write_text(str(limit))
            if (cg / "memory.swap.max").exists():
                (cg / "memory.swap.max").write_text("0")
        return cg
    except OSError as exc:
        log.warning("sandbox: cgroup %s set-up failed (%s); no %s limit for this run", controller, exc, controller)
        if cg.exists():
            _remove_cgroup(cg)
        return None


def _chown_tree(path: str, uid: int, gid: int) -> None:
    """Hand the scratch directory (made by trusted code) to the unprivileged uid; links are not followed."""
    os.lchown(path, uid, gid)
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            os.lchown(os.path.join(dirpath, name), uid, gid)


def effective_level(requested: str) -> str:
    """The level a spec asking for ``requested`` gets here: ``unsafe``, ``namespaces``, ``bwrap`` or ``none``."""
    return "unsafe" if requested == "unsafe" else host_isolation().level


def read_only_for_script(requested: str) -> bool:
    """Whether a path given to a run at this level (``visible_at`` of the view, or ``readonly_paths`` at the unsafe
    level) is read-only for the script: always in the view (namespaces, bwrap), at the unsafe level only with a
    mount namespace."""
    level = effective_level(requested)
    return level in ("namespaces", "bwrap") or (level == "unsafe" and host_isolation().mountns)


def prepare(spec: SandboxSpec) -> Prepared:
    """Decide the level, create the per-run cgroups and the plan the child applies before running anything."""
    host = host_isolation()
    level = effective_level(spec.level)
    if level == "none":
        refusal = ("no sandbox on this host: not root with mount+PID namespaces, and no working bubblewrap "
                   "(unprivileged user namespaces); untrusted scripts are not run (set execute.sandbox=unsafe "
                   "to run them anyway, recorded per row)")
        plan = _ChildPlan((), (), False, False, (), str(Path(spec.cwd).resolve()), False)
        return Prepared(plan, None, "none", level="refused", refusal=refusal)
    cgroups: list[Path] = []
    pid_cg = mem_cg = None
    if host.cgroup_pids_root and spec.limits.max_processes:
        pid_cg = _make_cgroup(host.cgroup_pids_root, "pids", spec.limits.max_processes)
    if host.cgroup_memory_root and spec.limits.memory_mb:
        mem_cg = _make_cgroup(host.cgroup_memory_root, "memory", spec.limits.memory_mb * MiB)
    cgroups = [c for c in (pid_cg, mem_cg) if c is not None]
    use_nproc = not host.is_root
    pids_limit = "cgroup" if pid_cg else ("rlimit" if use_nproc and spec.limits.max_processes else "none")
    cwd = str(Path(spec.cwd).resolve())
    view = None
    bwrap_prefix: tuple[str, ...] = ()
    if level in ("namespaces", "bwrap"):
        visible = tuple(str(Path(p).resolve()) for p in spec.visible_paths if Path(p).exists())
        at = tuple((str(Path(s).resolve()), d) for s, d in spec.visible_at if Path(s).exists())
        v = jail.default_view(jail_root(), cwd, extra_read_only=visible, interpreters=tuple(spec.interpreters),
                              tmp_mb=spec.limits.tmp_mb, read_only_at=at)
        if level == "namespaces":
            _chown_tree(cwd, v.uid, v.gid)
            view = v.to_dict()
        else:  # bwrap maps our own uid to v.uid inside: the scratch stays ours
            bwrap_prefix = tuple(jail.bwrap_argv(v, [], bwrap=host.bwrap))
    readonly = tuple(_widen_run_root(str(Path(p).resolve())) for p in spec.readonly_paths if Path(p).exists())
    plan = _ChildPlan(
        rlimits=_rlimits(spec.limits, use_nproc),
        cgroup_procs=tuple(str(c / "cgroup.procs") for c in cgroups),
        netns=spec.isolate_network and host.netns,
        mountns=(view is not None) or (bool(readonly) and host.mountns and level == "unsafe"),
        readonly_paths=readonly if view is None else (),
        keep_writable=cwd,
        drop_caps=spec.drop_capabilities and host.capdrop,
        pidns=view is not None,
        view=view,
    )
    prot = {"env_allowlist", "rlimits", "process_group"}
    if pid_cg:
        prot.add("cgroup_pids")
    if mem_cg:
        prot.add("cgroup_memory")
    if level == "namespaces":
        prot |= {"view", "pid_ns", "ipc_ns", "uts_ns", f"uid_{jail.NOBODY}", "no_new_privs", "tmpfs_tmp"}
    if level == "bwrap":
        prot |= {"view", "user_ns", "pid_ns", "ipc_ns", "uts_ns", "net_ns", "caps_dropped", "no_new_privs",
                 "tmpfs_tmp"}
    if plan.netns:
        prot.add("net_ns")
    if plan.drop_caps or level != "unsafe":
        prot.add("caps_dropped")
    if plan.mountns and view is None:
        prot.add("readonly_binds")
    if os.path.ismount(cwd):
        prot.add("scratch_capped")
    return Prepared(plan, pid_cg, pids_limit, level=level, protections=tuple(sorted(prot)), cgroups=tuple(cgroups),
                    bwrap_prefix=bwrap_prefix)


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
        stdout=sup.stdout, stderr=sup.stderr, net_isolated=prep.plan.netns or prep.level == "bwrap",
        fs_readonly=prep.plan.mountns or prep.level == "bwrap", pids_limit=prep.pids_limit,
        caps_dropped="caps_dropped" in prep.protections, sandbox=prep.level, protections=prep.protections,
    )


def launch_failure(prep: Prepared, started: float, message: str) -> SandboxResult:
    empty = CapturedStream(b"", b"", 0)
    return SandboxResult(None, None, None, False, time.perf_counter() - started, 0.0, 0.0, empty, empty,
                         False, False, prep.pids_limit, False, launch_error=message, sandbox=prep.level,
                         protections=prep.protections)


def run_sandboxed(spec: SandboxSpec) -> SandboxResult:
    """Run ``spec.argv`` (exec'd) contained; never raises for anything the child does."""
    prep = prepare(spec)
    started = time.perf_counter()
    try:
        if prep.refusal:
            return launch_failure(prep, started, prep.refusal)
        argv = [*prep.bwrap_prefix, *spec.argv]
        try:
            proc = subprocess.Popen(
                argv, cwd=spec.cwd, env=dict(spec.env), stdin=subprocess.DEVNULL,
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


# ----------------------------------------------------------------------------------------------------------
# Scratch directories: the only place a script may write that outlives it (until the caller harvests it)


def _umount(path: str) -> None:
    _LIBC.umount2(path.encode(), ctypes.c_int(2))  # MNT_DETACH; an error leaves a plain directory


def _owner_file(path: Path) -> Path:
    """``.<name>.owner`` beside a scratch directory: the pid of the process that made it. (The directory's own
    name keeps the length of a plain ``mkdtemp`` name: paths in tracebacks, hence error texts, depend on it.)"""
    return path.with_name(f".{path.name}.owner")


def _mounts_at_or_below(path: Path) -> list[str]:
    """The mount points at ``path`` or below it (this mount namespace's ``/proc/self/mountinfo``), deepest first:
    a dead worker's run root holds its samples' scratch tmpfs mounts."""
    top = os.path.join(os.path.realpath(path.parent), path.name)  # (the entry itself is not followed)
    found = []
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="surrogateescape") as fh:
            for line in fh:
                fields = line.split(" ")
                if len(fields) < 5:
                    continue
                point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), fields[4])  # \040 = space
                if point == top or point.startswith(top + "/"):
                    found.append(point)
    except OSError:
        return [str(path)] if os.path.ismount(path) else []
    return sorted(set(found), key=lambda p: (-p.count("/"), p))


def _remove_tree(entry: Path) -> None:
    """Unmount everything mounted at or below ``entry`` (lazily) and remove it; errors leave what could not go."""
    for point in _mounts_at_or_below(entry):
        _umount(point)
    shutil.rmtree(entry, ignore_errors=True)


@lru_cache(maxsize=None)
def _sweep_scratch(parent: str) -> None:
    """Unmount and remove scratch directories whose owner process is gone (a worker killed mid-render), and, in a
    user's directory of run roots (:func:`run_root`), the run roots of dead processes with every scratch mount
    still inside them."""
    for owner_file in Path(parent).glob(".*.owner"):
        try:
            owner = int(owner_file.read_text())
            os.kill(owner, 0)
            continue
        except ProcessLookupError:
            pass
        except (ValueError, OSError):
            continue
        entry = owner_file.with_name(owner_file.name[1:-len(".owner")])
        _remove_tree(entry)
        owner_file.unlink(missing_ok=True)


# Scratch roots: one private directory per process and user (a fixed name in the shared temp dir would become
# root's after a root run, so that every later non-root run failed, and any local user could create it first).
#
#   <temp>/prism_fast-<euid>/            this user's directory (0700, owner and mode checked at every first use;
#                                        refused -- with a warning -- when another user owns it or it is a link)
#       run_XXXXXXXX/  .run_XXXXXXXX.owner   one process's run root (mkdtemp, 0700) and its owner pid
#           render_<id>_*/ audit_<id>_*/ tex_own_*/ determinism_*/ prism_fast_prefork_*/ .jail_root
#
# A process makes its run root at its first use and removes it at exit; a process killed with SIGKILL (a Ray actor
# at the end of a run, an OOM kill) leaves it, and the next process of the same user on the host that makes its
# own removes every run root whose owner is gone, unmounting the scratch tmpfs mounts left inside first. Where the
# user's directory is refused, the run root is a fresh ``mkdtemp`` directly in the temp dir (private, removed at
# exit, but a crash leaves it for the operator).

USER_DIR_PREFIX = "prism_fast-"
RUN_ROOT_PREFIX = "run_"
_RUN_ROOTS: dict[tuple[int, str], Path] = {}  # (pid, temp dir) -> this process's run root
_RUN_ROOTS_LOCK = threading.Lock()


def _not_private(path: Path) -> str | None:
    """Why ``path`` is not a directory that only this user controls (None when it is one). A directory of ours
    that others may enter is made 0700."""
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"cannot stat it: {exc}"
    if stat.S_ISLNK(st.st_mode):
        return "it is a symbolic link"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a directory"
    if st.st_uid != os.geteuid():
        return f"it is owned by uid {st.st_uid}, not {os.geteuid()}"
    if stat.S_IMODE(st.st_mode) & 0o077:
        try:
            os.chmod(path, 0o700, follow_symlinks=False)
        except (OSError, NotImplementedError) as exc:
            return f"mode {stat.S_IMODE(st.st_mode):o} and chmod failed: {exc}"
    return None


def user_dir(temp: str | os.PathLike | None = None) -> Path | None:
    """``<temp>/prism_fast-<euid>``: this user's directory of run roots, made 0700 when missing. None (warned) when
    that name exists and is not a directory this user owns (pre-created by another user, a symbolic link)."""
    path = Path(temp or tempfile.gettempdir()) / f"{USER_DIR_PREFIX}{os.geteuid()}"
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        log.warning("sandbox: cannot create %s (%s); this process's scratch root has no crash recovery", path, exc)
        return None
    why = _not_private(path)
    if why is not None:
        log.warning("sandbox: refusing %s as this user's scratch directory (%s); this process uses a fresh private "
                    "directory instead, which a crash would leave behind", path, why)
        return None
    return path


def run_root(temp: str | os.PathLike | None = None) -> Path:
    """This process's private scratch root (made once per process and temp dir, ``mkdtemp``, 0700): the parent of
    its samples' scratch directories, removed at exit. The first call sweeps the run roots of this user's dead
    processes (see the layout above)."""
    temp = str(temp or tempfile.gettempdir())
    key = (os.getpid(), temp)
    with _RUN_ROOTS_LOCK:
        root = _RUN_ROOTS.get(key)
        if root is not None and root.is_dir():
            return root
        base = user_dir(temp)
        if base is not None:
            _sweep_scratch.__wrapped__(str(base))
            root = Path(tempfile.mkdtemp(prefix=RUN_ROOT_PREFIX, dir=str(base)))
            _owner_file(root).write_text(str(os.getpid()))
        else:
            root = Path(tempfile.mkdtemp(prefix=f"{USER_DIR_PREFIX}{os.geteuid()}-", dir=temp))
        _RUN_ROOTS[key] = root
        atexit.register(_remove_run_root, root, os.getpid())
        return root


def _remove_run_root(root: Path, pid: int) -> None:
    if os.getpid() != pid:  # a forked child that runs atexit handlers (the prefork server's) must not
        return
    _remove_tree(root)
    _owner_file(root).unlink(missing_ok=True)


def scratch_root(explicit: str | os.PathLike | None = None) -> Path:
    """Where scratch directories go: ``explicit`` as given (an operator's or a test's own directory, e.g.
    ``RenderConfig.tmp_root``), else this process's :func:`run_root`."""
    if explicit:
        path = Path(explicit)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return run_root()


def _widen_run_root(path: str) -> str:
    """A run root given as read-only (render's ``protect_tmp_root``) stands for every run root of this user: the
    other processes' samples (unsafe level; the view mounts none of them)."""
    parent = os.path.dirname(path)
    if os.path.basename(parent) == f"{USER_DIR_PREFIX}{os.geteuid()}" and \
            any(os.path.realpath(r) == path for r in list(_RUN_ROOTS.values())):
        return parent
    return path


class owned_dir:
    """``with owned_dir(parent, prefix) as path``: a fresh private (0700) directory of this process, with the owner
    file of a scratch directory, so that the next scratch or owned directory made under ``parent`` after this
    process died (SIGKILL: no clean-up ran) removes it. Removed on exit."""

    def __init__(self, parent: str | os.PathLike, prefix: str):
        self.parent, self.prefix = Path(parent), prefix
        self.path: Path | None = None

    def __enter__(self) -> Path:
        self.parent.mkdir(parents=True, exist_ok=True)
        _sweep_scratch(str(self.parent))
        self.path = Path(tempfile.mkdtemp(prefix=self.prefix, dir=str(self.parent)))
        _owner_file(self.path).write_text(str(os.getpid()))
        return self.path

    def __exit__(self, *exc) -> None:
        if self.path is not None:
            shutil.rmtree(self.path, ignore_errors=True)
            _owner_file(self.path).unlink(missing_ok=True)


class scratch_dir:
    """``with scratch_dir(parent, prefix, size_mb) as path``: a fresh directory for one sample.

    As root it is a tmpfs of ``size_mb`` (its pages are charged to the memory cgroup of the process that
    writes them, so the sample's memory limit bounds it too); a script that fills it gets ENOSPC, the host
    disk never fills. Without root it is a plain directory (``capped`` is False; rows record it). Removed
    (unmounted) on exit unless ``keep``."""

    def __init__(self, parent: str | os.PathLike, prefix: str, size_mb: int | None = 2048, keep: bool = False):
        self.parent, self.prefix, self.size_mb, self.keep = Path(parent), prefix, size_mb, keep
        self.path: Path | None = None
        self.capped = False

    def __enter__(self) -> Path:
        self.parent.mkdir(parents=True, exist_ok=True)
        _sweep_scratch(str(self.parent))
        self.path = Path(tempfile.mkdtemp(prefix=self.prefix, dir=str(self.parent)))
        if self.size_mb and not self.keep and os.geteuid() == 0:
            _owner_file(self.path).write_text(str(os.getpid()))
            try:
                _mount("tmpfs", str(self.path), "tmpfs", MS_NOSUID | MS_NODEV, f"size={self.size_mb}m,mode=0700")
                self.capped = True
            except OSError as exc:
                log.warning("sandbox: scratch tmpfs failed (%s); scratch not size-capped", exc)
        return self.path

    def __exit__(self, *exc) -> None:
        if self.path is None or self.keep:
            return
        if self.capped:
            _umount(str(self.path))
        shutil.rmtree(self.path, ignore_errors=True)
        _owner_file(self.path).unlink(missing_ok=True)


def copy_regular_file(src: Path, dest: Path, max_bytes: int | None = None) -> None:
    """Copy a file a script left, without following a symlink it may have planted (to /dev/zero, a secret):
    only a regular file of at most ``max_bytes`` is taken; written atomically."""
    fd = os.open(src, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(f"{Path(src).name} is not a regular file")
        if max_bytes is not None and st.st_size > max_bytes:
            raise OSError(f"{Path(src).name} is larger than {max_bytes} bytes")
        partial = Path(dest).with_name(f".{Path(dest).name}.{os.getpid()}.part")
        with os.fdopen(os.dup(fd), "rb") as fin, open(partial, "wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
        os.replace(partial, dest)
    finally:
        os.close(fd)


def copy_tree(src: Path, dest: Path, max_bytes: int) -> int:
    """Copy the regular files below ``src`` (links and special files skipped, ``max_bytes`` in all); returns
    the bytes copied."""
    total = 0
    if not Path(src).is_dir() or Path(src).is_symlink():
        return 0
    for dirpath, dirnames, filenames in os.walk(src, followlinks=False):
        rel = Path(dirpath).relative_to(src)
        for name in sorted(filenames):
            path = Path(dirpath) / name
            try:
                size = path.lstat().st_size
                if not stat.S_ISREG(path.lstat().st_mode) or total + size > max_bytes:
                    continue
                (Path(dest) / rel).mkdir(parents=True, exist_ok=True)
                copy_regular_file(path, Path(dest) / rel / name, max_bytes - total)
                total += size
            except OSError as exc:
                log.warning("sandbox: %s not copied out: %s", path, exc)
    return total
