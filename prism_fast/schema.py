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
    # What decided the row (pipeline/settings.py): the hash of the stage's settings (profile, quirks, render,
    # audit thresholds, TD tau, decoder, OCR/PVD settings, environment fingerprint; the settings themselves are
    # in the ``settings`` stage under this hash) and of the sample's own inputs (script, prompt). A resume
    # recomputes a row whose pair differs from the run's, and the summary never uses one. Null in rows written
    # before fingerprints existed (treated as made with unknown settings) and in generate/selfdebug rows
    # (generate checks its stored requests itself).
    ("settings_sha256", _S),
    ("inputs_sha256", _S),
]

STAGE_FIELDS: dict[str, list[tuple[str, pa.DataType]]] = {
    # Dataset rows selected for the run (one per task), so every later denominator is "all tasks".
    "tasks": [
        ("source", _S),
        ("instruction_sha256", _S),
        ("has_script", _B),
        ("script_sha256", _S),
        ("script_path", _S),
        # success | empty_after_cleanup | provider_error | reference | missing | path_outside_predictions |
        # not_a_regular_file | unreadable_prediction (execute/inputs.py; the tasks row's error_detail says which entry)
        ("clean_status", _S),
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
        ("scene_class", _S),
        ("scene_select_method", _S),
        ("scene_select_detail", _S),
        ("exec_status", _S),  # the render core's own status: ok | skipped | failed | timeout
        ("backend", _S),  # cli | prefork
        ("wall_s", _F),
        ("cpu_s", _F),
        ("peak_rss_mb", _F),
        ("exit_status", _I),
        ("signal", _S),  # e.g. "SIGSEGV"
        ("timed_out", _B),
        ("stderr_tail", _S),
        ("stdout_bytes", _I),
        ("stderr_bytes", _I),
        ("output_truncated", _B),
        ("net_isolated", _B),
        ("fs_readonly", _B),
        ("pids_limit", _S),
        ("caps_dropped", _B),
        ("sandbox", _S),  # namespaces | bwrap | unsafe | refused (execute/sandbox.py)
        ("sandbox_protections", _S),  # comma-separated protections that applied
        ("cache_hit", _B),
        ("cache_key", _S),
        ("tex_cache", _S),
        ("tex_cache_hits", _I),
        ("tex_cache_published", _I),
        ("tex_cache_reasons", _S),  # JSON list: why the TeX cache's gate refused hits and the format (texcache.py;
        # analysis_budget: a script past the static analyses' size bound, execute/script_reach.py MAX_NODES)
        # on | off | failed | unavailable | not_ready (head start before the driver's format) | declined (the gate)
        ("tex_format", _S),
        ("tex_format_compiles", _I),  # how many (the sample's own log; informational)
        ("tex_format_fallbacks", _I),  # compiles the format could not make: manim compiled them itself (warned)
        ("play_hashing", _B),  # false: rendered with --disable_caching (execute.play_hashing)
        ("fast_paths", _S),  # on | off | fallback | declined (the script reads the call stack): execute/fastpaths.py
        # nondeterminism (execute/determinism.py, computed by the render worker, never in the script's process):
        # JSON list of static marks {kind, name, line} (unseeded random/numpy draws, seedless seed() calls, random
        # graph layouts, clock reads), null when none; with execute.determinism_check: JSON [sha256, sha256] of two
        # renders' videos (the second null when it made none) and whether they are equal (null: not checked)
        ("determinism_marks", _S),
        ("determinism_sha256", _S),
        ("determinism_equal", _B),
        ("onepass", _S),  # off | ineligible | shared | separate | fallback (audit/onepass.py)
        ("onepass_reasons", _S),  # JSON list: why the audit could not share this render (analysis_budget: the
        # static rule's size or step bound, audit/onepass_rules.py MAX_STEPS, execute/script_reach.py MAX_NODES)
        ("manim_executions", _I),  # Manim executions of this stage for the sample (2 = one-pass failed, re-rendered)
        ("env_fingerprint", _S),
        # the real-video check of the mp4 (execute/videocheck.py): ok | invalid (error_kind=invalid_video, the
        # reason in error_detail) | null (no mp4 was checked); the decoded frame count (null: decoding never started)
        ("video_check", _S),
        ("video_frames", _I),
        # error taxonomy (execution.md §6-§9): fine type, paper category, and the hallucination checker
        ("error_stage", _S),
        ("error_type", _S),
        ("error_type_display", _S),
        ("error_flags", _S),  # JSON list
        ("error_category", _S),
        ("error_category_display", _S),
        ("error_matched_pattern", _S),
        ("error_rule", _I),
        ("error_msg", _S),
        ("code_parse_error", _S),
        ("hallucination_count", _I),
        ("hallucination_static_count", _I),
        ("hallucination_findings", _S),  # JSON list
        ("unresolved_names", _S),  # JSON list
        ("hallucination_keyword_findings", _S),  # JSON list
        ("hallucination_name_findings_enabled", _B),
        ("hallucination_notes", _S),  # JSON list ("... analysis_budget ...": self.X checks stopped, hallucination.py)
        ("hallucination_checker_version", _S),
    ],
}

