"""Thin Ray actors around the stage cores: declare resources, load heavy things once, delegate.

Failure isolation (docs/security.md): Ray neither restarts these actors nor retries their calls; the driver's
``stream_map`` replaces a dead actor with a fresh one and re-queues the one sample that was running on it, and
a sample that killed two workers becomes an error row (``worker_killed_by_sample``). Inside an actor, every
call is :func:`contained`: whatever it raises, ``SystemExit`` and ``KeyboardInterrupt`` included, becomes that
sample's error row and never ends the actor. Containment of hostile scripts is the sandbox's job
(process-group kill inside the core), not Ray's.
"""

from __future__ import annotations

import functools
import logging

import ray

from prism_fast.config_schema import PadvcSchema
from prism_fast.profile import Profile

log = logging.getLogger(__name__)

# No Ray-side restarts or retries: a restart budget shared by all samples of an actor let one hostile sample
# exhaust it and turn the others into lost rows (pipeline/streaming.py does the replacing instead).
RESTARTS = dict(max_restarts=0, max_task_retries=0)


def contained(fallback):
    """Decorate an actor method ``(self, sample_id, *args) -> row``: any exception of the call, BaseException
    included, is logged and returned as this sample's error row ``{status, error_kind="worker_exception",
    error_detail, **fallback(*args)}`` (``status`` from the fallback, else "error")."""

    def decorate(method):
        @functools.wraps(method)
        def call(self, sample_id, *args):
            try:
                return method(self, sample_id, *args)
            except BaseException as exc:  # noqa: BLE001 - SystemExit/KeyboardInterrupt must not end the actor
                detail = f"{type(exc).__name__}: {exc}"[:4000]
                try:
                    log.warning("%s(%s) raised %s; recorded as its error row", method.__name__, sample_id, detail,
                                exc_info=not isinstance(exc, (SystemExit, KeyboardInterrupt)))
                    extra = fallback(detail, *args)
                except BaseException:  # noqa: BLE001 - the row must still come back
                    extra = {}
                return {"status": "error", **extra, "error_kind": "worker_exception", "error_detail": detail}

        return call

    return decorate


def _render_fallback(detail: str, script: str) -> dict:
    return {"status": "failed", "success": False, "skipped": False, "error": detail}


def _audit_fallback(detail: str, script: str, *_video) -> dict:
    return {"status": "audit_failed", "audit_success": 0, "segment_count": 0, "visual_structure_pass": 0,
            "visual_structure_rate": 0.0, "error_msg": detail}


def _td_fallback(detail: str, lang: str, base_row: dict) -> dict:
    return {"render_success": base_row.get("render_success")}


