"""Content-addressed render cache: a re-run skips renders whose inputs are byte-identical.

The key is the sha256 of a canonical JSON of everything that can change a render's outcome:

* the script bytes (sha256), the sample id (it names the mp4 and appears in paths inside error text), the
  selected scene;
* the render settings (quality flag, timeout, resource limits, version check switch) and the profile's exec
  switches (Q-EXEC-1, Q-EXEC-2);
* the environment fingerprint hash (manim, Pillow, PyAV/libav, cairo, pango, TeX, dvisvgm, fonts) and
  ``CACHE_SCHEMA``, bumped whenever this package changes how a row is produced.

Only outcomes that a re-run would reproduce are stored: successes (with their mp4) and failures of kind
``exit_nonzero`` / ``no_mp4`` (the script's own error). Timeouts, signals and sandbox errors depend on load or
on the host, an invalid video (``videocheck.py``) on what a script did to its output: always recomputed. A success's row
carries its real-video check (``video_check``), so a hit on an entry stored without one is checked again by
``render.render_one`` (an invalid video is a miss). Rows served from the cache carry ``cache_hit: true`` and the
original timings.

Integrity (issue #13, :mod:`prism_fast.integrity`): a hostile script once wrote its own video into another
sample's entry. Every entry carries ``tag = HMAC(key, cache key + row + mp4 sha256)``; the key is
``<runs_root>/.cache/integrity.key`` by default (:func:`prism_fast.integrity.default_key_dir`) or given by the
caller. A hit needs a valid tag (an entry copied from another key fails too, the key is in the message) and an
mp4 whose bytes, as copied to the destination, hash to the tagged sha256; anything else is a miss, logged,
counted in ``integrity_failures`` and overwritten by the recomputed entry.

Layout: ``<root>/<key[:2]>/<key>.json`` (+ ``<key>.mp4``); both written atomically, mp4 first, so a json file
always means a complete entry. Safe for several processes sharing one root.
"""

from __future__ import annotations

import logging
from pathlib import Path

from prism_fast import fsutil
from prism_fast.integrity import ContentCache, IntegrityError

log = logging.getLogger(__name__)

CACHE_SCHEMA = "prism_fast.render.v1"
CACHEABLE_ERROR_KINDS = frozenset({"exit_nonzero", "no_mp4"})
TAG_KIND = "render_cache"


def render_cache_key(*, script_text: str, sample_id: str, scene: str, render_settings: dict,
                     exec_switches: dict, env_fingerprint: str) -> str:
    """sha256 hex of the canonical JSON of the inputs (see module docstring)."""
    return fsutil.sha256_json({
        "schema": CACHE_SCHEMA,
        "script_sha256": fsutil.sha256_text(script_text),
        "sample_id": sample_id,
        "scene": scene,
        "render": render_settings,
        "exec_switches": exec_switches,
        "env": env_fingerprint,
    })


class RenderCache(ContentCache):
    """A directory of cached render rows and videos (:class:`prism_fast.integrity.ContentCache`: layout, tags)."""

    KIND = TAG_KIND
    WHAT = "render cache"

    def get(self, key: str, dest_video: Path) -> dict | None:
        """The cached row, with its mp4 copied to ``dest_video`` when it was a success; None on a miss."""
        entry = self.load(key)
        if entry is None:
            return None
        try:
            row = entry["row"]
            if row.get("success"):
                dest_video.parent.mkdir(parents=True, exist_ok=True)
                fsutil.atomic_copy(self.path(key, ".mp4"), dest_video, expect_sha256=entry["mp4_sha256"])
                row["video_path"] = str(dest_video)
        except IntegrityError as exc:
            self.reject(key, f"mp4 does not match its tagged hash: {exc}")
            return None
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
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
        public = {k: v for k, v in row.items() if not k.startswith("_")}  # a caller's private field, not a result
        entry = {"schema": CACHE_SCHEMA, "row": {**public, "cache_hit": False, "cache_key": key}}
        try:
            if row.get("success"):  # the mp4 first: a json file always means a complete entry
                video = self.path(key, ".mp4")
                video.parent.mkdir(parents=True, exist_ok=True)
                entry["mp4_sha256"] = fsutil.atomic_copy(Path(row["video_path"]), video)
            self.store(key, entry)
            if not row.get("success"):  # an earlier success's mp4 under this key (a one-pass render's, replaced
                self.path(key, ".mp4").unlink(missing_ok=True)   # by the plain render's failure) is no entry's
        except OSError as exc:
            log.warning("render cache: could not store %s (%s)", key, exc)
            return False
        return True
