"""The video witness: each audited checkpoint's claimed geometry against the rendered video's pixels (docs/security.md
"The video witness"). Trusted: reads the plan ``audit/witness.py`` built from the observations and the frames the
render wrote; counts with ``prism_kernels.witness``.

At a checkpoint (the end of play ``p``) the frame checked is the last one written at or before it, and the one
before it tells what was in motion. A drawn pixel (a channel off the background by more than ``THRESHOLD``) must lie
in some visible member's box (dilated by its half line width and ``MARGIN_PX``) or be in motion; every atom the
verdict used that owns a visible member must hold drawn or moving pixels (a filled one over a part of its box),
unless it lies mostly off the picture and out of the audit's bounds. A checkpoint whose play wrote no frame (a
skipped section) is a state no picture shows: a mismatch.
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

from prism_fast.audit.witness import stopped_plays, timeline

# Tolerances (measured: docs/security.md "The video witness")
THRESHOLD = 40             # per channel, 0..255: a pixel differs from the background (H.264 noise stays below)
MARGIN_PX = 3              # antialiasing and chroma subsampling around every box
MIN_HELD = 2               # drawn or moving pixels an expected atom's box must hold
UNEXPLAINED_MIN = 64       # unexplained drawn pixels tolerated in a frame ...
UNEXPLAINED_FRAC = 0.01    # ... or this fraction of its drawn pixels, whichever is larger
INSIDE_FRAC = 0.5          # an atom is expected to show when at least this much of its box is in the picture
FILL_FRAC = 0.04           # a filled atom's box must hold drawn or moving pixels over this fraction of its area
FILL_MIN_PX = 16.0         # ... when its box is at least this big both ways
BOUNDS_SLACK = 0.05        # scene units: an atom this close to the audit's bounds counts as inside them
MIN_EXTENT_PX = 1.0        # an atom smaller than a pixel both ways is not expected to show
FRAME_SLACK = 1            # frames the timeline may differ from the video (the container's own rounding)

OK, MISMATCH = "ok", "mismatch"


def _rendered(plan: dict | None, scene_class: str | None) -> tuple[dict | None, str | None]:
    """(the rendered scene's plan, or None with the status that ends the check)."""
    if plan is None:
        return None, "not_checked:no_plan"
    scenes = plan.get("scenes") or {}
    judged = {name for name, sc in scenes.items() if sc.get("segments")}
    if scene_class in scenes and scenes[scene_class].get("segments"):
        return scenes[scene_class], None
    if judged:  # the verdict rests on segments of a scene the video does not show (a decoy)
        return None, MISMATCH
    return None, "not_checked:no_segments"


def _frame_pair(cum, play: int, n_frames: int) -> tuple[int, int] | None:
    """(checkpoint frame, frame before it) for the checkpoint after ``play``: the last frame that play wrote; for a
    play that wrote none (a skipped section), the first frame written after it (the next play's start); None when
    no frame shows the checkpoint."""
    written = int(cum[play]) if 0 <= play < len(cum) else 0
    before = int(cum[play - 1]) if 0 < play <= len(cum) else 0
    f = written - 1 if written > before else written
    if f >= n_frames or f < 0:
        return None
    return f, max(f - 1, 0)


def needed_frames(plan: dict | None, scene_class: str | None, fps: float, n_frames: int) -> list[int]:
    """The frame indices :func:`judge` reads (for a decode that keeps them)."""
    scene, _ = _rendered(plan, scene_class)
    if scene is None or fps <= 0 or n_frames <= 0:
        return []
    cum = timeline(scene["plays"], fps)
    out = set()
    for seg in scene["segments"]:
        pair = _frame_pair(cum, int(seg["play"]), n_frames)
        if pair is not None:
            out.update(pair)
    return sorted(out)


def _px_box(box, cam, size, margin_px: float) -> tuple[list[int], float]:
    """Scene-unit box (x0, y0, x1, y1) -> (clipped half-open pixel box, fraction of its area inside the picture)."""
    cx, cy, fw, fh = cam
    w, h = size
    sx, sy = w / fw, h / fh
    x0 = (box[0] - cx) * sx + w / 2 - margin_px
    x1 = (box[2] - cx) * sx + w / 2 + margin_px
    y0 = (cy - box[3]) * sy + h / 2 - margin_px
    y1 = (cy - box[1]) * sy + h / 2 + margin_px
    area = max(x1 - x0, 1e-9) * max(y1 - y0, 1e-9)
    cx0, cx1 = min(max(x0, 0.0), w), min(max(x1, 0.0), w)
    cy0, cy1 = min(max(y0, 0.0), h), min(max(y1, 0.0), h)
    inside = max(cx1 - cx0, 0.0) * max(cy1 - cy0, 0.0) / area
    ix = [int(math.floor(cx0)), int(math.floor(cy0)), int(math.ceil(cx1)), int(math.ceil(cy1))]
    return ix, inside


def _within(box, bounds) -> bool:
    """Whether the audit's frame (centre x, y, half width, half height) holds the box (its out-of-bounds test)."""
    if not bounds:
        return False
    cx, cy, lx, ly = bounds
    return (box[0] >= cx - lx - BOUNDS_SLACK and box[2] <= cx + lx + BOUNDS_SLACK
            and box[1] >= cy - ly - BOUNDS_SLACK and box[3] <= cy + ly + BOUNDS_SLACK)


def judge(plan: dict | None, scene_class: str | None, fps: float, n_frames: int, frames: dict) -> dict:
    """Row fields from the plan and the decoded frames (``{index: (H, W, 3) uint8 BGR tensor}``):
    ``video_consistency`` (ok | mismatch | not_checked:<reason>) and ``video_consistency_detail``."""
    scene, status = _rendered(plan, scene_class)
    if scene is None:
        detail = {"reason": "the verdict rests on a scene the video does not show", "rendered": scene_class,
                  "audited": sorted((plan or {}).get("scenes") or {})} if status == MISMATCH else {}
        return {"video_consistency": status, "video_consistency_detail": detail}
    if n_frames <= 0:
        return {"video_consistency": "not_checked:no_frames", "video_consistency_detail": {}}
    cum = timeline(scene["plays"], fps)
    total = int(cum[-1]) if len(cum) else 0
    if abs(total - n_frames) > FRAME_SLACK + 2 * stopped_plays(scene["plays"]):
        return {"video_consistency": MISMATCH,
                "video_consistency_detail": {"reason": "the audited plays do not make this video's frames",
                                             "timeline_frames": total, "video_frames": n_frames}}
    if not frames:  # (a video always has frames: only a checkpoint no frame shows leaves none to read)
        shown = [seg for seg in scene["segments"] if _frame_pair(cum, int(seg["play"]), n_frames) is not None]
        if shown:
            return {"video_consistency": "not_checked:no_frames", "video_consistency_detail": {}}
        return {"video_consistency": MISMATCH, "video_consistency_detail": {
            "scene": scene_class, "segments": [], "unshown": [seg["segment"] for seg in scene["segments"]]}}
    any_frame = torch.as_tensor(next(iter(frames.values())))
    h, w = int(any_frame.shape[0]), int(any_frame.shape[1])
    cur, prev, bgs, expl, expl_f, exp, exp_f, exp_ids, segs = [], [], [], [], [], [], [], [], []
    unshown = []
    for seg in scene["segments"]:
        pair = _frame_pair(cum, int(seg["play"]), n_frames)
        if pair is None:  # its play wrote no frame and none follows (a skipped last section): no picture shows it
            unshown.append(seg["segment"])
            continue
        if pair[0] not in frames or pair[1] not in frames:
            return {"video_consistency": "not_checked:no_frames", "video_consistency_detail": {}}
        s = len(segs)
        segs.append((seg["segment"], pair[0]))
        cur.append(torch.as_tensor(frames[pair[0]]).cpu())
        prev.append(torch.as_tensor(frames[pair[1]]).cpu())
        r, g, b = (int(round(255 * v)) for v in seg["background"])
        bgs.append([b, g, r])
        cam = seg["camera"]
        for m in seg["members"]:
            box, _ = _px_box(m, cam, (w, h), MARGIN_PX + m[4] * w / cam[2])
            expl.append(box)
            expl_f.append(s)
        bounds = seg.get("bounds")
        for e in seg["expect"]:
            box, inside = _px_box(e, cam, (w, h), MARGIN_PX)
            expl.append(box)  # an atom's own box explains what it draws too
            expl_f.append(s)
            ew, eh = (e[2] - e[0]) * w / cam[2], (e[3] - e[1]) * h / cam[3]
            if max(ew, eh) < MIN_EXTENT_PX:  # (a mobject scaled to nothing draws nothing)
                continue
            if inside < INSIDE_FRAC and not _within(e, bounds):
                continue  # mostly off the picture and out of the audit's bounds: the cascade's out-of-bounds case
            # a filled atom must show over a part of its box (not a speck of something else's); an outline or a
            # line anywhere in it; an atom the audit put inside its bounds but the picture does not show, nowhere
            need = FILL_FRAC * ew * eh if (len(e) > 5 and e[5] and min(ew, eh) >= FILL_MIN_PX) else MIN_HELD
            exp.append(box)
            exp_f.append(s)
            exp_ids.append((s, e[4], max(MIN_HELD, need)))
    from prism_kernels.witness import witness_counts

    if not cur:  # every checkpoint is one no frame shows
        return {"video_consistency": MISMATCH,
                "video_consistency_detail": {"scene": scene_class, "segments": [], "unshown": unshown}}

    def t(rows, width):
        return torch.tensor(rows, dtype=torch.int64).reshape(-1, width)

    counts = witness_counts(torch.stack(cur), torch.stack(prev), t(bgs, 3), THRESHOLD, t(expl, 4),
                            t(expl_f, 1).reshape(-1), t(exp, 4), t(exp_f, 1).reshape(-1))
    drawn, unexplained, held = counts.drawn.tolist(), counts.unexplained.tolist(), counts.expected.tolist()
    missing: dict = {}
    for (s, atom_id, need), n in zip(exp_ids, held):
        if n < need:
            missing.setdefault(s, []).append(atom_id)
    per_seg, bad = [], False
    for s, (seg_i, frame) in enumerate(segs):
        over = unexplained[s] > max(UNEXPLAINED_MIN, UNEXPLAINED_FRAC * drawn[s])
        bad = bad or over or s in missing
        per_seg.append({"segment": seg_i, "frame": frame, "drawn": drawn[s], "unexplained": unexplained[s],
                        "missing": missing.get(s, [])[:20]})
    detail = {"scene": scene_class, "segments": per_seg}
    if unshown:  # the verdict judged a state the video never shows
        detail["unshown"] = unshown
    return {"video_consistency": MISMATCH if bad or unshown else OK, "video_consistency_detail": detail}


def check_video(plan: dict | None, scene_class: str | None, video_path: str | Path | None, decoder: str = "opencv",
                decode=None) -> dict:
    """:func:`judge` on ``video_path``. ``decode(indices) -> {index: frame}`` reads the frames (the render worker's
    TD decode, which keeps them: one decode for both); by default one sequential pass that stops after the last."""
    from prism_fast.video.decode import probe_video
    from prism_fast.video.scan import read_frames_at

    if plan is None:
        return judge(None, scene_class, 0.0, 0, {})
    if not video_path or not Path(video_path).is_file():
        return {"video_consistency": "not_checked:no_video", "video_consistency_detail": {}}
    probe = probe_video(video_path)
    fps, n = float(probe.fps or 0.0), int(probe.container_frame_count or 0)
    wanted = needed_frames(plan, scene_class, fps, n)
    if decode is None:
        frames = read_frames_at(video_path, wanted, decoder=decoder) if wanted else {}
    else:
        frames = decode(wanted)
    return judge(plan, scene_class, fps, n, {i: frames[i] for i in wanted if i in frames})


__all__ = ["MISMATCH", "OK", "THRESHOLD", "check_video", "judge", "needed_frames"]
