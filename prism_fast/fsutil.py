"""Shared file plumbing of trusted code: canonical keys, hashing and atomic writes (issue #16, item 4).

One implementation for every content key (the render, audit, OCR and TeX caches, the settings fingerprints, the
run manifests) and every atomic write (caches, results store, reports): equal values give equal keys, and a
reader sees the complete old or the complete new file, never a torn one. HMAC tags (who wrote an entry) are
:mod:`prism_fast.integrity`'s; the content-cache base that applies them in one place is
:class:`prism_fast.integrity.ContentCache`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import uuid
from pathlib import Path
from typing import BinaryIO, Callable


class IntegrityError(ValueError):
    """Content does not match what its tag or recorded hash says."""


# -- canonical keys and hashing --------------------------------------------------------------------------------------------------

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


def sha256_text_or_none(text: str | None) -> str | None:
    """:func:`sha256_text`, None for None (an absent script or prompt)."""
    return None if text is None else sha256_text(text)


def roundtrip(obj, *, default: Callable | None = None):
    """``obj`` as a reader will see it after JSON (tuples become lists, ``default`` applied): tag this, not the
    in-memory value, so that writer and reader compute the tag over the same message."""
    return json.loads(json.dumps(obj, ensure_ascii=False, default=default))


__all__ = ["IntegrityError", "canonical_json", "sha256_hex", "sha256_text", "sha256_text_or_none", "sha256_json",
           "sha256_file", "fsync_dir", "temp_name", "atomic_write", "atomic_write_bytes", "atomic_write_text",
           "atomic_copy", "roundtrip"]
