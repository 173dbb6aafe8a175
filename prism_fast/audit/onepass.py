"""One Manim execution per sample: the ``-ql`` render also yields the audit report where that is provably the
report the audit-only run would write (issue 4 deliverable 3; design: docs/design.md "One-pass audit").

The one-pass audit is the audit's use of the render's observer extension point (``execute/observers.py``);
execute knows nothing of it. Its parts:

* ``onepass_rule`` (parent side, before rendering): the static AST rule, :func:`static_reasons`.
* ``onepass_child`` (inside the forked render child, before manim's CLI ``main()``): the passive observers,
  entry :data:`OBSERVER_ENTRY`; they write the report and every dynamic reason to distrust it into the
  observer's out file at exit.
* this module (parent side): :func:`plan_reasons` (everything known before rendering), :func:`render_with_onepass`
  (render with the observer, then decide whether the report is kept) and :func:`render_and_hand_off` (the render
  actor's call: the above plus the hand-off to the audit stage).
* ``onepass_store``: the hand-off store between the render actor and the audit stage (:func:`load_shared_audit`,
  :func:`cache_shared_audit` for the audit stage).

The parent keeps the one-pass report only when the child reports no reason and the profile is the reference
one, and the render succeeded or failed where the audit fails too (``onepass_failure``: then the report is the
audit's salvage); otherwise the sample takes the audit-only fast path (``audit_pass: "separate"``). A failed
one-pass render whose printed error could differ from the plain render's is rendered again without observers.
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import replace
from pathlib import Path
from typing import Callable

from prism_fast.audit.config import AuditConfig
from prism_fast.audit.fastcopy import may_share_svg_paths
from prism_fast.audit.onepass_rule import static_reasons
from prism_fast.audit.onepass_rules import UNHOOKED_ONLY
from prism_fast.audit.onepass_store import (cache_shared_audit, load_shared_audit, store_separate_audit,
                                            store_shared_audit)
from prism_fast.audit.tamper import static_evidence
from prism_fast.audit.verdict import VerdictTimeout, verdict_bounded
from prism_fast.audit.witness import apply_to_row, plan_from, read_plan
from prism_fast.execute import texcache
from prism_fast.execute.cache import RenderCache
from prism_fast.execute.observers import Observer
from prism_fast.execute.render import backend_name, executed, render_one

log = logging.getLogger(__name__)

OBSERVER_NAME = "onepass"  # its out file in the sample's directory: .prism_fast_onepass.json
OBSERVER_ENTRY = "prism_fast.audit.onepass_child:install"
# for execute.render.prefork_worker(preload=...): imported once, in this order (the child half's warm() takes the
# library table last, so that sys.modules is the child's as it starts: its first update then walks no module)
PRELOAD = ("prism_fast.audit.onepass_failure", "prism_fast.audit.onepass_child")

# the audit stage's side of the hand-off (the render actor's side is render_and_hand_off)
__all__ = ["OBSERVER_ENTRY", "PRELOAD", "cache_shared_audit", "load_shared_audit", "observer", "plan_reasons",
           "render_and_hand_off", "render_with_onepass", "static_reasons"]


def observer(audit_cfg: dict) -> Observer:
    """The one-pass observer of one render (``audit_cfg``: an ``AuditConfig.to_dict()``)."""
    return Observer(name=OBSERVER_NAME, entry=OBSERVER_ENTRY, request={"audit_cfg": audit_cfg})


def plan_reasons(script_text: str, audit_cfg: dict, profile, backend: str) -> list[str]:
    """Everything known before rendering that sends the sample to the separate audit."""
    reasons = []
    if profile.fixed:
        reasons.append(f"profile:{profile.name}")  # the observers implement the reference hooks only
    if backend != "prefork":
        reasons.append(f"backend:{backend}")  # the observers are installed by the prefork worker's child
    if audit_cfg.get("one_pass", "auto") != "auto":
        reasons.append("one_pass:off")
    if audit_cfg.get("full_fidelity") or audit_cfg.get("save_images") or audit_cfg.get("pictures"):
        reasons.append("audit_images")  # frames would have to be rasterised at the audit's settings
    return reasons + static_reasons(script_text) + [f"tamper:{e}" for e in static_evidence(script_text)]


def render_with_onepass(sample_id, script_text, out_dir, cfg, profile, file_path, runner, audit_cfg: dict) -> dict:
    """``render_one`` with the one-pass audit: the exec row (identical to a plain render's but for timings) with
    ``onepass`` / ``onepass_reasons`` / ``manim_executions`` and, when shared, ``_onepass_audit`` (the caller pops
    it: ``{"report", "audit_sec", "engine"}``)."""
    reasons = plan_reasons(script_text, audit_cfg, profile, backend_name(runner))
    # copies of glyphs share their parsed SVG path where the script cannot reach it (execute/fastpaths.py)
    share = bool(getattr(cfg, "share_glyph_paths", False)) and may_share_svg_paths(script_text, reasons)
    unhooked_only = [r for r in reasons if r.startswith(UNHOOKED_ONLY)]
    if len(unhooked_only) < len(reasons):
        row = render_one(sample_id, script_text, out_dir, cfg, profile, file_path, runner, share_svg_paths=share)
        row.update(onepass="off" if "one_pass:off" in reasons else "ineligible", onepass_reasons=reasons)
        row["manim_executions"] = row.get("manim_executions") or int(executed(row))
        return row
    watch = observer(audit_cfg)
    row = render_one(sample_id, script_text, out_dir, cfg, profile, file_path, runner, observers=(watch,),
                     share_svg_paths=share)
    doc = _judged(watch.result, audit_cfg, profile)
    if unhooked_only and doc is not None and not doc.get("unhooked"):
        # a camera access only an unhooked scene may have (onepass_rules): a hooked scene was audited here, so
        # its report is not taken (the render itself is a plain one: nothing render-changing was found)
        doc = {**doc, "reasons": [*unhooked_only, *(doc.get("reasons") or [])]}
    if not executed(row):  # a cache hit or a trusted existing video: nothing ran, nothing observed
        row.update(onepass="separate", onepass_reasons=["not_executed"], manim_executions=0)
        return row
    changed = [r for r in (doc or {}).get("reasons") or [] if r.startswith(RENDER_CHANGING)]
    if changed:
        # the observers may have changed the render itself: rendered again without them (success or failure)
        plain = _render_plain_again(sample_id, script_text, out_dir, cfg, profile, file_path, runner, row, share)
        plain.update(onepass="fallback", onepass_reasons=["render_changed", *doc["reasons"]],
                     manim_executions=_executions(row) + _executions(plain))
        return plain
    if not row["success"]:
        kept = _failed_render(row, doc)
        if kept is not None:  # the row is the plain render's; the audit is salvaged from it, or runs separately
            row.update(kept)
            return row
        # otherwise render again without the observers, so the row (error text included) is exactly the plain
        # render's; the audit runs separately
        plain = _render_plain_again(sample_id, script_text, out_dir, cfg, profile, file_path, runner, row, share)
        plain.update(onepass="fallback", onepass_reasons=["render_failed", *_failure_reasons(doc, watch)],
                     manim_executions=_executions(row) + _executions(plain))
        return plain
    ran = row.get("manim_executions") or 1  # 2 where render_one re-rendered (fast paths left after an exception)
    if doc is None:   # nothing left, or a file without a valid seal (a script's forgery): never trusted
        reason = "no_side_file" if watch.rejected in (None, "missing") else f"side_file_{watch.rejected}"
        row.update(onepass="separate", onepass_reasons=[reason], manim_executions=ran)
    elif doc.get("reasons"):
        row.update(onepass="separate", onepass_reasons=list(doc["reasons"]), manim_executions=ran)
    elif not isinstance(doc.get("report"), dict):
        row.update(onepass="separate", onepass_reasons=["no_report"], manim_executions=ran)
    elif _unhooked_too_long(row, doc):
        row.update(onepass="separate", onepass_reasons=["unhooked_long_render"], manim_executions=ran)
    else:
        row.update(onepass="shared", onepass_reasons=[], manim_executions=ran,
                   _onepass_audit={"report": doc["report"], "audit_sec": doc.get("audit_sec", 0.0),
                                   "engine": doc.get("engine"), "witness_plan": doc.get("witness_plan")})
    return row


def _judged(doc: dict | None, audit_cfg: dict, profile) -> dict | None:
    """The child's sealed result with the report computed here, from its raw observations (``verdict.py``): a
    ``report`` or ``engine`` the child wrote is never read. Malformed observations are a reason (the sample takes
    the separate audit)."""
    if not isinstance(doc, dict):
        return doc
    doc = {k: v for k, v in doc.items() if k not in ("report", "engine", "witness_plan")}
    obs = doc.pop("observations", None)
    if obs is None:
        return doc
    cfg = AuditConfig.from_dict(audit_cfg)
    try:
        doc["report"], doc["engine"], per_scene = verdict_bounded(obs, cfg, profile, cfg.timeout_sec)
        doc["witness_plan"] = plan_from(obs, per_scene)
    except VerdictTimeout:
        doc["reasons"] = [*(doc.get("reasons") or []), "observations:verdict_timeout"]
    except Exception as exc:  # noqa: BLE001 - whatever the document does to the reader is the script's doing
        doc["reasons"] = [*(doc.get("reasons") or []), f"observations:{type(exc).__name__}: {str(exc)[:120]}"]
    return doc


def _render_plain_again(sample_id, script_text, out_dir, cfg, profile, file_path, runner, observed: dict,
                        share_svg_paths: bool = False) -> dict:
    """The plain render after an observed one that cannot stand for it. The observed run's video and cache entry
    must not: under the reference profile an existing ``videos/<id>.mp4`` is trusted as a success without rendering
    (Q-FUNNEL-2), and ``render_one`` caches a successful observed row -- either way the "plain" row was the observed
    one (red team: a render the observers changed kept its video). The plain row replaces the cache entry."""
    (Path(out_dir) / "videos" / f"{sample_id}.mp4").unlink(missing_ok=True)
    key = observed.get("cache_key") if cfg.cache_dir else None
    fell_back = observed.get("fast_paths") == "fallback"  # an exception went through a fast path: not again
    plain = render_one(sample_id, script_text, out_dir,
                       replace(cfg, cache_dir=None if key else cfg.cache_dir, fast_paths=cfg.fast_paths and not fell_back),
                       profile, file_path, runner, share_svg_paths=share_svg_paths)
    if fell_back:
        plain["fast_paths"] = "fallback"
    if key:
        cache = RenderCache(cfg.cache_dir)
        if not cache.put(key, plain):  # not cacheable (a failure): the observed entry must not stay either
            for suffix in (".json", ".mp4"):  # (the json first: a json file always means a complete entry)
                try:
                    cache.path(key, suffix).unlink(missing_ok=True)
                except OSError as exc:
                    log.warning("render cache: observed entry %s not removed (%s)", key, exc)
        plain["cache_key"] = key
    return plain


# Reasons after which the one-pass render itself may differ from a plain render (not only its report): script
# methods of a Mobject class, which the audit's snapshots call in the one-pass render only (issue 19 red team)
RENDER_CHANGING = ("script_mobject_method:", "script_patch:", "scene_override:")


# A script whose every scene is unhooked (Q-SPATIAL-1) gets the report {} from the audit-only run only if that
# run ends: it steps at 60 fps (4x the render's frames, none rasterised) under a 900 s timeout. Renders longer than
# this are audited separately.
UNHOOKED_MAX_RENDER_S = 200.0


def _unhooked_too_long(row: dict, doc: dict) -> bool:
    return bool(doc.get("unhooked")) and (row.get("timed_out") or float(row.get("wall_s") or 0.0) > UNHOOKED_MAX_RENDER_S)


def _failed_render(row: dict, doc: dict | None) -> dict | None:
    """What a failed one-pass render leaves (row fields), or None: render again without observers.

    The row is kept when it is the plain render's: the render failed without printing an exception (exit status
    0, e.g. no mp4 -- the same premise as a successful render's row), or the render child examined the exception
    before it was printed and found only pass-through observer frames (``audit/onepass_failure.py``; unlinked, so
    the printed text is the plain render's) -- also when the render then hung until its timeout, as manim's movie
    writer does after a failure inside a play. Its audit is the salvaged report when the child also found the
    exception to be the audit's (``accept``: nothing render-only or per-frame in the traceback) and recorded no
    reason; otherwise the audit runs separately."""
    if doc is None or (row.get("signal") and not row.get("timed_out")):  # (a timeout ends with our own kill)
        return None
    failure = doc.get("failure")
    reasons = list(doc.get("reasons") or [])
    if failure is None:
        if row.get("timed_out") or row.get("exit_status") not in (0, "0"):
            return None  # an exit nobody examined (SystemExit, a crash, a timeout with nothing printed)
    elif not isinstance(failure, dict) or not failure.get("printed_as_plain"):
        return None
    elif not row.get("timed_out") and row.get("exit_status") not in (1, "1"):
        return None
    if isinstance(failure, dict) and not failure.get("accept"):
        reasons = [r for r in reasons if r != "failure_not_shared"] + [f"failure:{failure.get('why')}"]
    if _unhooked_too_long(row, doc):
        reasons.append("unhooked_long_render")
    if reasons or not isinstance(doc.get("report"), dict):
        return {"onepass": "separate", "onepass_reasons": ["render_failed", *(reasons or ["no_report"])],
                "manim_executions": row.get("manim_executions") or 1}
    shared = {"report": doc["report"], "audit_sec": doc.get("audit_sec", 0.0), "engine": doc.get("engine"),
              "witness_plan": doc.get("witness_plan")}
    if failure is not None:
        where = failure.get("where")
        scenes = doc.get("audited_scenes") or []
        shared["scene_errors"] = [{"scene": scenes[0] if where == "render" and scenes else None, "where": where,
                                   "error": str(failure.get("error", ""))}]
    return {"onepass": "shared", "onepass_reasons": [], "manim_executions": row.get("manim_executions") or 1,
            "_onepass_audit": shared}


def _executions(row: dict) -> int:
    return row.get("manim_executions") or 1


def _failure_reasons(doc: dict | None, watch: Observer) -> list[str]:
    """Why a failed one-pass render was not kept (after ``render_failed``)."""
    if doc is None:
        return ["no_side_file" if watch.rejected in (None, "missing") else f"side_file_{watch.rejected}"]
    failure = doc.get("failure")
    out = list(doc.get("reasons") or [])
    if not isinstance(failure, dict):
        out.append("no_exception_examined")
    elif not failure.get("printed_as_plain"):
        out.append(f"failure:{failure.get('why')}")
    return out


def render_and_hand_off(sample_id: str, script: str, out_dir, cfg, profile, runner, audit_cfg: dict | None,
                        audit_dir: str | None, separate_audit: Callable[[str, str], dict] | None = None,
                        witness: Callable[[dict, dict | None], dict] | None = None) -> dict:
    """The render actor's call: render the script and, with one-pass on (``audit_cfg``, an
    ``AuditConfig.to_dict()``; None = off), leave the sample's audit row for the audit stage in ``audit_dir`` --
    the shared report, or, for a sample the render could not audit, ``separate_audit(sample_id, script)``'s row
    right here (no stage barrier around the few separate audits; a failure there costs nothing but the early
    row: the audit stage audits the sample itself). Returns the exec row with ``onepass``, ``onepass_reasons``
    (JSON text, as the store keeps it) and ``manim_executions``. A render that timed out where no audit of it can
    pass (``audit/stage.py`` ``skips_audit``: a Spatial pass needs Exec success) gets no separate audit: the audit
    stage records it as skipped (``render_timed_out``) without executing the script. ``witness(exec row, plan)``:
    the video witness's row fields (video/witness.py) put on the left row; None leaves the row without them (the
    head start's, checked by an actor afterwards: :func:`witness_left_row`)."""
    from prism_fast.audit.stage import skips_audit

    # a separate audit right after the render takes the render's TeX compiles along (execute/texcache.py own_svgs)
    with (texcache.own_svgs() if separate_audit is not None and cfg.tex_cache_dir else contextlib.nullcontext()):
        if audit_cfg is None:  # audit.one_pass=off (or no audit): the old two-execution behaviour
            row = render_one(sample_id, script, out_dir, cfg, profile, runner=runner)
            row.update(onepass="off", onepass_reasons=["one_pass:off"],
                       manim_executions=row.get("manim_executions") or int(executed(row)))
        else:
            row = render_with_onepass(sample_id, script, out_dir, cfg, profile, None, runner, audit_cfg)
        shared = row.pop("_onepass_audit", None)
        if shared is not None:  # the audit stage picks this row up instead of executing the script again
            if witness is not None:
                shared["witness_fields"] = witness(row, shared.get("witness_plan"))
            store_shared_audit(sample_id, script, shared, audit_dir, audit_cfg)
        elif skips_audit(row, profile):  # a render that timed out, where no audit of it can pass: none is run (the
            pass  # audit stage records its skipped row, render_timed_out, from this exec row)
        elif separate_audit is not None:  # not shared: the separate audit, now, in the caller's process
            try:
                left = separate_audit(sample_id, script)
                if witness is not None:
                    apply_to_row(left, witness(row, read_plan(Path(audit_dir) / "audits" / sample_id)))
                store_separate_audit(sample_id, script, left, audit_dir, audit_cfg)
            except Exception:  # noqa: BLE001 - never costs the exec row: the audit stage audits it instead
                log.warning("early audit of %s failed; left to the audit stage", sample_id, exc_info=True)
    if isinstance(row.get("onepass_reasons"), list):
        row["onepass_reasons"] = json.dumps(row["onepass_reasons"])
    return row


def witness_left_row(sample_id: str, exec_row: dict, audit_dir: str, witness: Callable[[dict, dict | None], dict]) \
        -> bool:
    """The video witness on a row a render left without it (the head start renders in the driver, which decodes no
    script's output): True when the row was there and now has its fields."""
    from prism_fast.audit.onepass_store import update_pending

    plan = read_plan(Path(audit_dir) / "audits" / sample_id)
    return update_pending(sample_id, audit_dir, lambda row: apply_to_row(row, witness(exec_row, plan)))
