"""Integrity of what trusted code writes to disk: atomic files, content keys and HMAC tags (issue #13).

Why: the results store and the render/audit/OCR/TeX caches are read back as trusted input (a cached row is
a result; the newest store row wins). A generated script runs on the same machine, and a script that could
write into them once did: a passing audit row for itself, a failure row for another sample dated
``2**62`` ns, a poisoned render-cache video served to a clean sample, a flipped audit entry and a poisoned TeX
SVG. The sandbox now hides ``runs_root``; this module is the second line: every entry trusted code writes
carries ``tag = HMAC-SHA256(key, message)``, where the message names the entry (its cache key or its path) and
its content (including the sha256 of any binary file), so an entry written by anyone without the key, or
moved from one key to another, is detected on read and treated as absent.

The key: 32 random bytes in ``<dir>/integrity.key``, mode 0600, created once, atomically (a fully written
temporary file is hard-linked to the final name, which fails if another process won the race; plain
``O_EXCL`` where the file system has no hard links), so concurrent processes agree on it. It must never be
visible to a script: it lies outside every directory the sandbox shows a sample (``<runs_root>/.cache`` for
the shared caches, the run directory for the results store), is never put in an environment variable and,
the script running as an unprivileged uid, would be unreadable even if shown. Which directory holds the key
of a cache: :func:`default_key_dir`.

Only trusted code (the driver, actors, the render parent) imports this; nothing here runs inside a sample.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import logging
import os
import secrets
import stat
import time
import uuid
from pathlib import Path
from typing import BinaryIO, Callable

log = logging.getLogger(__name__)

KEY_NAME = "integrity.key"
KEY_BYTES = 32


class IntegrityError(ValueError):
    """Content does not match what its tag or recorded hash says."""


# -- hashing --------------------------------------------------------------------------------------------------

def canonical_json(obj, *, ensure_ascii: bool = False, default: Callable | None = None) -> str:
    """Sorted keys, no whitespace: equal values give equal text (the form every content key hashes)."""
    return json.dumps(obj, sort_keys=True, ensure_ascii=ensure_ascii, separators=(",", ":"), default=default)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_json(obj, *, default: Callable | None = None) -> str:
    """sha256 hex of :func:`canonical_json` (the cache keys: the same value always gives the same key)."""
    return sha256_text(canonical_json(obj, default=default))


def sha256_file(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# -- atomic files ---------------------------------------------------------------------------------------------

def fsync_dir(path: str | os.PathLike) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def temp_name(dest: Path) -> Path:
    """A hidden, unique name beside ``dest`` (``.<name>.<random>.tmp``): readers that skip dot files (pyarrow,
    every cache lookup by exact name) never see it, and concurrent writers never share one."""
    return dest.with_name(f".{dest.name}.{uuid.uuid4().hex[:16]}.tmp")


def atomic_write(dest: str | os.PathLike, write: Callable[[BinaryIO], None], *, fsync: bool = True,
                 fsync_parent: bool = False) -> None:
    """``write(fh)`` into a hidden temporary file beside ``dest``, fsync it, then ``os.replace`` it into place:
    ``dest`` is the complete old or the complete new file, never a torn one, even if the writer is killed."""
    dest = Path(dest)
    tmp = temp_name(dest)
    try:
        with open(tmp, "xb") as fh:
            write(fh)
            fh.flush()
            if fsync:
                os.fsync(fh.fileno())
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    if fsync_parent:
        fsync_dir(dest.parent)


def atomic_write_bytes(dest: str | os.PathLike, data: bytes, **kw) -> None:
    atomic_write(dest, lambda fh: fh.write(data), **kw)


def atomic_write_text(dest: str | os.PathLike, text: str, **kw) -> None:
    atomic_write_bytes(dest, text.encode("utf-8"), **kw)


def atomic_copy(src: str | os.PathLike, dest: str | os.PathLike, *, expect_sha256: str | None = None,
                fsync: bool = True) -> str:
    """Copy ``src`` to ``dest`` atomically; returns the sha256 of the bytes written. With ``expect_sha256`` the
    copy is put in place only if those bytes hash to it (else :class:`IntegrityError`, ``dest`` untouched):
    hashing the copy, not the source, leaves no window in which the source could be swapped after the check."""
    dest = Path(dest)
    tmp = temp_name(dest)
    h = hashlib.sha256()
    try:
        with open(src, "rb") as fin, open(tmp, "xb") as fout:
            for block in iter(lambda: fin.read(1 << 20), b""):
                h.update(block)
                fout.write(block)
            fout.flush()
            if fsync:
                os.fsync(fout.fileno())
        digest = h.hexdigest()
        if expect_sha256 is not None and not hmac.compare_digest(digest, str(expect_sha256)):
            raise IntegrityError(f"{src}: sha256 {digest[:16]}… is not the recorded {str(expect_sha256)[:16]}…")
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return digest


# -- the key and the tags -------------------------------------------------------------------------------------

def default_key_dir(cache_root: str | os.PathLike) -> Path:
    """Where the key of a cache rooted at ``cache_root`` lives: the ``.cache`` directory holding it when its parent
    or grandparent is one (``<runs_root>/.cache/render``, ``…/audit``, ``…/ocr_frames`` and the TeX cache's
    ``…/tex/<fingerprint>`` all map to ``<runs_root>/.cache``: one key per runs_root), else the root's parent.
    Never inside the cache root itself: the TeX cache root is shown (read-only) to samples."""
    root = Path(cache_root).resolve()
    for candidate in (root.parent, root.parent.parent):
        if candidate.name == ".cache":
            return candidate
    return root.parent


def _read_key(path: Path) -> bytes | None:
    """The key in ``path``; None while it does not exist. Waits briefly for a concurrent ``O_EXCL`` creator to
    finish writing; a key file of the wrong size after that is an error (never silently replaced: a new key
    would orphan every tagged entry, and a truncated key is itself a sign of tampering)."""
    deadline = time.monotonic() + 2.0
    while True:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        except FileNotFoundError:
            return None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise IntegrityError(f"{path} is not a regular file")
            data = os.read(fd, KEY_BYTES + 1)
        finally:
            os.close(fd)
        if len(data) == KEY_BYTES:
            if st.st_mode & 0o077:
                log.warning("integrity key %s is readable by others (mode %o); it should be 0600", path,
                            stat.S_IMODE(st.st_mode))
            return data
        if time.monotonic() > deadline:
            raise IntegrityError(f"{path} holds {len(data)} bytes, not a {KEY_BYTES}-byte key; delete it to start "
                                 "over (every entry tagged with the old key is then recomputed)")
        time.sleep(0.01)


def load_or_create_key(directory: str | os.PathLike) -> bytes:
    """The 32-byte key in ``<directory>/integrity.key``, created (mode 0600) if absent. Safe under races: every
    process ends up with the same key."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / KEY_NAME
    key = _read_key(path)
    if key is not None:
        return key
    new = secrets.token_bytes(KEY_BYTES)
    tmp = temp_name(path)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, new)
        os.fsync(fd)
    finally:
        os.close(fd)
    try:
        os.link(tmp, path)  # atomic and exclusive: fails with EEXIST when another process got there first
    except FileExistsError:
        pass
    except OSError as exc:  # no hard links here (some network/FUSE file systems): O_EXCL on the final name
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV, errno.EMLINK):
            raise
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            pass
        else:
            try:
                os.write(fd, new)
                os.fsync(fd)
            finally:
                os.close(fd)
    finally:
        tmp.unlink(missing_ok=True)
    key = _read_key(path)
    if key is None:
        raise IntegrityError(f"{path} vanished right after it was created")
    return key