STAGE_FIELDS["text_expand"] = [
    ("text_expand_status", _S),  # the toolkit's status: ok | parse_fail | missing_input
    ("source_id", _S),
    ("difficulty", _S),
    ("prompt_path", _S),
    ("code_path", _S),
    ("meta_path", _S),
    ("language", _S),
    ("prompt_body_text", _S),
    ("prompt_token_count", _I),
    ("display_segment_count_raw", _I),
    ("display_segment_count_unique", _I),
    ("display_token_count_raw", _I),
    ("display_token_count_unique", _I),
    ("display_overlap_token_count", _I),
    ("display_novel_token_count", _I),
    ("text_expand_ratio_raw", _F),
    ("text_expand_ratio_unique", _F),
    ("info_expand_ratio", _F),
    ("novelty_ratio", _F),
    ("display_text_unique_preview", _S),  # JSON list
    ("extract_mode", _S),
    ("extract_fallback_reason", _S),
    ("parse_error", _S),  # the toolkit's field on a parse_fail row ("<Type>: <message>")
    ("quirks_fixed", _S),
]

STAGE_FIELDS["audit"] = [
    # the authors' audit row (spatial_audit.md §10.2), then ours
    ("file_path", _S),
    ("audit_success", _I),
    ("runtime_sec", _F),
    ("segment_count", _I),
    ("visual_structure_rate", _F),
    ("visual_structure_pass", _I),
    ("visual_issue_total", _I),
    ("visual_issue_breakdown", _S),  # JSON {out_of_bounds, overlaps, leaks}
    ("error_msg", _S),
    ("visual_audit_report", _S),  # JSON per-scene, per-segment findings
    # the core's status: ok | audit_failed | timeout | no_script | skipped (error_kind render_timed_out: the render
    # timed out where a Spatial pass needs Exec success, Q-FUNNEL-1 fixed; nothing executed, audit/stage.py)
    ("audit_status", _S),
    ("audit_mode", _S),  # fast | full
    ("returncode", _I),
    ("scene_errors", _S),  # JSON list
    # JSON, computed by trusted code from the child's observations: snapshots taken, checked (by the cascade),
    # atoms_max, point-edge tests, geometry backends
    ("engine", _S),
    ("quirks_not_implemented", _S),  # JSON list
    ("report_path", _S),
    ("audit_cache_hit", _B),
    ("audit_pass", _S),  # shared (report from the -ql render's execution) | separate (its own execution) | skipped
    ("pictures", _S),  # JSON, only with audit.pictures: status, dir of segment_<k>.png + findings.json
    ("sandbox", _S),  # the execution's sandbox level (execute/sandbox.py); null for a shared one-pass report
    ("sandbox_protections", _S),
    ("audit_tampered", _S),  # JSON list of tamper evidence (audit/tamper.py); non-empty = the row failed
    # the video witness (video/witness.py): ok | mismatch (Spatial fails, error_kind audit_video_mismatch) |
    # not_checked:<reason>; the detail is JSON (per checked segment: frame, drawn, unexplained, missing atoms)
    ("video_consistency", _S),
    ("video_consistency_detail", _S),
    ("tex_format", _S),  # a separate audit's compiles from the LaTeX format: on | off | failed | unavailable | not_ready
    # | declined (the TeX cache's gate)
    ("tex_format_compiles", _I),  # how many (the audit child's own log; informational)
    ("tex_format_fallbacks", _I),  # compiles the format could not make: manim compiled them itself (warned)
    ("tex_own_hits", _I),  # SVGs taken from its own render's compiles (hand-off, execute/texcache.py own_svgs)
    ("tex_own", _S),  # that hand-over: handed | none | failed (not kept or copied: compiled again, warned);
    # null where the audit takes none (outside a hand-off, TeX cache off or declined)
    ("tex_cache_reasons", _S),  # JSON list: why the TeX cache's gate refused hits and the format (texcache.py)
    ("fast_paths", _S),  # on | off | fallback | declined: a separate audit's helpers (execute/fastpaths.py)
]

