"""The rows of the ``tasks`` and ``exec`` stages that no render makes: the task's row with its script, the Exec
failure of a task without a script, the fields of a sample whose render worker was lost, and the files a resumed
run must not trust. The pipeline wires these to Ray and the store (``pipeline/eval_stages.py``)."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterable

from prism_fast.dataset.loader import Task
from prism_fast.fsutil import sha256_text_or_none
from prism_fast.execute.inputs import ScriptInput
from prism_fast.schema import normalize_status

log = logging.getLogger("prism_fast")


def task_row(model: str, profile_name: str, task: Task, inp: ScriptInput, script_path: Path | None) -> dict:
    """The ``tasks`` row of one selected task: its prompt and script hashes, where its script was written."""
    return {
        "model": model, "lang": task.language, "id": task.id,
        "status": "ok" if inp.script is not None else "error",
        "error_kind": None if inp.script is not None else inp.clean_status,
        "error_detail": None if inp.script is not None else inp.detail, "profile": profile_name,
        "source": task.source, "instruction_sha256": sha256_text_or_none(task.instruction),
        "has_script": inp.script is not None, "script_sha256": sha256_text_or_none(inp.script),
        "script_path": str(script_path) if script_path else None,
        "clean_status": inp.clean_status, "format_pollution": inp.format_pollution,
    }


def generation_report(model_kind: str, model_name: str, predictions: str | None, inputs: list[ScriptInput]) -> dict:
    """Tasks of a generated (or predictions) model without a usable reply, split into those requested whose
    request or reply failed and those never requested (no entry in the predictions): both count as Exec failures
    (empty_output), but the second means the predictions do not cover the selection."""
    if model_kind == "reference":
        return {}
    failed: dict[str, int] = {}
    never = []
    for i in inputs:
        if i.clean_status == "missing":
            never.append(i.id)
        elif i.script is None:
            failed[i.clean_status] = failed.get(i.clean_status, 0) + 1
    if never:
        log.warning("%d of %d selected task(s) were never requested from model %s (no entry in %s), e.g. %s: they "
                    "are scored as Exec failures (empty_output). Generate them first (`prism-fast generate` with "
                    "the same dataset/lang settings) or select only generated ids.", len(never), len(inputs),
                    model_name, predictions, ", ".join(never[:5]))
    return {"requested_failed": dict(sorted(failed.items())), "never_requested": len(never)}


# A task without a reply is an empty generation for the taxonomy (execution.md §4: it counts as a failure).
_GENERATION_STATUS = {"missing": "empty_after_cleanup", "empty_after_cleanup": "empty_after_cleanup",
                      "provider_error": "provider_error"}


def no_script_row(lang: str, sample_id: str, clean_status: str, detail: str | None = None) -> dict:
    """The Exec row of a task with nothing to render: an Exec failure, recorded and classified as such
    (``detail``: why, in words, where the predictions loader said: ``ScriptInput.detail``)."""
    from prism_fast.execute.taxonomy import taxonomy_fields

    error = f"no script ({clean_status}: {detail})" if detail else f"no script ({clean_status})"
    return {"lang": lang, "id": sample_id, "status": "error", "error_kind": "no_script",
            "error_detail": clean_status, "success": False, "skipped": False, "error": error,
            **taxonomy_fields(code=None, render_row=None, script_id=sample_id,
                              generation_status=_GENERATION_STATUS.get(clean_status, "empty_after_cleanup"))}


def lost_fields(exc: BaseException, killed_by_sample: bool) -> dict:
    """Exec fields of a sample whose render never returned: its worker died under it twice (the script is taken
    to have killed it: a failed render, final) or it was lost otherwise (retried on resume)."""
    if killed_by_sample:
        return {"success": False, "skipped": False, "exec_status": "failed", "error": f"{type(exc).__name__}: {exc}"}
    return {"success": False, "skipped": False, "error": "render worker lost"}


def finish_row(row: dict) -> dict:
    """The stored Exec row: the closed status enum (a skipped render is ``skipped``)."""
    return normalize_status(row, "exec_status", skipped_values=("skipped",))


def video_path(out_dir: str | Path, sample_id: str) -> Path:
    """Where ``render_one`` puts a sample's video under its output directory."""
    return Path(out_dir) / "videos" / f"{sample_id}.mp4"


def delete_orphan_videos(model_dir: str | Path, sample_ids: Iterable[str]) -> list[str]:
    """Delete the videos of samples about to be rendered; returns their ids.

    The store is the resume authority: a video of a pending sample was left by a run killed between the render
    and the row's flush, or made with other settings (a stale row being recomputed). ``render_one`` would trust
    it (Q-FUNNEL-2) and write a "skipped" row with runtime 0, so a resumed run would differ from a clean one;
    re-render instead (the render cache serves what did not change)."""
    orphans = [p for sid in sample_ids if (p := video_path(model_dir, sid)).exists()]
    for p in orphans:
        p.unlink()
    if orphans:
        log.warning("re-rendering %d sample(s) whose video has no current row (interrupted run or changed "
                    "settings): %s", len(orphans), ", ".join(p.stem for p in orphans[:10]))
    return [p.stem for p in orphans]