def message(kind: str, **fields) -> bytes:
    """The bytes a tag covers: the canonical JSON (ASCII) of the entry's kind, name and content. Every tagged
    message names its kind, so a tag of one cache is never valid for another."""
    return canonical_json({"kind": kind, **fields}, ensure_ascii=True).encode("ascii")


def tag(key: bytes, data: bytes) -> str:
    """HMAC-SHA256 of ``data`` under ``key``, hex."""
    return hmac.new(key, data, hashlib.sha256).hexdigest()


def verify(key: bytes, data: bytes, tag_hex) -> bool:
    """Whether ``tag_hex`` is the tag of ``data`` under ``key`` (constant-time comparison)."""
    if not isinstance(tag_hex, str) or not key:
        return False
    return hmac.compare_digest(tag(key, data), tag_hex)


def roundtrip(obj, *, default: Callable | None = None):
    """``obj`` as a reader will see it after JSON (tuples become lists, ``default`` applied): tag this, not the
    in-memory value, so that writer and reader compute the tag over the same message."""
    return json.loads(json.dumps(obj, ensure_ascii=False, default=default))


class FailureLog:
    """Counts integrity failures of one cache object and logs the first ``limit`` as warnings (an old cache
    without tags would otherwise print one line per entry)."""

    def __init__(self, logger: logging.Logger, what: str, limit: int = 20):
        self.logger, self.what, self.limit = logger, what, limit
        self.count = 0

    def __call__(self, name: str, why: str) -> None:
        self.count += 1
        if self.count <= self.limit:
            self.logger.warning("%s: entry %s failed its integrity check (%s); treated as a miss and recomputed",
                                self.what, name, why)
        if self.count == self.limit:
            self.logger.warning("%s: further integrity failures are counted but not logged", self.what)


__all__ = ["KEY_NAME", "KEY_BYTES", "IntegrityError", "canonical_json", "sha256_hex", "sha256_text", "sha256_json",
           "sha256_file", "fsync_dir", "temp_name", "atomic_write", "atomic_write_bytes", "atomic_write_text",
           "atomic_copy", "default_key_dir", "load_or_create_key", "message", "tag", "verify", "roundtrip",
           "FailureLog"]
