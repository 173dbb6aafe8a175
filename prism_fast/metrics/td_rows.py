"""TD rows without torch (spec td.md §3-§4): what a TD row is made of once TD_raw is known -- the raw result
(:class:`TDRaw`), the centring, the no-video gate and the row itself. Split from :mod:`prism_fast.metrics.td` so
that the driver can build the rows of failed renders and of videos whose TD_raw the render workers already
computed (:mod:`prism_fast.metrics.td_store`) without importing torch; ``td`` re-exports every name.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from prism_fast.metrics.params import TDParams
from prism_fast.profile import REFERENCE, Profile

# Closed status enum of a TD row (ours). Non-"ok" rows keep td_raw = 0.0 in reference (Q-TD-2).
TD_STATUSES = ("ok", "no_video", "decode_failed", "zero_duration")
PADVC_PASSTHROUGH = ("padvc_raw", "padvc_center", "u_padvc")


@dataclass(frozen=True)
class TDRaw:
    """TD_raw of one video plus what was used to get it."""

    td_raw: float
    status: str
    error_kind: str | None = None
    error_detail: str | None = None
    fps: float = 0.0
    container_frame_count: int = 0
    decoded_frame_count: int = 0
    pair_count: int = 0
    ratio_sum: float = 0.0
    decoder: str | None = None
    decoder_fallback: str | None = None


# --- centering and rows -------------------------------------------------------------------------------

def td_center(td_raw: float, mu: float, sigma: float, eps: float) -> tuple[float, float]:
    """``(td_center, z)``; neither td_raw nor σ is clamped (td.md §3)."""
    z = (math.log(float(td_raw) + eps) - mu) / sigma
    return math.exp(-0.5 * z * z), z


def no_video(base_row: Mapping) -> TDRaw | None:
    """The toolkit computes TD only if render_success is truthy, video_path is set and the file exists."""
    if not base_row.get("render_success"):
        return TDRaw(0.0, "no_video", "render_failed", "render_success is false")
    path = base_row.get("video_path")
    if not path:
        return TDRaw(0.0, "no_video", "video_path_missing", "row has no video_path")
    if not Path(path).exists():
        return TDRaw(0.0, "no_video", "video_file_missing", f"video file not found: {path}")
    return None


def build_td_row(base_row: Mapping, td: TDRaw, params: TDParams, *, profile: Profile = REFERENCE) -> dict:
    """One ``td_center_scores.jsonl`` row, toolkit keys first in the toolkit's order (td.md §4)."""
    visual_rate = float(base_row.get("visual_structure_rate", 0.0) or 0.0)
    row = {
        "id": base_row.get("id"),
        "source_id": base_row.get("source_id"),
        "difficulty": base_row.get("difficulty"),
        "difficulty_score": base_row.get("difficulty_score"),
        "render_success": bool(base_row.get("render_success")),
        "visual_structure_pass": int(base_row.get("visual_structure_pass", 0) or 0),
        "visual_structure_rate": visual_rate,
        "video_path": base_row.get("video_path"),
    }
    if td.status != "ok" and profile.fixes("Q-TD-2"):
        # improved: no number is invented for a row without a usable video; excluded from td means
        row.update(td_raw=None, td_center=None, td_center_z=None, u_td=0.0)
    else:
        # reference: a missing/undecodable video is scored as TD_raw = 0.0 (center ≈ 4.6e-20), Q-TD-2
        center, z = td_center(td.td_raw, params.mu, params.sigma, params.eps)
        row.update(td_raw=float(td.td_raw), td_center=float(center), td_center_z=float(z),
                   u_td=float(center * visual_rate))
    for key in PADVC_PASSTHROUGH:
        if key in base_row:
            row[key] = base_row[key]
    # project additions, after the toolkit's keys
    row["profile"] = profile.name
    row["params_source"] = params.source
    if profile.fixes("Q-TD-2"):
        row["td_status"] = td.status
    row["status"] = td.status
    row["error_kind"] = td.error_kind
    row["error_detail"] = td.error_detail
    row["decoder"] = td.decoder
    if td.decoder_fallback is not None:
        row["decoder_fallback"] = td.decoder_fallback
    return row
