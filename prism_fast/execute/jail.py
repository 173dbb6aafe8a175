"""The file-system view of an untrusted script: what it can see, what it can write, and as whom it runs.

A script sees a fresh root (a small tmpfs) that holds, read-only, only what rendering needs: the system
directories (``/usr``, ``/etc``, the ``/bin``/``/lib`` links, TeX's ``/var/lib/texmf``, fontconfig's cache),
the Python installation and virtual environment that run manim, this package's code (without its data:
the bundled dataset with its reference answers, the fixtures and the gold labels are covered by empty
read-only mounts), and whatever the caller adds (the verified TeX cache). Writable are only the sample's own
scratch directory (a size-capped tmpfs made by :func:`prism_fast.execute.sandbox.scratch_dir`) and a fresh,
size-capped ``/tmp`` and ``/dev/shm``. ``/proc`` is that of the sample's own PID namespace; ``/dev`` holds
null/zero/full/random/urandom only. Everything else -- the project checkout, ``runs_root`` (results store,
render/audit/OCR caches), other samples' scratch, datasets, home directories, the host's ``/proc`` -- is not
mounted at all. After the view is built the process drops to an unprivileged uid/gid (no capabilities,
``no_new_privs``), so it cannot undo any of it.

Two ways to build the view, both from one :class:`View` that trusted code computes (:func:`default_view`):

* as root: :func:`enter` runs in the forked child (after ``unshare`` of the mount and PID namespaces) and
  makes the mounts itself, then ``pivot_root``\\s into the new root and drops privileges;
* without root: :func:`bwrap_argv` turns the same view into a ``bubblewrap`` command line (unprivileged
  user namespaces), used by the exec path.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

NOBODY = 65534  # the unprivileged uid/gid the script runs as

# Linux mount flags
MS_RDONLY = 1
MS_NOSUID = 2
MS_NODEV = 4
MS_NOEXEC = 8
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_PRIVATE = 1 << 18
MNT_DETACH = 2

_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41}

# System locations a render needs to read (missing ones are skipped). /sys is needed read-only because
# glibc, OpenBLAS and x264 count CPUs through it (x264's thread count changes the encoded bytes).
SYSTEM_PATHS: tuple[str, ...] = (
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt",
    "/var/lib/texmf", "/var/cache/fontconfig", "/sys",
)
# Data of this package that a script must never read (reference answers, gold labels, fixtures).
HIDDEN_PACKAGE_DATA: tuple[str, ...] = ("dataset/data", "fixtures", "report/data")
DEVICES: tuple[str, ...] = ("null", "zero", "full", "random", "urandom")

_LIBC = ctypes.CDLL(None, use_errno=True)


@dataclass(frozen=True)
class View:
    """What the script sees. Paths are absolute host paths, shown at the same path inside."""

    root: str  # an existing empty directory; the new root's tmpfs is mounted there (in the child's namespace)
    read_only: tuple[str, ...]
    writable: tuple[str, ...]  # the scratch directory (and nothing else)
    hidden: tuple[str, ...]  # covered by an empty read-only tmpfs (must lie inside a read-only path)
    tmp_mb: int = 512  # size of /tmp and of /dev/shm
    uid: int = NOBODY
    gid: int = NOBODY
    # (host path, path inside): read-only, shown at another path (a cache under runs_root must not reveal it)
    read_only_at: tuple[tuple[str, str], ...] = ()

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "View":
        d = dict(d)
        d["read_only_at"] = tuple(tuple(p) for p in d.get("read_only_at", ()))
        return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in d.items()})


def package_dir() -> Path:
    return Path(__file__).resolve().parents[1]


def python_paths(interpreters: tuple[str, ...] = ()) -> list[str]:
    """The installation prefixes a Python process needs: this interpreter's, its venv's, and those of the
    given interpreters (e.g. the one in manim's shebang) with their symlink targets."""
    out = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix}
    for exe in (sys.executable, *interpreters):
        if not exe:
            continue
        p = Path(exe)
        out.add(str(p.parent.parent))  # <prefix>/bin/python
        real = p.resolve()
        out.add(str(real.parent.parent))
    return sorted(out)


def _minimal(paths) -> list[str]:
    """Sorted, existing, absolute, resolved paths with those lying inside another one dropped."""
    keep: list[str] = []
    for p in sorted({os.path.normpath(os.path.abspath(p)) for p in paths if p}):
        if p == "/" or not os.path.lexists(p):
            continue
        if any(p == k or p.startswith(k.rstrip("/") + "/") for k in keep):
            continue
        keep.append(p)
    return keep


def default_view(root: str, scratch: str, extra_read_only: tuple[str, ...] = (), interpreters: tuple[str, ...] = (),
                 tmp_mb: int = 512, uid: int = NOBODY, gid: int = NOBODY,
                 read_only_at: tuple[tuple[str, str], ...] = ()) -> View:
    """The view for one sample whose scratch directory is ``scratch``."""
    pkg = package_dir()
    ro = _minimal([*SYSTEM_PATHS, *python_paths(interpreters), str(pkg), *extra_read_only])
    scratch = os.path.normpath(os.path.abspath(scratch))
    hidden = [str(pkg / rel) for rel in HIDDEN_PACKAGE_DATA if (pkg / rel).exists()]
    return View(root=os.path.abspath(root), read_only=tuple(ro), writable=(scratch,), hidden=tuple(hidden),
                tmp_mb=tmp_mb, uid=uid, gid=gid,
                read_only_at=tuple((os.path.abspath(s), os.path.abspath(d)) for s, d in read_only_at))


