"""TD_raw computed by the render workers, right after a successful render, for the TD stage to use.

Why: on a CPU run the TD stage would start its own metric actors (a Ray worker and a torch import each) after
the last render, and decode every video then; a render worker that has just written a video decodes it while
the other workers still render, so the stage's work moves into the exec stage's tail and the TD stage itself
only builds rows (design: docs/design.md "TD in the render workers").

What is stored, by trusted code only (the render actor, after the sandboxed render exited):
``<model dir>/td_pre/<id>.json`` = ``{"video_sha256", "settings", "td"}`` -- the video's sha256 when it was
decoded, the settings it was decoded with (:func:`td_settings`: pixel threshold, profile and its switches,
decoder, device) and the :class:`~prism_fast.metrics.td_rows.TDRaw` of ``metrics.td.compute_td_raw``, the very
call the TD stage's actor makes. The TD stage takes an entry only when its settings are this run's and the video
it finds now hashes to the stored sha256; anything else (no entry, another video, other settings, an unreadable
file) is decoded by the stage's actors as before, so a row never depends on whether the entry was there.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

from prism_fast.fsutil import atomic_write_text, sha256_file
from prism_fast.metrics.td_rows import TDRaw
from prism_fast.profile import Profile

DIR_NAME = "td_pre"
MAX_ENTRY_BYTES = 64 * 1024


def td_settings(pixel_threshold: int, profile: Profile, decoder: str, device: str) -> dict:
    """What a TD_raw depends on besides the video (the TD stage's settings fingerprint holds the same keys)."""
    return {"pixel_threshold": int(pixel_threshold), "profile": profile.name,
            "quirks_fixed": sorted(profile.fixed), "decoder": decoder, "device": device}


def entry_path(model_dir: str | os.PathLike, sample_id: str) -> Path:
    return Path(model_dir) / DIR_NAME / f"{sample_id}.json"


def store_td_raw(model_dir: str | os.PathLike, sample_id: str, video_path: str, settings: dict,
                 profile: Profile, keep: dict | None = None) -> TDRaw:
    """Render-actor side: TD_raw of ``video_path`` under ``settings`` (``compute_td_raw``), written for the TD
    stage; the sha256 is taken before the decode (a file changed meanwhile then fails the stage's check)."""
    from prism_fast.metrics.td import compute_td_raw

    sha = sha256_file(video_path)
    td = compute_td_raw(video_path, pixel_threshold=settings["pixel_threshold"], profile=profile,
                        decoder=settings["decoder"], device=settings["device"], keep=keep)
    path = entry_path(model_dir, sample_id)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"video_sha256": sha, "settings": settings, "td": dataclasses.asdict(td)}
    atomic_write_text(path, json.dumps(doc, ensure_ascii=False), fsync=False)
    return td


def load_td_raw(model_dir: str | os.PathLike, sample_id: str, video_path: str, settings: dict) -> TDRaw | None:
    """TD-stage side: the stored TD_raw of this sample when it was computed under ``settings`` from the very video
    at ``video_path`` now, else None (the stage's actors decode it)."""
    path = entry_path(model_dir, sample_id)
    try:
        if not path.is_file() or path.stat().st_size > MAX_ENTRY_BYTES:
            return None
        doc = json.loads(path.read_text(encoding="utf-8"))
        if doc.get("settings") != settings or doc.get("video_sha256") != sha256_file(video_path):
            return None
        return TDRaw(**doc["td"])
    except (OSError, ValueError, TypeError, KeyError):
        return None


def forget(model_dir: str | os.PathLike, sample_id: str) -> None:
    """Drop a sample's entry (its render is about to be redone)."""
    entry_path(model_dir, sample_id).unlink(missing_ok=True)

