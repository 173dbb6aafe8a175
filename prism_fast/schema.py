"""Per-stage row schemas of the results store (documented field by field in README "Output schema").

Every stage row carries the key (model, lang, id), a closed-enum ``status`` with ``error_kind`` /
``error_detail``, the ``profile`` it ran under and ``written_at_ns``. Stage fields follow the authors'
toolkit names first (so parity comparisons can select them), then ours. Dict/list values are stored as JSON
strings in ``string`` columns.
"""

from __future__ import annotations

import pyarrow as pa

KEY_FIELDS = ("model", "lang", "id")
PARTITION_FIELDS = ("model", "lang")  # stored in the directory names, not in the files

STATUS_VALUES = ("ok", "error", "skipped")

_S, _F, _I, _B = pa.string(), pa.float64(), pa.int64(), pa.bool_()

COMMON: list[tuple[str, pa.DataType]] = [
    ("id", _S),
    ("status", _S),  # ok | error | skipped
    ("error_kind", _S),
    ("error_detail", _S),
    ("profile", _S),
    ("written_at_ns", _I),
]

STAGE_FIELDS: dict[str, list[tuple[str, pa.DataType]]] = {
    # Dataset rows selected for the run (one per task), so every later denominator is "all tasks".
    "tasks": [
        ("source", _S),
        ("instruction_sha256", _S),
        ("has_script", _B),
        ("script_sha256", _S),
        ("script_path", _S),
        ("clean_status", _S),  # success | empty_after_cleanup | provider_error | reference
        ("format_pollution", _S),  # JSON evidence of what cleaning removed
    ],
    # Exec (render): the toolkit's render row, then ours.
    "exec": [
        ("file_path", _S),
        ("success", _B),
        ("skipped", _B),
        ("video_path", _S),
        ("runtime_sec", _F),
        ("error", _S),
        ("scene_name", _S),
        ("wall_s", _F),
        ("cpu_s", _F),
        ("peak_rss_mb", _F),
        ("exit_status", _I),
        ("signal", _I),
        ("timed_out", _B),
        ("stderr_tail", _S),
        ("net_isolated", _B),
        ("cache_hit", _B),
        ("script_sha256", _S),
        ("env_fingerprint", _S),
        ("fine_type", _S),
        ("category", _S),
        ("hallucinations", _S),  # JSON list of findings
    ],
}


def stage_schema(stage: str) -> pa.Schema:
    """The file schema of a stage (without the partition columns model/lang)."""
    try:
        fields = STAGE_FIELDS[stage]
    except KeyError:
        raise KeyError(f"unknown stage {stage!r}; known: {sorted(STAGE_FIELDS)}") from None
    return pa.schema([pa.field(n, t) for n, t in COMMON + fields])


def register_stage(stage: str, fields: list[tuple[str, pa.DataType]]) -> None:
    """Declare the fields of a stage (used by stage packages at import time)."""
    if stage in STAGE_FIELDS and STAGE_FIELDS[stage] != fields:
        raise ValueError(f"stage {stage!r} already registered with other fields")
    STAGE_FIELDS[stage] = fields