class RenderWorker:
    """Renders a script in the sandbox and returns the Exec row (with its error taxonomy): the body of
    :class:`RenderActor`, and of the driver's head start while Ray starts (pipeline/headstart.py).

    With ``prefork`` the worker keeps a warm manim process that forks one contained child per sample
    (``execute.worker``; rows and videos identical to the plain CLI path, tested), saving the interpreter and
    manim import of every sample.
    """

    def __init__(self, render_cfg, profile: Profile, out_dir: str, prefork: bool = True, onepass: dict | None = None,
                 audit_dir: str | None = None, audit_cache_dir: str | None = None, td_pre: dict | None = None,
                 decodes: bool = True):
        self.render_cfg, self.profile, self.out_dir = render_cfg, profile, out_dir
        # whether this worker may decode a script's video (the driver's head-start worker may not): the video
        # witness of the audit rows it leaves runs here, else in an actor's head_start_video afterwards
        self.decodes = decodes
        # TD settings (metrics/td_store.td_settings) when this worker decodes its own videos for the TD stage
        # (a CPU run with TD on), else None
        self.td_pre = td_pre
        self.onepass, self.audit_dir = onepass, audit_dir  # one-pass audit (audit/onepass.py); None = off
        # With one-pass on, a sample the render could not audit is audited right here, after its render: the
        # audit stage then finds its row (no stage barrier around the few separate audits, no idle cores).
        self.auditor = None
        if onepass is not None and audit_dir is not None and not onepass.get("pictures"):
            from prism_fast.audit.config import AuditConfig

            self.auditor = _Auditor(AuditConfig.from_dict(onepass), profile, audit_dir, audit_cache_dir,
                                    render_cfg.tex_cache_dir, render_cfg.tex_format)
        self.worker = None
        if prefork:
            import atexit

            from prism_fast.audit.onepass import PRELOAD
            from prism_fast.execute.render import prefork_worker

            self.worker = prefork_worker(render_cfg, preload=PRELOAD if onepass is not None else ())
            atexit.register(self.close)  # a worker process told to exit (ray.shutdown) takes its manim server along

    @contained(_render_fallback)
    def render(self, sample_id: str, script: str) -> dict:
        from prism_fast.audit.onepass import render_and_hand_off
        from prism_fast.execute.determinism import exec_fields as determinism_fields
        from prism_fast.execute.taxonomy import taxonomy_fields

        from prism_fast.execute.stage import delete_orphan_videos

        # the stage deleted every pending sample's video before it started, so a video here was left by a render
        # worker that died after writing it and before its row came back (it also decodes the video for TD after
        # writing it): this call is the retry, and render_one would trust the video (Q-FUNNEL-2, a "skipped" row)
        delete_orphan_videos(self.out_dir, [sample_id])
        runner = self.worker.run if self.worker is not None else None
        # the render, with the one-pass audit's observer and hand-off when on (audit/onepass.py); a sample the
        # render could not audit is audited right here by the same core call as the audit stage's
        row = render_and_hand_off(sample_id, script, self.out_dir, self.render_cfg, self.profile, runner,
                                  self.onepass, self.audit_dir,
                                  self.auditor.audit if self.auditor is not None else None,
                                  witness=self._witness_of(sample_id) if self.decodes else None)
        td_done = row.pop("_td_done", False)
        # Classification needs only the script and the render row (execution.md §8).
        row.update(taxonomy_fields(code=script, render_row=row, generation_status="success", script_id=sample_id))
        # nondeterminism marks of the script's text (and the double render of execute.determinism_check), here in
        # the trusted parent, never in the script's process (execute/determinism.py)
        row.update(determinism_fields(sample_id, script, row, self.render_cfg, self.profile, runner))
        if self.td_pre is not None and not td_done:
            self._td_pre(sample_id, row)
        return row

    def _witness_of(self, sample_id: str):
        """``witness(exec row, plan)`` for render_and_hand_off: the video witness (video/witness.py) reading its
        frames from this worker's TD decode where there is one (one decode for both)."""
        def witness(row: dict, plan: dict | None) -> dict:
            from prism_fast.video.witness import check_video

            video = row.get("video_path") if row.get("success") else None
            decode = None
            # the TD decode's frames only where they are OpenCV's, the frames every other path reads (a CPU TD run
            # decodes with "auto" = OpenCV): the witness's figures do not depend on where it ran
            if self.td_pre is not None and video and self.td_pre["decoder"] in ("auto", "opencv") \
                    and str(self.td_pre["device"]).startswith("cpu"):
                def decode(indices):
                    keep = dict.fromkeys(indices)
                    row["_td_done"] = self._td_pre(sample_id, row, keep)
                    got = {i: f for i, f in keep.items() if f is not None}
                    if len(got) < len(keep):  # the TD decode failed or stopped early: the witness reads them itself
                        from prism_fast.video.scan import read_frames_at

                        got.update(read_frames_at(video, [i for i in keep if i not in got]))
                    return got
            return check_video(plan, row.get("scene_class"), video, decode=decode)
        return witness

    def head_start_video(self, sample_id: str, row: dict) -> bool:
        """What the driver leaves undone for a video the head start rendered (the driver never decodes a script's
        output): the video witness of the audit row it left (audit/onepass.py ``witness_left_row``) and the TD
        stage's decode (:meth:`_td_pre`). The Exec stage hands those over at its end, while the actors are still
        up. True when done (a failure only means the audit / TD stage does it)."""
        if not isinstance(row, dict):
            return False
        done = True
        if self.audit_dir is not None:
            from prism_fast.audit.onepass import witness_left_row

            try:
                witness_left_row(sample_id, row, self.audit_dir, self._witness_of(sample_id))
            except BaseException as exc:  # noqa: BLE001 - the audit stage audits it instead; never the actor's end
                log.warning("video witness of %s (head start) not run (%s)", sample_id, type(exc).__name__)
                done = False
        if self.td_pre is not None and not row.pop("_td_done", False):
            try:
                done = self._td_pre(sample_id, row) and done
            except BaseException as exc:  # noqa: BLE001 - the TD stage decodes it instead; never the actor's end
                log.warning("TD of %s (head start) not computed (%s)", sample_id, type(exc).__name__)
                return False
        return done

    def _td_pre(self, sample_id: str, row: dict, keep: dict | None = None) -> bool:
        """TD_raw of the video just rendered, left for the TD stage (metrics/td_store.py); ``keep``: frames to keep
        from the same decode (the video witness's). Whatever goes wrong here only means the stage decodes the video
        itself, so it never touches the render's row. True when stored."""
        from prism_fast.metrics import td_store

        try:
            td_store.forget(self.out_dir, sample_id)
            if row.get("success") and row.get("video_path"):
                td_store.store_td_raw(self.out_dir, sample_id, row["video_path"], self.td_pre, self.profile, keep=keep)
                return True
        except Exception as exc:  # noqa: BLE001 - the TD stage's actor decodes it instead (same call, same row)
            log.warning("TD of %s not computed after its render (%s: %s); the TD stage decodes the video",
                        sample_id, type(exc).__name__, exc)
        return False

    def ready(self) -> bool:
        """Answers once the constructor has returned (the prefork server is up): the head start's hand-off."""
        return True

    def render_early(self) -> bool:
        """The head start's lane, before the driver's LaTeX format is built: render without the format (TeX
        compiles in full: the same SVGs, videos and results, execute/texformat.py) rather than wait for it
        (``RenderConfig.tex_format_deferred``: rows and separate audits say ``tex_format=not_ready``) until
        :meth:`use_render_cfg` hands over the actors' configuration. False where the format is off anyway."""
        if not (self.render_cfg.tex_format and self.render_cfg.tex_cache_dir):
            return False
        from dataclasses import replace

        self.use_render_cfg(replace(self.render_cfg, tex_format_deferred=True))
        return True

    def use_render_cfg(self, render_cfg) -> None:
        """Render (and audit separately) with ``render_cfg`` from the next sample on."""
        self.render_cfg = render_cfg
        if self.auditor is not None:  # a separate audit reads the same TeX cache, with the format or without
            self.auditor.tex_format = render_cfg.tex_format
            self.auditor.tex_format_deferred = render_cfg.tex_format_deferred

    def close(self) -> None:
        if self.worker is not None:
            worker, self.worker = self.worker, None
            worker.close()


