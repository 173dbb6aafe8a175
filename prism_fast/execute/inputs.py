"""Predictions sets: what the Exec stage renders for each task.

Three kinds (``model.kind`` in the config):
- ``reference``: the dataset's own reference answers;
- ``responses``: a JSONL of raw model replies ``{id, response, ...}``; each reply goes through the spec's
  cleaning chain (generation.md §4) and its format-pollution evidence is kept;
- ``predictions``: a directory of scripts (``<id>.py``, the authors' ``<tag>__<id>.py`` from their
  ``cleaned_scripts/``, or any names mapped by a ``manifest.jsonl``), or a JSONL of raw replies as above. A
  task with no script is kept as a row (an Exec failure), never dropped.

A predictions directory is untrusted input (model output, or a file set someone handed over): its scripts are
copied into the run and executed. So every file it names must stay inside it. A manifest entry whose path is
absolute or has a ``..`` component, and any entry (manifest or ``*.py``) that resolves, symlinks followed, outside
the directory, is never opened: its task gets ``clean_status`` (and the tasks row's ``error_kind``)
``path_outside_predictions``, an Exec failure like a missing script, with a warning naming the entry.

An entry that is not a regular file -- a directory named ``<id>.py``, a FIFO (opening one for reading blocks until
a writer comes), a socket or device, a symlink whose target is one of these or does not exist -- is not opened
either (``lstat`` first; the open itself is ``O_NOFOLLOW | O_NONBLOCK`` and ``fstat``-checked, for an entry
swapped in between): its task gets ``not_a_regular_file``, and a regular file that cannot be opened or read
``unreadable_prediction``, each with ``ScriptInput.detail`` naming the entry and the problem (the tasks row's
``error_detail``). Every other task of the set is read as usual.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from prism_fast.dataset.loader import Task
from prism_fast.profile import Profile

log = logging.getLogger(__name__)

# clean_status (and tasks-row error_kind) of a task whose predictions entry points outside the predictions dir.
PATH_OUTSIDE_PREDICTIONS = "path_outside_predictions"
# ... whose entry is not a regular file (a directory, a FIFO, a socket or device, a dangling symlink): never opened
NOT_A_REGULAR_FILE = "not_a_regular_file"
# ... whose entry is a regular file that could not be opened or read (permissions, an I/O error)
UNREADABLE_PREDICTION = "unreadable_prediction"


@dataclass(frozen=True)
class ScriptInput:
    id: str
    language: str
    script: str | None  # None: nothing to render (empty after cleaning, missing file, provider error)
    # reference | success | empty_after_cleanup | missing | provider_error | path_outside_predictions |
    # not_a_regular_file | unreadable_prediction
    clean_status: str
    format_pollution: dict | None = None
    raw_response: str | None = None
    detail: str | None = None  # why there is no script, in words (the entry and its problem), where known


def reference_inputs(tasks: Iterable[Task]) -> list[ScriptInput]:
    return [ScriptInput(t.id, t.language, t.reference_answer, "reference") for t in tasks]


def _read_responses(path: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    from prism_fast.dataset.loader import utf8_lines

    for lineno, line in utf8_lines(path):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{path}:{lineno}: malformed JSON ({exc.msg})") from None
        if not isinstance(rec, dict) or "id" not in rec or "response" not in rec:
            raise ValueError(f"{path}:{lineno}: a response record needs 'id' and 'response'")
        out.setdefault(str(rec["id"]), rec)  # the first occurrence of an id wins (generation.md §1.3)
    return out


def response_inputs(path: str | Path, tasks: Iterable[Task], profile: Profile) -> list[ScriptInput]:
    """Clean each raw reply; tasks without a reply get ``clean_status='missing'``."""
    from prism_fast.generate.cleaning import clean_model_output

    replies = _read_responses(Path(path))
    inputs = []
    for t in tasks:
        rec = replies.get(t.id)
        if rec is None:
            inputs.append(ScriptInput(t.id, t.language, None, "missing"))
            continue
        if rec.get("provider_error") and profile.fixes("Q-GEN-4"):  # improved: a failed call is not "empty"
            inputs.append(ScriptInput(t.id, t.language, None, "provider_error"))
            continue
        raw = rec["response"] if isinstance(rec["response"], str) else ""
        cleaned = clean_model_output(raw, t.language, profile)
        script = cleaned.code or None
        inputs.append(ScriptInput(t.id, t.language, script, cleaned.status, cleaned.evidence, raw))
    return inputs


@dataclass(frozen=True)
class _Entry:
    """One predictions-directory entry: the confined, fully resolved file to read, or why there is none."""

    path: Path | None
    rejected: str | None = None  # the entry as written, when it points outside the predictions directory
    name: str | None = None  # the entry as written (a ``*.py`` name or a manifest path)


def _confine(root: Path, name: str) -> _Entry:
    """``name`` (a manifest path or a ``*.py`` file name) resolved inside ``root`` (already resolved), or rejected.

    Rejected without touching the file system when absolute (POSIX or Windows style) or when any component is
    ``..`` (even one that would come back inside: the manifest is untrusted, there is no reason to accept it);
    otherwise rejected when the path, every symlink followed, is not strictly below ``root``."""
    parts = name.replace("\\", "/").split("/")
    if (not name or "\0" in name or os.path.isabs(name) or name.startswith(("/", "\\"))
            or (len(name) > 1 and name[0].isalpha() and name[1] == ":") or ".." in parts):
        return _Entry(None, name)
    try:
        resolved = (root / name).resolve(strict=False)
    except (OSError, RuntimeError, ValueError):  # a symlink loop, a name the OS refuses
        return _Entry(None, name)
    if resolved == root or not resolved.is_relative_to(root):
        return _Entry(None, name)
    return _Entry(resolved, name=name)


def _directory_index(root: Path) -> dict[str, _Entry]:
    """id → entry. ``<id>.py`` (the file stem is the id, as in the authors' render_directory), also the
    authors' generation naming ``<dataset_tag>__<id>.py`` (generation.md §1.1), and an optional
    ``manifest.jsonl`` of ``{"id": ..., "file": ...}`` rows for any other naming (it wins over file names).
    Every entry is confined to ``root`` (:func:`_confine`); the manifest itself must be inside it too."""
    root = root.resolve()
    index: dict[str, _Entry] = {}
    for f in sorted(root.glob("*.py")):
        entry = _confine(root, f.name)  # a `<id>.py` symlink to a host file is rejected like a manifest path
        index.setdefault(f.stem, entry)
        if "__" in f.stem:
            index.setdefault(f.stem.split("__", 1)[1], entry)
    manifest = root / "manifest.jsonl"
    if manifest.is_file():
        confined = _confine(root, manifest.name).path
        text = _read_confined(confined).text if confined is not None else None
        if text is None:
            raise ValueError(f"{manifest} is not a regular file inside the predictions directory {root} "
                             "(a symlink out of it?); not reading it")
        for lineno, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                index[str(rec["id"])] = _confine(root, str(rec["file"]))
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ValueError(f"{manifest}:{lineno}: expected {{\"id\": ..., \"file\": ...}} ({exc})") from None
    return index


_FILE_TYPES = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
               (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
               (stat.S_ISLNK, "a symlink"))


def _file_type(mode: int) -> str:
    return next((what for test, what in _FILE_TYPES if test(mode)), "not a regular file")


@dataclass(frozen=True)
class _Read:
    """What reading one confined entry gave: its text, or the clean_status and the detail of why not."""

    text: str | None
    problem: str | None = None
    detail: str | None = None


def _read_confined(path: Path, name: str | None = None) -> _Read:
    """The text of a regular file at an already-confined path, or why there is none (``name``: the entry as
    written, for the detail).

    Nothing but a regular file is ever opened: ``lstat`` first (a FIFO would block the open, a directory cannot be
    read); ``O_NOFOLLOW``, ``O_NONBLOCK`` and the ``fstat`` check close the gap between that and opening: a final
    component swapped for a symlink fails to open, and a FIFO or device swapped in is neither waited on nor read."""
    shown = name if name is not None else path.name
    via = f" (-> {path.name})" if name is not None and Path(name).name != path.name else ""
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return _Read(None, NOT_A_REGULAR_FILE, f"{shown}{via}: a symlink to nothing (its target does not exist)")
    except OSError as exc:
        return _Read(None, UNREADABLE_PREDICTION, f"{shown}: cannot be examined ({exc.strerror or exc})")
    if not stat.S_ISREG(mode):
        return _Read(None, NOT_A_REGULAR_FILE, f"{shown}{via} is {_file_type(mode)}, not a regular file; not read")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        return _Read(None, UNREADABLE_PREDICTION, f"{shown}: cannot be opened ({exc.strerror or exc})")
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):  # (swapped since the lstat)
            return _Read(None, NOT_A_REGULAR_FILE, f"{shown}{via} is {_file_type(mode)}, not a regular file; "
                                                   "not read")
        # Text mode with universal newlines, as Path.read_text reads (a CRLF script stays byte-identical to before).
        with os.fdopen(fd, "r", encoding="utf-8", errors="replace") as fh:
            fd = None  # (the file object owns it now)
            return _Read(fh.read())
    except OSError as exc:
        return _Read(None, UNREADABLE_PREDICTION, f"{shown}: cannot be read ({exc.strerror or exc})")
    finally:
        if fd is not None:
            os.close(fd)


def directory_inputs(path: str | Path, tasks: Iterable[Task]) -> list[ScriptInput]:
    """One script per task from a predictions directory (see :func:`_directory_index`)."""
    root = Path(path)
    index = _directory_index(root)
    inputs = []
    for t in tasks:
        entry = index.get(t.id)
        if entry is not None and entry.rejected is not None:
            log.warning("predictions %s: the entry for %s (%r) points outside the predictions directory; "
                        "not read, the task is an Exec failure (%s)", root, t.id, entry.rejected,
                        PATH_OUTSIDE_PREDICTIONS)
            inputs.append(ScriptInput(t.id, t.language, None, PATH_OUTSIDE_PREDICTIONS,
                                      detail=f"{entry.rejected!r} points outside the predictions directory; "
                                             "not read"))
            continue
        if entry is None:
            inputs.append(ScriptInput(t.id, t.language, None, "missing"))
            continue
        read = _read_confined(entry.path, entry.name)
        if read.text is not None:
            inputs.append(ScriptInput(t.id, t.language, read.text, "success"))
            continue
        log.warning("predictions %s: the entry for %s: %s; the task is an Exec failure (%s)", root, t.id,
                    read.detail, read.problem)
        inputs.append(ScriptInput(t.id, t.language, None, read.problem, detail=read.detail))
    return inputs


def load_inputs(kind: str, tasks: list[Task], profile: Profile, predictions: str | Path | None) -> list[ScriptInput]:
    if kind == "reference":
        return reference_inputs(tasks)
    if predictions is None:
        raise ValueError(f"model kind {kind!r} needs model.predictions (a directory of .py files or a JSONL)")
    p = Path(predictions)
    if not p.exists():
        raise FileNotFoundError(f"predictions not found: {p}")
    if p.is_dir():
        return directory_inputs(p, tasks)
    mode = p.stat().st_mode
    if not stat.S_ISREG(mode):  # a FIFO would block the read of the replies file, a device never end it
        raise ValueError(f"predictions {p} is {_file_type(mode)}: model.predictions must be a directory of scripts "
                         "or a JSONL file of replies")
    return response_inputs(p, tasks, profile)
