"""Content-addressed render cache: a re-run skips renders whose inputs are byte-identical.

The key is the sha256 of a canonical JSON of everything that can change a render's outcome:

* the script bytes (sha256), the sample id (it names the mp4 and appears in paths inside error text), the
  selected scene;
* the render settings (quality flag, timeout, resource limits, version check switch) and the profile's exec
  switches (Q-EXEC-1, Q-EXEC-2);
* the environment fingerprint hash (manim, Pillow, PyAV/libav, cairo, pango, TeX, dvisvgm, fonts) and
  ``CACHE_SCHEMA``, bumped whenever this package changes how a row is produced.

Only outcomes that a re-run would reproduce are stored: successes (with their mp4) and failures of kind
``exit_nonzero`` / ``no_mp4`` (the script's own error). Timeouts, signals and sandbox errors depend on load
or on the host and are always recomputed. A hit is verified against the stored mp4 sha256; a mismatch is a
miss with a warning. Rows served from the cache carry ``cache_hit: true`` and the original timings.

Layout: ``<root>/<key[:2]>/<key>.json`` (+ ``<key>.mp4``); both written atomically, mp4 first, so a json file
always means a complete entry. Safe for several processes sharing one root.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import uuid
from pathlib import Path

log = logging.getLogger(__name__)

CACHE_SCHEMA = "prism_fast.render.v1"
CACHEABLE_ERROR_KINDS = frozenset({"exit_nonzero", "no_mp4"})


def render_cache_key(*, script_text: str, sample_id: str, scene: str, render_settings: dict,
                     exec_switches: dict, env_fingerprint: str) -> str:
    """sha256 hex of the canonical JSON of the inputs (see module docstring)."""
    payload = {
        "schema": CACHE_SCHEMA,
        "script_sha256": hashlib.sha256(script_text.encode("utf-8")).hexdigest(),
        "sample_id": sample_id,
        "scene": scene,
        "render": render_settings,
        "exec_switches": exec_switches,
        "env": env_fingerprint,
    }
    canon = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _atomic_copy(src: Path, dest: Path) -> None:
    part = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.part")
    shutil.copyfile(src, part)
    os.replace(part, dest)


def _atomic_write(dest: Path, text: str) -> None:
    part = dest.with_name(f".{dest.name}.{uuid.uuid4().hex}.part")
    part.write_text(text, encoding="utf-8")
    os.replace(part, dest)


class RenderCache:
    """A directory of cached render rows and videos."""

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def _paths(self, key: str) -> tuple[Path, Path]:
        folder = self.root / key[:2]
        return folder / f"{key}.json", folder / f"{key}.mp4"

    def get(self, key: str, dest_video: Path) -> dict | None:
        """The cached row, with its mp4 copied to ``dest_video`` when it was a success; None on a miss."""
        meta, video = self._paths(key)
        if not meta.exists():
            return None
        try:
            entry = json.loads(meta.read_text(encoding="utf-8"))
            row = entry["row"]
            if row.get("success"):
                if _sha256_file(video) != entry["mp4_sha256"]:
                    log.warning("render cache: %s mp4 does not match its hash; recomputing", key)
                    return None
                dest_video.parent.mkdir(parents=True, exist_ok=True)
                _atomic_copy(video, dest_video)
                row["video_path"] = str(dest_video)
        except (OSError, ValueError, KeyError) as exc:
            log.warning("render cache: unreadable entry %s (%s); recomputing", key, exc)
            return None
        row["cache_hit"] = True
        row["cache_key"] = key
        return row

    def put(self, key: str, row: dict) -> bool:
        """Store ``row`` (and its video) if its outcome is reproducible. Returns whether it was stored."""
        cacheable = row.get("success") and not row.get("skipped") or row.get("error_kind") in CACHEABLE_ERROR_KINDS
        if not cacheable:
            return False
        meta, video = self._paths(key)
        meta.parent.mkdir(parents=True, exist_ok=True)
        public = {k: v for k, v in row.items() if not k.startswith("_")}  # e.g. _onepass_doc: the caller's, not a result
        entry = {"schema": CACHE_SCHEMA, "row": {**public, "cache_hit": False, "cache_key": key}}
        try:
            if row.get("success"):
                src = Path(row["video_path"])
                _atomic_copy(src, video)
                entry["mp4_sha256"] = _sha256_file(video)
            _atomic_write(meta, json.dumps(entry, ensure_ascii=False, sort_keys=True))
        except OSError as exc:
            log.warning("render cache: could not store %s (%s)", key, exc)
            return False
        return True
