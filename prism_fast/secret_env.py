"""Secret-looking environment variables (API keys, tokens, passwords): kept out of every process a run starts.

The driver needs one secret at most, the model endpoint's API key, and only in the generation client. Nothing
the driver starts needs any: not Ray's processes (GCS, raylet, agents, workers and so every actor), not the
sandboxed renders and audits. So

* the ``prism-fast`` process moves them out of ``os.environ`` into this module (:func:`withhold_secrets`) before
  it runs a command; the generation client reads its key with :func:`get_secret`;
* ``ensure_ray`` starts Ray inside :func:`secrets_withheld` (library use, tests), so Ray's processes inherit none
  even when the caller's environment holds some;
* both blank the secrets' values in this process's original environment block (:func:`scrub_initial_environ`),
  which ``/proc/<pid>/environ`` keeps showing to every process of the same user whatever ``os.environ`` holds.

A name is secret when it contains KEY, TOKEN, SECRET, PASSWORD, PASSWD or CREDENTIAL, or was registered
(the model's ``endpoint.api_key_env``). ``RAY_*`` names are Ray's own settings (its cluster auth token
included), which Ray's processes do need: they are left alone unless registered.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterable, Iterator

SECRET_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
NOT_SECRETS = frozenset({"TOKENIZERS_PARALLELISM"})  # contain a word, hold no secret, change behaviour if removed

_registered: set[str] = set()
_held: dict[str, str] = {}


def register_secret_names(names: Iterable[str | None]) -> None:
    """Treat these variable names as secret too (e.g. the model's ``endpoint.api_key_env``)."""
    _registered.update(n for n in names if n)


def is_secret_name(name: str) -> bool:
    if name in _registered:
        return True
    upper = name.upper()
    if upper.startswith("RAY_") or upper in NOT_SECRETS:
        return False
    return any(word in upper for word in SECRET_WORDS)


def secret_names(environ=None) -> list[str]:
    return sorted(n for n in (os.environ if environ is None else environ) if is_secret_name(n))


def get_secret(name: str) -> str | None:
    """The variable's value: from ``os.environ`` when set there, else the value withheld from it."""
    value = os.environ.get(name)
    return value if value is not None else _held.get(name)


def withhold_secrets(extra: Iterable[str | None] = ()) -> list[str]:
    """Remove every secret variable from ``os.environ`` for the rest of this process (kept for
    :func:`get_secret`), so that no process started from now on inherits one. Returns the names removed."""
    register_secret_names(extra)
    names = secret_names()
    for name in names:
        _held[name] = os.environ.pop(name)
    scrub_initial_environ()
    return names


@contextlib.contextmanager
def secrets_withheld(extra: Iterable[str | None] = ()) -> Iterator[list[str]]:
    """Secrets out of ``os.environ`` while the block runs (processes started in it inherit none), back after."""
    register_secret_names(extra)
    removed = {name: os.environ.pop(name) for name in secret_names()}
    scrub_initial_environ()
    try:
        yield sorted(removed)
    finally:
        for name, value in removed.items():
            os.environ.setdefault(name, value)  # (a new heap copy: the original block stays blank)


def scrub_initial_environ() -> int:
    """Overwrite with NULs the values of secret variables in this process's original environment block (Linux:
    the memory ``/proc/self/environ`` reads). ``os.environ`` keeps its own copies; a variable whose entry is
    blanked must be out of the C environment first (``os.environ.pop``) or set again (``setenv`` copies it to
    the heap), which :func:`withhold_secrets` and :func:`secrets_withheld` do. Returns the values blanked."""
    import ctypes

    try:
        with open("/proc/self/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        start, end = int(fields[47]), int(fields[48])  # env_start, env_end (stat fields 50, 51)
        with open("/proc/self/environ", "rb") as fh:
            block = fh.read()
    except (OSError, IndexError, ValueError):
        return 0
    if not (0 < start < end) or end - start != len(block) or ctypes.string_at(start, len(block)) != block:
        return 0  # not the layout we expect: touch nothing
    blanked, offset = 0, 0
    for entry in block.split(b"\0"):
        name, sep, value = entry.partition(b"=")
        if sep and value and is_secret_name(name.decode("utf-8", "replace")):
            ctypes.memset(start + offset + len(name) + 1, 0, len(value))
            blanked += 1
        offset += len(entry) + 1
    return blanked