@ray.remote(num_cpus=1, **RESTARTS)
class RenderActor(RenderWorker):
    """One per CPU: :class:`RenderWorker` in its own Ray worker process."""


class _Auditor:
    """The audit core behind the audit cache (audit/cache.py); used by AuditActor and by RenderActor."""

    def __init__(self, audit_cfg, profile: Profile, work_dir: str, cache_dir: str | None = None,
                 tex_cache_dir: str | None = None, tex_format: bool = True):
        self.audit_cfg, self.profile, self.work_dir = audit_cfg, profile, work_dir
        # the render's verified TeX cache (and LaTeX format), read by the audit child as by a render
        self.tex_cache_dir, self.tex_format = tex_cache_dir, tex_format
        self.tex_format_deferred = False  # the head start's lane before the driver's format (RenderWorker.render_early)
        self.cache = self.env = None
        if cache_dir:  # audit cache (audit/cache.py): a sweep over metric settings re-runs no audit
            from prism_fast.audit.cache import AuditCache
            from prism_fast.execute.fingerprint import fingerprint_hash
            from prism_fast.execute.render import resolve_bin

            self.cache, self.env = AuditCache(cache_dir), fingerprint_hash(resolve_bin("manim"))

    def audit(self, sample_id: str, script: str) -> dict:
        from pathlib import Path

        from prism_fast.audit.runner import audit_one

        report_path = Path(self.work_dir) / "audits" / sample_id / "audit_report.json"
        key = row = None
        if self.cache is not None:
            from prism_fast.audit.cache import audit_cache_key

            key = audit_cache_key(script_text=script, sample_id=sample_id, audit_cfg=self.audit_cfg,
                                  profile=self.profile, env_fingerprint=self.env)
            if not getattr(self.audit_cfg, "pictures", False):  # pictures need the audit to run (a hit draws none)
                row = self.cache.get(key, sample_id, Path(self.work_dir), script)
        if row is None:
            row = audit_one(sample_id, script, self.work_dir, self.audit_cfg, self.profile,
                            tex_cache_dir=self.tex_cache_dir, tex_format=self.tex_format,
                            tex_format_deferred=self.tex_format_deferred)
            row["audit_cache_hit"] = False
            if self.cache is not None:
                self.cache.put(key, row, report_path)
        row["report_path"] = str(report_path)
        return row


