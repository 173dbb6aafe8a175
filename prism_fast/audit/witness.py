"""The video witness's plan: what each audited checkpoint claims the video shows (docs/security.md "The video
witness"). Trusted and pure: built from the decoded observations and the segments the verdict judged; the video
side (``video/witness.py``) maps it to frames and pixels.

Per scene: the frame count of every play at the video's rate (the timeline), and per judged segment the play it
followed, the camera frame, the background colour, the boxes of the drawn members the child listed (visible or
not, by their colours against the background) and the boxes of the atoms the verdict used that own a visible
member (each must hold drawn pixels).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from prism_fast.audit.observations import Observations, decode

PLAN_FILE = "witness_plan.json"
PLAN_VERSION = 2  # 2: the audit's bounds, filled atoms, stroke pieces
# a member draws something the witness can expect: alpha x the largest channel difference from the background
VISIBLE_CONTRAST = 0.2
# cairo's line width is stroke_width x 0.01 scene units (manim Camera.cairo_line_width_multiple)
LINE_WIDTH_UNIT = 0.01


def _visible(drawn: np.ndarray, bg: tuple) -> np.ndarray:
    bg = np.asarray(bg, dtype=np.float64)
    kind, sw = drawn[:, 4], drawn[:, 5]
    stroke, fill = drawn[:, 6:10], drawn[:, 10:14]
    s_con = np.abs(stroke[:, :3] - bg).max(axis=1) * stroke[:, 3]
    f_con = np.abs(fill[:, :3] - bg).max(axis=1) * fill[:, 3]
    vm = kind == 0
    return np.where(vm, ((sw > 0) & (s_con >= VISIBLE_CONTRAST)) | (f_con >= VISIBLE_CONTRAST), fill[:, 3] > 0.05)


def frames_of_play(duration: float, frozen: bool, skipped: bool, fps: float, stopped: float = -1.0) -> int:
    """Frames manim writes for one play at ``fps`` (CairoRenderer.play): none when skipped; a run time shorter than
    a frame is one frame's (Scene.validate_run_time, at the render's rate); ``int(d / (1/fps))`` for a frozen wait,
    ``len(arange(0, d, 1/fps))`` otherwise, up to the frame at which a stop condition ended it (``stopped`` >= 0,
    the time it ended at in the run that recorded it: exact at the same rate, within a frame at another)."""
    if skipped or duration <= 0:
        return 0
    dt = 1 / fps
    duration = max(duration, dt)
    # len(arange(0, d, dt)) is numpy's ceil((d - 0) / dt), computed without allocating it (a forged duration)
    n = int(duration / dt) if frozen else int(math.ceil(duration / dt))
    if stopped >= 0:
        n = min(n, int(np.floor(stopped / dt + 1e-9)) + 1)
    return n


def _play(p) -> tuple:
    d, f, s, *rest = p
    return float(d), bool(f), bool(s), float(rest[0]) if rest else -1.0


def timeline(plays: list, fps: float) -> np.ndarray:
    """Cumulative frame counts: ``out[p]`` frames are written once play ``p`` has finished."""
    counts = [frames_of_play(*_play(p)[:3], fps, _play(p)[3]) for p in plays]
    return np.cumsum(np.asarray(counts, dtype=np.int64)) if counts else np.zeros(0, dtype=np.int64)


def stopped_plays(plays: list) -> int:
    """Plays a stop condition ended (each may be a frame off where the audit ran at another rate)."""
    return sum(1 for p in plays if _play(p)[3] >= 0)


def plan_from(obs: Observations | dict, per_scene: list) -> dict:
    """The plan (JSON-able) from the observations (document or decoded) and ``verdict.segments_of``'s
    ``[(scene, snapshots, kept indices)]``."""
    if not isinstance(obs, Observations):
        obs = decode(obs)
    scenes = {}
    for (name, _snaps, kept), scene in zip(per_scene, obs.scenes):
        segments = []
        for seg_i, k in enumerate(kept):
            _label, atoms, _lx, _ly, _center = scene.snapshots[k]
            w = scene.witness[k]
            table: dict = {}
            for a in atoms:  # the snapshot's distinct atoms, in table order (owner indices refer to it)
                table.setdefault(id(a), a)
            uniq = list(table.values())
            vis = _visible(w.drawn, w.background) if len(w.drawn) else np.zeros(0, dtype=bool)
            owners = {int(o) for o, v in zip(w.drawn[:, -1], vis) if v and o >= 0}
            filled = {int(o) for o, v, fa in zip(w.drawn[:, -1], vis, w.drawn[:, 13]) if v and o >= 0 and fa > 0}
            expect = []
            for i in sorted(owners):
                if i < len(uniq) and len(uniq[i].xy):
                    xy = uniq[i].xy
                    lo, hi = xy.min(axis=0), xy.max(axis=0)
                    if np.all(np.isfinite(lo)) and np.all(np.isfinite(hi)):
                        expect.append([float(lo[0]), float(lo[1]), float(hi[0]), float(hi[1]), uniq[i].id,
                                       i in filled])
            members = [[*map(float, row[:4]), float(row[5]) * LINE_WIDTH_UNIT / 2]
                       for row, v in zip(w.drawn, vis) if v]
            center = (0.0, 0.0) if _center is None else (float(_center[0]), float(_center[1]))
            segments.append({"segment": seg_i, "snapshot": k, "play": w.play, "camera": list(w.camera),
                             "bounds": [center[0], center[1], float(_lx), float(_ly)],
                             "background": list(w.background), "expect": expect, "members": members})
        scenes[name] = {"plays": [list(p) for p in scene.plays], "segments": segments}
    return {"version": PLAN_VERSION, "scenes": scenes}


def write_plan(audit_dir: Path, plan: dict | None) -> None:
    """``<audit_dir>/witness_plan.json`` (None: removed, so no earlier plan stands for this audit)."""
    path = Path(audit_dir) / PLAN_FILE
    if plan is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(plan, separators=(",", ":")), encoding="utf-8")


def read_plan(audit_dir: Path) -> dict | None:
    path = Path(audit_dir) / PLAN_FILE
    try:
        plan = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return plan if isinstance(plan, dict) and plan.get("version") == PLAN_VERSION else None


MISMATCH_KIND = "audit_video_mismatch"


def apply_to_row(row: dict, fields: dict) -> dict:
    """Put the witness's fields (``video/witness.py``) on an audit row; a ``mismatch`` fails Spatial in every
    profile (``error_kind=audit_video_mismatch``, the report kept for inspection)."""
    row["video_consistency"] = fields.get("video_consistency")
    row["video_consistency_detail"] = fields.get("video_consistency_detail") or {}
    if fields.get("video_consistency") == "mismatch" and row.get("error_kind") != "audit_tampered":
        msg = "audit_video_mismatch: the audited checkpoints are not what the video shows"
        row.update(audit_success=0, visual_structure_pass=0, visual_structure_rate=0.0, status="audit_failed",
                   error_kind=MISMATCH_KIND, error_detail=msg, error_msg=msg)
    return row


__all__ = ["MISMATCH_KIND", "PLAN_FILE", "apply_to_row", "frames_of_play", "plan_from", "read_plan", "stopped_plays",
           "timeline", "write_plan"]