STAGE_FIELDS["td"] = [
    ("td_status", _S),  # the core's status: ok | no_video | decode_failed | zero_duration
    ("source_id", _S),
    ("difficulty", _S),
    ("difficulty_score", _F),
    ("render_success", _B),
    ("visual_structure_pass", _I),
    ("visual_structure_rate", _F),
    ("video_path", _S),
    ("td_raw", _F),
    ("td_center", _F),
    ("td_center_z", _F),
    ("u_td", _F),
    ("padvc_raw", _F),
    ("padvc_center", _F),
    ("u_padvc", _F),
    ("params_source", _S),
    ("pixel_threshold", _I),
    ("decoder", _S),
    ("decoder_fallback", _S),
    ("device", _S),
]

# The settings registry: one row per distinct settings dict a stage's rows were made with (id = its
# settings_sha256), so a changed run can name the keys that changed (pipeline/settings.py).
STAGE_FIELDS["settings"] = [
    ("stage", _S),
    ("settings", _S),  # JSON {config key: value}, sorted
]

# `prism-fast generate`: one row per model call (round 1 keyed by the sample id, later self-debugging rounds by
# "<id>#r<k>"). The raw reply is stored before any cleaning; the API key never is.
STAGE_FIELDS["generate"] = [
    ("sample_id", _S),
    ("round", _I),
    ("gen_status", _S),  # the toolkit's meta status: success | empty_after_cleanup | provider_error (Q-GEN-4)
    ("request_model", _S),
    ("base_url", _S),
    ("prompt", _S),  # the exact text of the first user turn
    ("prompt_sha256", _S),
    ("messages", _S),  # JSON: the exact messages sent in this call
    ("request_params", _S),  # JSON: temperature, max_tokens, thinking switch, extra body
    ("raw_response", _S),
    ("raw_chars", _I),
    ("reasoning_chars", _I),
    ("finish_reason", _S),
    ("clean_status", _S),
    ("cleaned_chars", _I),
    ("format_pollution", _S),  # JSON list of kinds
    ("provider_error", _S),  # the last call error when the provider failed
    ("http_status", _I),
    ("attempts", _I),
    ("retries", _S),  # JSON list {attempt, kind, error, wait_s}
    ("timeout_s", _F),  # per-attempt deadline applied (Q-GEN-3)
    ("llm_time", _F),  # wall time including retries and waits
    ("latency_s", _F),  # last attempt
    ("prompt_tokens", _I),
    ("completion_tokens", _I),
    ("total_tokens", _I),
    ("reasoning_tokens", _I),
    ("cached_tokens", _I),
    ("cost_usd", _F),
    ("started_at", _S),
    ("finished_at", _S),
]