@ray.remote(num_cpus=1, **RESTARTS)
class AuditActor:
    """One per CPU: audits a script in its own process (spatial audit, fast path) and returns the row."""

    def __init__(self, audit_cfg, profile: Profile, work_dir: str, cache_dir: str | None = None,
                 tex_cache_dir: str | None = None, tex_format: bool = True):
        self.core = _Auditor(audit_cfg, profile, work_dir, cache_dir, tex_cache_dir, tex_format)

    @contained(_audit_fallback)
    def audit(self, sample_id: str, script: str, video_path: str | None = None, scene_class: str | None = None,
              left: bool = False) -> dict:
        """The audit row, with the video witness (video/witness.py) against the render's video ``video_path``
        (None: the render made none) of the scene it rendered. ``left``: a render left this sample's row without the
        witness (the head start's): that row, witnessed here, nothing executed."""
        from pathlib import Path

        from prism_fast.audit.stage import LEFT_PASS, left_audit_row
        from prism_fast.audit.witness import apply_to_row, read_plan
        from prism_fast.video.witness import check_video

        row = left_audit_row(sample_id, script, self.core.audit_cfg, self.core.work_dir) if left else None
        if row is not None:
            left_pass = row.get("audit_pass") or "separate"
            if left_pass == "shared" and self.core.cache is not None:
                from prism_fast.audit.onepass_store import cache_shared_audit

                # into the audit cache like every shared row the stage merges (audit/stage.py merge_left_rows)
                row = cache_shared_audit(row, sample_id, script, self.core.audit_cfg, self.core.profile,
                                         str(self.core.cache.root), self.core.work_dir)
            row[LEFT_PASS] = left_pass
        else:
            row = self.core.audit(sample_id, script)
        plan = read_plan(Path(self.core.work_dir) / "audits" / sample_id)
        return apply_to_row(row, check_video(plan, scene_class, video_path))


@ray.remote(num_cpus=1, **RESTARTS)
class VideoMetricsActor:
    """TD (and later PADVC) over one rendered video. Asks for a GPU fraction when the cluster has GPUs
    (see ``run.py``); decoding stays on CPU for reference numbers (spec D-1)."""

    def __init__(self, profile: Profile, params_by_lang: dict, tau: int, decoder: str, device: str):
        import torch

        if device.startswith("cuda") and not torch.cuda.is_available():
            raise RuntimeError(f"metrics.device={device} but this worker has no CUDA device")
        self.profile, self.params_by_lang = profile, params_by_lang
        self.tau, self.decoder, self.device = tau, decoder, device

    @contained(_td_fallback)
    def td(self, sample_id: str, lang: str, base_row: dict) -> dict:
        from prism_fast.metrics.td import score_td_row

        row = score_td_row(base_row, self.params_by_lang[lang], profile=self.profile, pixel_threshold=self.tau,
                           decoder=self.decoder, device=self.device)
        row.update(pixel_threshold=self.tau, device=self.device)
        return row


@ray.remote(num_cpus=1, **RESTARTS)
class PadvcActor:
    """PADVC over one gated video (``metrics.padvc_run.PadvcWorker``: OCR engine loaded once per actor)."""

    def __init__(self, settings: PadvcSchema, profile: Profile, params_by_lang: dict, ocr_cache_dir: str | None,
                 frame_cache_dir: str | None, decoder: str, device: str):
        from prism_fast.metrics.padvc_run import PadvcWorker

        self.worker = PadvcWorker(settings, profile, ocr_cache_dir, frame_cache_dir, decoder, device)
        self.params_by_lang = params_by_lang

    def padvc(self, sample_id: str, lang: str, base: dict, pvd_fields: dict) -> dict:
        return self.worker.score(base, pvd_fields, self.params_by_lang[lang])
