"""Integrity of what trusted code writes to disk: HMAC tags, their key, and the content-cache base (issue #13).

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
from pathlib import Path
from typing import Callable

from prism_fast.fsutil import IntegrityError, atomic_write_text, canonical_json, roundtrip, temp_name

log = logging.getLogger(__name__)

KEY_NAME = "integrity.key"
KEY_BYTES = 32


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


class ContentCache:
    """Base of the content-addressed caches (render: ``execute/cache.py``, audit: ``audit/cache.py``, OCR frames:
    ``video/ocr.py``): one JSON entry per key at ``<root>/<key[:2]>/<key>.json``, written atomically, carrying
    ``tag = HMAC(key, message(KIND, key=<cache key>, entry=<entry without its tag>))``. :meth:`load` returns an
    entry only when its tag verifies: an entry without a tag, edited, written by anyone without the key or copied
    from another key is a miss, logged and counted in :attr:`integrity_failures` (the caller recomputes and
    overwrites it). The tags are applied here and nowhere else.

    ``integrity_key``: the HMAC key (bytes); default: the one in :func:`default_key_dir` of ``root``, created on
    first use. Subclasses set ``KIND`` (tag kind: a tag of one cache is never valid for another) and ``WHAT`` (log
    name) and may override :meth:`tag_message` (the OCR cache keeps its pre-#16 message, so old entries stay
    valid)."""

    KIND = "content_cache"
    WHAT = "content cache"

    def __init__(self, root: str | os.PathLike, integrity_key: bytes | None = None):
        self.root = Path(root)
        self.key = integrity_key if integrity_key is not None else load_or_create_key(default_key_dir(self.root))
        self._failures = FailureLog(log, self.WHAT)

    @property
    def integrity_failures(self) -> int:
        """Entries rejected by this object because their tag did not verify."""
        return self._failures.count

    def path(self, key: str, suffix: str = ".json") -> Path:
        return self.root / key[:2] / f"{key}{suffix}"

    def tag_message(self, key: str, entry: dict) -> bytes:
        return message(self.KIND, key=key, entry=entry)

    def reject(self, key: str, why: str) -> None:
        """Count and log an entry that failed a check beyond its tag (e.g. a file whose hash is not the tagged one)."""
        self._failures(key[:16], why)

    def load(self, key: str) -> dict | None:
        """The verified entry (without its tag), or None: absent, unreadable (logged) or failing its tag (counted)."""
        path = self.path(key)
        if not path.exists():
            return None
        try:
            entry = json.loads(path.read_text(encoding="utf-8"))
            tag_hex = entry.pop("tag", None)
            ok = verify(self.key, self.tag_message(key, entry), tag_hex)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("%s: unreadable entry %s (%s); recomputing", self.WHAT, key[:16], exc)
            return None
        if not ok:
            self.reject(key, "missing tag" if tag_hex is None else "invalid tag")
            return None
        return entry

    def store(self, key: str, entry: dict, *, default: Callable | None = None) -> None:
        """Write ``entry`` (as JSON reads it back) with its tag, atomically. Raises OSError."""
        entry = roundtrip(entry, default=default)
        entry["tag"] = tag(self.key, self.tag_message(key, entry))
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, json.dumps(entry, ensure_ascii=False, sort_keys=True))


__all__ = ["KEY_NAME", "KEY_BYTES", "IntegrityError", "default_key_dir", "load_or_create_key", "message", "tag",
           "verify", "FailureLog", "ContentCache"]