# Self-debugging (`generate.rounds=k`): the outcome of each round's render and audit.
STAGE_FIELDS["selfdebug"] = [
    ("sample_id", _S),
    ("round", _I),
    ("rounds", _I),  # k configured
    ("exec_success", _B),
    ("spatial_pass", _B),
    ("error_type", _S),  # the Exec taxonomy's fine type (None when the render succeeded)
    ("error_category", _S),
    ("error_msg", _S),
    ("gen_status", _S),
    ("script_sha256", _S),
    ("audit_success", _I),
    ("visual_structure_pass", _I),
    ("visual_structure_rate", _F),
    ("visual_issue_total", _I),
    ("render_wall_s", _F),
    ("audit_runtime_sec", _F),
    ("feedback_kind", _S),  # none | render_error | spatial_findings | audit_error | empty_output
    ("feedback", _S),  # the follow-up user turn built from this round (None when it passed)
    ("last_round", _B),  # the loop stopped after this round
]

# PADVC (spec padvc.md §10.1): the toolkit's row (lists/dicts as JSON strings), then ours.
STAGE_FIELDS["padvc"] = [
    ("padvc_status", _S),  # the core's status: ok | error
    ("error", _S),  # the toolkit's "<Type>: <msg>" of an error row
    *((n, t) for n, t in [
        ("detail_version", _I), ("source_id", _S), ("difficulty", _S), ("difficulty_score", _F),
        ("audit_success", _I), ("visual_structure_pass", _I), ("visual_structure_rate", _F),
        ("render_success", _B), ("video_path", _S), ("padvc_raw", _F), ("padvc_norm", _F),
        ("padvc_selected", _F), ("score_output", _S), ("score_norm_method", _S), ("norm_mu", _F),
        ("norm_sigma", _F), ("norm_log_space", _B), ("p_exponent", _F), ("video_fps", _F),
        ("video_frame_count", _I), ("video_source_frame_count", _I), ("video_duration_sec", _F),
        ("text_sample_stride", _I), ("text_peak_frame_index", _I), ("text_peak_time_sec", _F),
        ("sampled_text_energy_series", _S), ("frame_diff_series", _S), ("frame_diff_count", _I),
        ("pvd_raw", _I), ("pvd_factor", _F), ("max_raw_text_energy", _F), ("max_text_burden_p", _F),
        ("geo_evolution_sum_p", _F), ("geo_evolution_avg_p", _F), ("animation_segment_count", _I),
        ("segment_text_energy_threshold", _F), ("segment_boundary_details", _S), ("event_count", _I),
        ("event_threshold_mode", _S), ("event_threshold_abs", _F), ("event_threshold_ratio", _F),
        ("event_threshold", _F), ("delta_mode", _S), ("event_rescue_info", _S), ("events", _S),
        ("event_energy_details", _S), ("ocr_cache_hits", _I), ("ocr_cache_misses", _I),
        ("ocr_cache_path", _S), ("padvc_center", _F), ("u_padvc", _F), ("padvc_norm_name", _S),
        ("params_source", _S), ("u_padvc_center", _F),
    ]),
    # ours: PVD provenance, what OCR really cost, decode and device
    ("pvd_n_struct", _I), ("pvd_n_action", _I), ("pvd_matched_words", _S), ("pvd_zh_backend", _S),
    ("pvd_en_backend", _S), ("prompt_sha256", _S), ("ocr_backend", _S), ("ocr_signature", _S),
    ("ocr_provider", _S), ("ocr_provider_fallback", _S), ("ocr_requests", _I), ("ocr_calls", _I),
    ("decoder", _S), ("decoder_fallback", _S), ("device", _S),
    # text masks: scene (the render's text boxes, execute/textboxes.py) | ocr, and why not scene when it was asked
    # for; OCR requests answered by another frame's result (ocr.reuse)
    ("mask_source", _S), ("mask_source_detail", _S), ("ocr_reused", _I),
]


def normalize_status(row: dict, stage_status_field: str, ok_values=("ok",), skipped_values=()) -> dict:
    """Keep a stage core's own status in ``stage_status_field`` and set the closed-enum ``status``."""
    own = row.get("status")
    out = dict(row)
    out[stage_status_field] = own
    out["status"] = "ok" if own in ok_values else "skipped" if own in skipped_values else "error"
    if out["status"] == "error" and not out.get("error_kind"):
        out["error_kind"] = str(own)
    return out


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
