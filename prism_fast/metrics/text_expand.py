"""TextExpand / InfoExpand: on-screen text statically extracted from a script, compared with the prompt
(spec text_expand.md; the authors' ``scripts/compute_text_expansion.py``).

Pure core: ``text_expand_row`` scores one sample from its code and prompt strings, ``summarize`` aggregates rows
into the toolkit's ``summary.json`` (§5.4). File layout and manifests are in ``text_expand_run``. Extraction is in
``text_expand_extract`` (modes: ``text_expand_walk``, ``text_expand_scan``; shared core ``text_expand_eval``);
normalisation and tokens in ``text_expand_text``.

Row fields follow the toolkit's order (§1): ``id, source_id, difficulty, prompt_path, code_path``, then for ok
rows the statistics of §5.3, then ``status``, ``extract_mode``, ``meta_path`` (parse_fail rows: ``status``,
``parse_error``). Project fields are appended after them: ``language``, ``profile``, ``error_kind``,
``error_detail`` and ``extract_fallback_reason``.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import Iterable, Mapping

from prism_fast.metrics.text_expand_extract import MODE_FALLBACK, extract_display_text
from prism_fast.metrics.text_expand_text import normalize_segment, prompt_body, tokenize
from prism_fast.profile import REFERENCE, Profile

logger = logging.getLogger(__name__)

STATUS_OK = "ok"
STATUS_PARSE_FAIL = "parse_fail"
STATUS_MISSING_INPUT = "missing_input"
STATUSES = (STATUS_OK, STATUS_PARSE_FAIL, STATUS_MISSING_INPUT)

DIFFICULTIES = ("easy", "medium", "hard")
PREVIEW_SEGMENTS = 20

FORMULA = {
    "text_expand_ratio_unique": "unique_display_text_tokens / prompt_body_tokens",
    "info_expand_ratio": "novel_display_text_tokens / prompt_body_tokens",
    "novelty_ratio": "novel_display_text_tokens / unique_display_text_tokens",
}

# (summary key, row key) of the six averages of §5.4, in the toolkit's order.
_AVERAGES = (
    ("avg_text_expand_ratio_raw", "text_expand_ratio_raw"),
    ("avg_text_expand_ratio_unique", "text_expand_ratio_unique"),
    ("avg_info_expand_ratio", "info_expand_ratio"),
    ("avg_novelty_ratio", "novelty_ratio"),
    ("avg_prompt_token_count", "prompt_token_count"),
    ("avg_display_token_count_unique", "display_token_count_unique"),
)


def segment_statistics(prompt: str, segments: Iterable[str]) -> dict:
    """The per-sample statistics of §5.3 for a prompt and the extracted display segments (in order)."""
    body = prompt_body(prompt)
    prompt_tokens = tokenize(body)
    prompt_counts = Counter(prompt_tokens)
    denominator = max(len(prompt_tokens), 1)

    raw_segments = [segment for segment in segments if normalize_segment(segment)]
    unique_segments = list(dict.fromkeys(normalize_segment(segment) for segment in raw_segments))

    raw_tokens = sum(len(tokenize(segment)) for segment in raw_segments)
    unique_tokens = overlap_tokens = novel_tokens = 0
    for segment in unique_segments:
        tokens = tokenize(segment)
        if not tokens:
            continue  # still counted as a segment, contributes no tokens
        # Overlap is computed per segment against the whole prompt counter (it is not consumed).
        overlap = sum((Counter(tokens) & prompt_counts).values())
        unique_tokens += len(tokens)
        overlap_tokens += overlap
        novel_tokens += max(len(tokens) - overlap, 0)

    return {
        "prompt_body_text": body,
        "prompt_token_count": len(prompt_tokens),
        "display_segment_count_raw": len(raw_segments),
        "display_segment_count_unique": len(unique_segments),
        "display_token_count_raw": raw_tokens,
        "display_token_count_unique": unique_tokens,
        "display_overlap_token_count": overlap_tokens,
        "display_novel_token_count": novel_tokens,
        "text_expand_ratio_raw": raw_tokens / denominator,
        "text_expand_ratio_unique": unique_tokens / denominator,
        "info_expand_ratio": novel_tokens / denominator,
        "novelty_ratio": novel_tokens / unique_tokens if unique_tokens else 0.0,
        "display_text_unique_preview": unique_segments[:PREVIEW_SEGMENTS],
    }


def text_expand_row(
    sample_id: str,
    code: str | None,
    prompt: str | None,
    language: str | None,
    profile: Profile = REFERENCE,
    *,
    source_id: str | None = None,
    difficulty: str | None = None,
    prompt_path: str | None = None,
    code_path: str | None = None,
    meta_path: str | None = None,
) -> dict:
    """Score one sample. ``code``/``prompt`` are None when their file is missing (→ ``missing_input``).

    The metric itself does not depend on ``language`` (the tokenizer handles both); it is recorded for the
    per-language report.
    """
    row: dict = {
        "id": sample_id,
        "source_id": source_id,
        "difficulty": difficulty,
        "prompt_path": prompt_path,
        "code_path": code_path,
    }
    project: dict = {"language": language, "profile": profile.name}
    if profile.name == "custom":
        project["quirks_fixed"] = sorted(profile.fixed)
    project.update(error_kind=None, error_detail=None)
    if prompt is None or code is None:
        missing = [name for name, value in (("prompt", prompt), ("code", code)) if value is None]
        row["status"] = STATUS_MISSING_INPUT
        project.update(error_kind=STATUS_MISSING_INPUT, error_detail="missing " + " and ".join(missing))
        return {**row, **project}
    try:
        extraction = extract_display_text(code, profile)
    except Exception as exc:  # the toolkit turns any extraction error into parse_fail
        detail = f"{type(exc).__name__}: {exc}"
        row.update(status=STATUS_PARSE_FAIL, parse_error=detail)
        project.update(error_kind=STATUS_PARSE_FAIL, error_detail=detail)
        return {**row, **project}

    row.update(segment_statistics(prompt, extraction.segments))
    row.update(status=STATUS_OK, extract_mode=extraction.mode, meta_path=meta_path)
    if extraction.mode == MODE_FALLBACK:
        logger.warning("text_expand %s: code does not parse (%s); scored with fallback_scan",
                       sample_id, extraction.fallback_reason)
    project["extract_fallback_reason"] = extraction.fallback_reason
    return {**row, **project}


def _mean(values: list) -> float:
    return sum(values) / len(values) if values else 0.0


def _averages(rows: list[Mapping]) -> dict:
    return {
        summary_key: _mean([row.get(row_key, 0.0) for row in rows]) for summary_key, row_key in _AVERAGES
    }


def summarize(
    rows: Iterable[Mapping],
    *,
    gen_dir: str | None = None,
    manifest_path: str | None = None,
    profile: Profile | None = None,
) -> dict:
    """The toolkit's ``summary.json`` (§5.4) over all rows of one generation run; averages over ok rows only.

    Project field appended: ``profile`` (from ``profile``, else from the rows, which must agree), plus
    ``quirks_fixed`` for a custom profile.
    """
    rows = list(rows)
    ok_rows = [row for row in rows if row.get("status") == STATUS_OK]
    by_difficulty = {}
    for difficulty in DIFFICULTIES:
        subset = [row for row in ok_rows if row.get("difficulty") == difficulty]
        by_difficulty[difficulty] = {"count": len(subset), **_averages(subset)}

    row_profiles = {row.get("profile") for row in rows if row.get("profile") is not None}
    if profile is not None and row_profiles - {profile.name}:
        raise ValueError(f"rows were scored under {sorted(row_profiles)}, not under profile {profile.name!r}")
    if profile is None and len(row_profiles) > 1:
        raise ValueError(f"rows mix profiles {sorted(row_profiles)}; summarize one profile at a time")
    profile_name = profile.name if profile is not None else (row_profiles.pop() if row_profiles else REFERENCE.name)

    summary = {
        "formula": dict(FORMULA),
        "total_records": len(rows),
        "scored_count": len(ok_rows),
        **_averages(ok_rows),
        "fallback_count": sum(1 for row in ok_rows if row.get("extract_mode") == MODE_FALLBACK),
        "parse_fail_count": sum(1 for row in rows if row.get("status") == STATUS_PARSE_FAIL),
        "missing_input_count": sum(1 for row in rows if row.get("status") == STATUS_MISSING_INPUT),
        "by_difficulty": by_difficulty,
        "gen_dir": gen_dir,
        "manifest_path": manifest_path,
        "profile": profile_name,
    }
    if profile is not None and profile.name == "custom":
        summary["quirks_fixed"] = sorted(profile.fixed)
    return summary
