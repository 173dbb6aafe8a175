"""TextExpand over one generation run directory (spec text_expand.md §1): file layout, difficulty manifest,
outputs. The scoring itself is the pure core in ``text_expand``.

Layout read: ``D/results.json → details[*]``, ``D/prompt_snapshots/<id>.txt``, ``D/cleaned_scripts/<id>.py``,
``D/meta/<id>.json``. Layout written: ``info_expand_scores.jsonl``, ``info_expand_scores.json``, ``summary.json``
in ``D/info_expand_final/`` (profile ``reference``) or ``D/info_expand_final_<profile>/`` (any other profile, so
that an improved run never overwrites the parity outputs).
"""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

from prism_fast.metrics.text_expand import summarize, text_expand_row
from prism_fast.profile import REFERENCE, Profile

logger = logging.getLogger(__name__)

_PRISM_ID_LANGUAGE = re.compile(r"PRISM-(EN|ZH)-\d+")

# How the difficulty manifest was read (recorded in the summary as `difficulty_source`).
MANIFEST_NONE = "none"
MANIFEST_JSONL = "jsonl"
MANIFEST_JSON_LIST = "json_list"
MANIFEST_NOT_JSONL = "not_jsonl"


def load_difficulty_map(manifest_path: Path, profile: Profile = REFERENCE) -> tuple[dict[str, Any], str]:
    """``{row id: difficulty}`` from a manifest, and how it was read.

    The toolkit reads the manifest line by line as JSONL (Q-TEXT-5). A JSON-list manifest (``task_manifest.json``,
    markdown-mode audit manifests) cannot be read that way: the toolkit then stops with a JSON error, while the
    spec states the outcome "difficulty is always None". Under ``reference`` we take the spec's outcome: an empty
    map, a warning, and ``difficulty_source = "not_jsonl"``. Under the Q-TEXT-5 fix a JSON list is accepted.
    """
    mapping: dict[str, Any] = {}
    try:
        with manifest_path.open("r", encoding="utf-8") as handle:
            for line in handle:
                line = line.strip()
                if not line:
                    continue
                row = json.loads(line)
                sample_id = row.get("id")
                if sample_id:
                    mapping[sample_id] = row.get("difficulty")
        return mapping, MANIFEST_JSONL
    except (json.JSONDecodeError, AttributeError) as exc:
        jsonl_error = f"{type(exc).__name__}: {exc}"
    if profile.fixes("Q-TEXT-5"):  # improved: a JSON-list manifest is accepted as well
        try:
            payload = json.loads(manifest_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError:
            payload = None
        if isinstance(payload, list):
            return {
                row["id"]: row.get("difficulty")
                for row in payload
                if isinstance(row, dict) and row.get("id")
            }, MANIFEST_JSON_LIST
    logger.warning("text_expand: manifest %s is not JSONL (%s); every difficulty is None", manifest_path,
                   jsonl_error)
    return {}, MANIFEST_NOT_JSONL


def language_of(detail: dict) -> str | None:
    """The task's language: the detail's ``language`` field, else the PRISM id's EN/ZH tag, else None."""
    if detail.get("language"):
        return detail["language"]
    for key in ("source_id", "id"):
        match = _PRISM_ID_LANGUAGE.search(str(detail.get(key) or ""))
        if match:
            return match.group(1).lower()
    return None


def _read_text(path: Path) -> str | None:
    return path.read_text(encoding="utf-8", errors="ignore") if path.exists() else None


def default_output_dir(gen_dir: Path, profile: Profile) -> Path:
    name = "info_expand_final" if profile.name == REFERENCE.name else f"info_expand_final_{profile.name}"
    return gen_dir / name


def score_generation_dir(
    gen_dir: Path | str,
    profile: Profile = REFERENCE,
    *,
    output_dir: Path | str | None = None,
    write: bool = True,
) -> tuple[list[dict], dict]:
    """Score every task of one generation run (empty generations included); returns (rows, summary) and, with
    ``write``, writes the three output files."""
    gen_dir = Path(gen_dir)
    details = json.loads((gen_dir / "results.json").read_text(encoding="utf-8")).get("details", [])

    manifest_path = next((Path(d["manifest_path"]) for d in details if d.get("manifest_path")), None)
    difficulty_map: dict[str, Any] = {}
    difficulty_source = MANIFEST_NONE
    if manifest_path is not None and manifest_path.exists():
        difficulty_map, difficulty_source = load_difficulty_map(manifest_path, profile)

    rows = []
    for detail in details:
        sample_id = detail["id"]
        prompt_path = gen_dir / "prompt_snapshots" / f"{sample_id}.txt"
        code_path = gen_dir / "cleaned_scripts" / f"{sample_id}.py"
        meta_path = gen_dir / "meta" / f"{sample_id}.json"
        rows.append(text_expand_row(
            sample_id,
            _read_text(code_path),
            _read_text(prompt_path),
            language_of(detail),
            profile,
            source_id=detail.get("source_id"),
            difficulty=difficulty_map.get(detail.get("source_id")) or difficulty_map.get(sample_id),
            prompt_path=str(prompt_path),
            code_path=str(code_path),
            meta_path=str(meta_path) if meta_path.exists() else None,
        ))

    summary = summarize(rows, gen_dir=str(gen_dir), manifest_path=str(manifest_path) if manifest_path else None,
                        profile=profile)
    summary["difficulty_source"] = difficulty_source
    if write:
        out = Path(output_dir) if output_dir is not None else default_output_dir(gen_dir, profile)
        out.mkdir(parents=True, exist_ok=True)
        with (out / "info_expand_scores.jsonl").open("w", encoding="utf-8") as handle:
            for row in rows:
                handle.write(json.dumps(row, ensure_ascii=False) + "\n")
        (out / "info_expand_scores.json").write_text(json.dumps(rows, ensure_ascii=False, indent=2),
                                                      encoding="utf-8")
        (out / "summary.json").write_text(json.dumps(summary, ensure_ascii=False, indent=2), encoding="utf-8")
    return rows, summary
