"""Content-addressed audit cache: a run with the same script, audit settings and environment reuses the audit.

Used so that a Hydra sweep over metric settings (``-m metrics.td.tau=20,25,30``: one run directory per job)
re-runs only the metric stage: renders come from the render cache (``execute/cache.py``), audits from here.

Key: sha256 of a canonical JSON of the script bytes (sha256), the sample id (it names files and can appear in
messages), every ``AuditConfig`` field except the ones that cannot change a report (``save_images``, ``one_pass``,
``pictures``, ``geometry_device``, ``timeout_sec`` is kept: it decides timeouts), the profile's switches, the
environment fingerprint hash and ``CACHE_SCHEMA``. Only outcomes a re-run reproduces are stored: successes and
the script's own failures (no segments, scene exception, non-zero exit status 1-127). Timeouts, signals and
lost workers depend on the host and are recomputed. A hit rewrites ``file_path`` to this run's script copy,
writes the stored ``audit_report.json`` where the audit would have, and is flagged ``audit_cache_hit``.
Layout: ``<root>/<key[:2]>/<key>.json``, written atomically.

Integrity (issue #13, :mod:`prism_fast.integrity`): a hostile script once flipped an entry. Every entry carries
``tag = HMAC(key, cache key + row + report)`` (key: ``<runs_root>/.cache/integrity.key`` by default, see
:func:`prism_fast.integrity.default_key_dir`, or the caller's). An entry without a valid tag (written by anyone
else, edited, or copied from another key) is a miss: logged, counted in ``integrity_failures``, recomputed and
overwritten.
"""

from __future__ import annotations

import logging
from dataclasses import asdict
from pathlib import Path

from prism_fast import fsutil
from prism_fast.audit.witness import PLAN_FILE, PLAN_VERSION
from prism_fast.integrity import ContentCache

log = logging.getLogger(__name__)

# v3: the video witness's plan stored with the report (its format's version is part of the key)
CACHE_SCHEMA = f"prism_fast.audit.v3.plan{PLAN_VERSION}"
NOT_IN_KEY = frozenset({"save_images", "pictures", "pictures_root", "geometry_device", "prefork", "one_pass"})
CACHEABLE_ERROR_KINDS = frozenset({None, "no_segments", "scene_exception", "nonzero_exit"})
TAG_KIND = "audit_cache"
WITNESS_FIELDS = ("video_consistency", "video_consistency_detail")


def audit_cache_key(*, script_text: str, sample_id: str, audit_cfg, profile, env_fingerprint: str) -> str:
    settings = {k: v for k, v in asdict(audit_cfg).items() if k not in NOT_IN_KEY}
    return fsutil.sha256_json({
        "schema": CACHE_SCHEMA,
        "script_sha256": fsutil.sha256_text(script_text),
        "sample_id": sample_id,
        "audit": settings,
        "profile": profile.describe(),
        "env": env_fingerprint,
    }, default=str)


def cacheable(row: dict) -> bool:
    if row.get("status") == "timeout" or row.get("error_kind") not in CACHEABLE_ERROR_KINDS:
        return False
    if row.get("error_kind") == "nonzero_exit":
        rc = row.get("returncode")
        return isinstance(rc, int) and 0 < rc < 128
    return True


class AuditCache(ContentCache):
    """Cached audit rows and reports (:class:`prism_fast.integrity.ContentCache`: layout, tags)."""

    KIND = TAG_KIND
    WHAT = "audit cache"

    def get(self, key: str, sample_id: str, work_dir: Path, script_text: str) -> dict | None:
        entry = self.load(key)
        if entry is None:
            return None
        try:
            row, report = entry["row"], entry["report"]
            if not isinstance(row, dict) or not (report is None or isinstance(report, str)):
                raise ValueError("malformed entry")
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("audit cache: unreadable entry %s (%s); recomputing", key[:16], exc)
            return None
        script = work_dir / "scripts" / f"{sample_id}.py"
        script.parent.mkdir(parents=True, exist_ok=True)
        script.write_text(script_text, encoding="utf-8")
        if report is not None:
            dest = work_dir / "audits" / sample_id / "audit_report.json"
            dest.parent.mkdir(parents=True, exist_ok=True)
            fsutil.atomic_write_text(dest, report)
        plan = entry.get("witness_plan")
        dest = work_dir / "audits" / sample_id / PLAN_FILE
        if isinstance(plan, str):  # the video witness's plan of this audit (audit/witness.py)
            dest.parent.mkdir(parents=True, exist_ok=True)
            fsutil.atomic_write_text(dest, plan)
        else:
            dest.unlink(missing_ok=True)
        row["file_path"] = str(script)
        row["audit_cache_hit"] = True
        for k in WITNESS_FIELDS:
            row.pop(k, None)
        return row

    def put(self, key: str, row: dict, report_path: Path) -> bool:
        if not cacheable(row):
            return False
        try:
            report = report_path.read_text(encoding="utf-8") if report_path.exists() else None
            plan_path = report_path.parent / PLAN_FILE
            plan = plan_path.read_text(encoding="utf-8") if plan_path.exists() else None
            # (the video witness's own fields belong to one video: each use of the entry checks its own)
            kept = {k: v for k, v in row.items() if k not in WITNESS_FIELDS}
            self.store(key, {"schema": CACHE_SCHEMA, "row": {**kept, "audit_cache_hit": False}, "report": report,
                             "witness_plan": plan}, default=str)
        except OSError as exc:
            log.warning("audit cache: could not store %s (%s)", key[:16], exc)
            return False
        return True