# ----------------------------------------------------------------------------------------------------------
# As root, inside the child (after unshare(CLONE_NEWNS | CLONE_NEWPID ...) and the fork into the new PID
# namespace): system calls only.


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    enc = lambda s: None if s is None else s.encode()  # noqa: E731
    _check(_LIBC.mount(enc(source), enc(target), enc(fstype), ctypes.c_ulong(flags), enc(data)), f"mount {target}")


def _pivot_root(new_root: str, put_old: str) -> None:
    nr = _SYS_PIVOT_ROOT.get(platform.machine())
    if nr is None:
        raise OSError(f"pivot_root: unknown syscall number on {platform.machine()}")
    _check(_LIBC.syscall(ctypes.c_long(nr), new_root.encode(), put_old.encode()), "pivot_root")


def _target(root: str, path: str) -> str:
    return root.rstrip("/") + path


def _make_target(target: str, like: str) -> None:
    if os.path.isdir(like):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644))


def _bind(src: str, dst: str, read_only: bool) -> None:
    mount(src, dst, None, MS_BIND | MS_REC)
    if read_only:
        mount(None, dst, None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def enter(view: View) -> None:
    """Build the view and switch into it (``pivot_root``); :func:`drop_privileges` follows.

    Must run as root in fresh mount and PID namespaces (this process = PID 1 of the latter)."""
    mount(None, "/", None, MS_REC | MS_PRIVATE)
    root = view.root
    mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=0755")
    for name in ("tmp", "dev", "proc"):
        os.makedirs(_target(root, "/" + name), exist_ok=True)
    # /tmp first: read-only paths (a venv, the TeX cache) may lie below the host's /tmp
    mount("tmpfs", _target(root, "/tmp"), "tmpfs", MS_NOSUID | MS_NODEV, f"size={view.tmp_mb}m,mode=1777")
    for path in view.read_only:
        dst = _target(root, path)
        if os.path.islink(path) and os.path.dirname(path) == "/":
            os.symlink(os.readlink(path), dst)  # /bin -> usr/bin on merged-/usr systems
            continue
        _make_target(dst, path)
        _bind(path, dst, read_only=True)
    for src, inside in view.read_only_at:
        dst = _target(root, inside)
        _make_target(dst, src)
        _bind(src, dst, read_only=True)
    for path in view.writable:
        dst = _target(root, path)
        os.makedirs(dst, exist_ok=True)
        _bind(path, dst, read_only=False)
    dev = _target(root, "/dev")
    mount("tmpfs", dev, "tmpfs", MS_NOSUID | MS_NOEXEC, "size=64k,mode=0755")
    for name in DEVICES:
        if os.path.exists(f"/dev/{name}"):
            _make_target(f"{dev}/{name}", f"/dev/{name}")
            mount(f"/dev/{name}", f"{dev}/{name}", None, MS_BIND)
    for name, to in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"), ("stdout", "/proc/self/fd/1"),
                     ("stderr", "/proc/self/fd/2")):
        os.symlink(to, f"{dev}/{name}")
    os.makedirs(f"{dev}/shm", exist_ok=True)
    mount("tmpfs", f"{dev}/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"size={view.tmp_mb}m,mode=1777")
    mount("proc", _target(root, "/proc"), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for path in view.hidden:
        dst = _target(root, path)
        if os.path.isdir(dst):
            mount("tmpfs", dst, "tmpfs", MS_NOSUID | MS_NODEV | MS_RDONLY, "size=4k,mode=0755")
    os.makedirs(_target(root, "/.old_root"), exist_ok=True)
    _pivot_root(root, _target(root, "/.old_root"))
    os.chdir("/")
    _check(_LIBC.umount2(b"/.old_root", ctypes.c_int(MNT_DETACH)), "umount old root")
    os.rmdir("/.old_root")
    mount(None, "/", None, MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV)


def drop_privileges(view: View) -> None:
    """Become ``view.uid``/``view.gid`` with no supplementary groups: every capability is gone afterwards
    (and ``no_new_privs`` keeps it so across exec)."""
    os.setgroups([])
    os.setresgid(view.gid, view.gid, view.gid)
    os.setresuid(view.uid, view.uid, view.uid)
    _check(_LIBC.prctl(38, ctypes.c_ulong(1), 0, 0, 0), "no_new_privs")  # PR_SET_NO_NEW_PRIVS


# ----------------------------------------------------------------------------------------------------------
# Without root: the same view as a bubblewrap command line


def bwrap_argv(view: View, argv: list[str], bwrap: str = "bwrap") -> list[str]:
    """``bwrap`` options that build ``view`` in unprivileged user, mount, PID, network, IPC and UTS
    namespaces, then run ``argv`` as ``view.uid`` inside."""
    cmd = [bwrap, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
           "--uid", str(view.uid), "--gid", str(view.gid)]
    cmd += ["--size", str(view.tmp_mb * 1024 * 1024), "--tmpfs", "/tmp"]  # first: see enter()
    for path in view.read_only:
        if os.path.islink(path) and os.path.dirname(path) == "/":
            cmd += ["--symlink", os.readlink(path), path]
        else:
            cmd += ["--ro-bind", path, path]
    for src, inside in view.read_only_at:
        cmd += ["--ro-bind", src, inside]
    for path in view.writable:
        cmd += ["--bind", path, path]
    cmd += ["--dev", "/dev", "--proc", "/proc"]
    for path in view.hidden:
        if os.path.isdir(path):
            cmd += ["--tmpfs", path, "--remount-ro", path]
    cmd += ["--remount-ro", "/", "--"]
    return cmd + list(argv)
