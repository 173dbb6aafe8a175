"""Predictions sets: what the Exec stage renders for each task.

Three kinds (``model.kind`` in the config):
- ``reference``: the dataset's own reference answers;
- ``responses``: a JSONL of raw model replies ``{id, response, ...}``; each reply goes through the spec's
  cleaning chain (generation.md §4) and its format-pollution evidence is kept;
- ``predictions``: a directory of scripts (``<id>.py``, the authors' ``<tag>__<id>.py`` from their
  ``cleaned_scripts/``, or any names mapped by a ``manifest.jsonl``), or a JSONL of raw replies as above. A
  task with no script is kept as a row (an Exec failure), never dropped.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from prism_fast.dataset.loader import Task
from prism_fast.profile import Profile


@dataclass(frozen=True)
class ScriptInput:
    id: str
    language: str
    script: str | None  # None: nothing to render (empty after cleaning, missing file, provider error)
    clean_status: str  # reference | success | empty_after_cleanup | missing | provider_error
    format_pollution: dict | None = None
    raw_response: str | None = None


def reference_inputs(tasks: Iterable[Task]) -> list[ScriptInput]:
    return [ScriptInput(t.id, t.language, t.reference_answer, "reference") for t in tasks]


def _read_responses(path: Path) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
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


def _directory_index(root: Path) -> dict[str, Path]:
    """id → script. ``<id>.py`` (the file stem is the id, as in the authors' render_directory), also the
    authors' generation naming ``<dataset_tag>__<id>.py`` (generation.md §1.1), and an optional
    ``manifest.jsonl`` of ``{"id": ..., "file": ...}`` rows for any other naming (it wins over file names)."""
    index: dict[str, Path] = {}
    for f in sorted(root.glob("*.py")):
        index.setdefault(f.stem, f)
        if "__" in f.stem:
            index.setdefault(f.stem.split("__", 1)[1], f)
    manifest = root / "manifest.jsonl"
    if manifest.is_file():
        for lineno, line in enumerate(manifest.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
                index[str(rec["id"])] = root / str(rec["file"])
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ValueError(f"{manifest}:{lineno}: expected {{\"id\": ..., \"file\": ...}} ({exc})") from None
    return index


def directory_inputs(path: str | Path, tasks: Iterable[Task]) -> list[ScriptInput]:
    """One script per task from a predictions directory (see :func:`_directory_index`)."""
    index = _directory_index(Path(path))
    inputs = []
    for t in tasks:
        f = index.get(t.id)
        if f is not None and f.is_file():
            inputs.append(ScriptInput(t.id, t.language, f.read_text(encoding="utf-8", errors="replace"), "success"))
        else:
            inputs.append(ScriptInput(t.id, t.language, None, "missing"))
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
    return response_inputs(p, tasks, profile)
