"""The stage table of ``prism-fast eval``: each stage's jobs, its rows without a worker, its Ray actor and its
row recipes, in funnel order. The logic lives in the stage packages (``execute/stage.py``, ``audit/stage.py``,
``metrics/stage.py``, ``metrics/padvc_run.py``); this module only wires it to Ray and the store."""

from __future__ import annotations

import logging
from dataclasses import replace

from prism_fast.pipeline.options import EvalOptions, model_output_dir
from prism_fast.pipeline.stages import Job, Stage, StageRun

log = logging.getLogger(__name__)


def _cpus() -> int:
    import ray

    return int(ray.cluster_resources().get("CPU", 1))


def _gpu_share(opts: EvalOptions, n: int) -> dict:
    """Ray options of a video-metrics actor: a GPU fraction when metrics.device is CUDA and the cluster has GPUs."""
    import ray

    gpus = ray.cluster_resources().get("GPU", 0)
    use_gpu = opts.metrics_device.startswith("cuda") and gpus > 0
    return {"num_gpus": min(1.0, gpus / max(n, 1))} if use_gpu else {}


def _script_jobs(run: StageRun):
    return (Job(i.language, i.id, (i.script,)) for i in run.inputs)


def _no_script(run: StageRun, jobs: list[Job]) -> tuple[list[Job], list[Job]]:
    missing = {i.id for i in run.inputs if i.script is None}
    return [j for j in jobs if j.id in missing], [j for j in jobs if j.id not in missing]


# -- Exec ---------------------------------------------------------------------------------------------------------
def _exec_rows(run: StageRun, jobs: list[Job]):
    from prism_fast.execute.stage import delete_orphan_videos, no_script_row

    status = {i.id: (i.clean_status, i.detail) for i in run.inputs}
    empty, jobs = _no_script(run, jobs)
    delete_orphan_videos(model_output_dir(run.opts), (j.id for j in jobs))  # render_one would trust them (Q-FUNNEL-2)
    return [no_script_row(j.lang, j.id, *status[j.id]) for j in empty], scheduled(run.opts, jobs)


def scheduled(opts: EvalOptions, jobs: list[Job]) -> list[Job]:
    """The order renders (and separate audits) are handed out: ``execute.schedule=longest_first`` puts the
    expected-longest first (execute/cost.py), so the end of a run keeps every worker busy; ``input`` keeps the
    dataset order. Only the order changes, never a row."""
    from prism_fast.execute.cost import expected_render_cost, longest_first

    if opts.execute.schedule != "longest_first":
        return list(jobs)
    return longest_first(jobs, lambda j: expected_render_cost(j.args[0] if j.args else None))


def onepass_args(opts: EvalOptions) -> tuple:
    """(audit settings, audit work dir, audit cache dir) for the render actors when the audit may share the
    render's execution (``audit.one_pass=auto``, audit/onepass.py), else (None, None, None)."""
    if not opts.audit or opts.audit_cfg.one_pass != "auto":
        return None, None, None
    return opts.audit_cfg.to_dict(), str(model_output_dir(opts) / "audit"), opts.audit_cache_dir


def render_worker_factory(run: StageRun, local: bool = False):
    """``make()`` of the Exec stage's render worker: a ``RenderActor`` (``local``: the same worker in this process,
    the head start's, pipeline/headstart.py, without the TD pre-decode). Reads ``opts.render`` when called (the
    driver's LaTeX format)."""
    from prism_fast.pipeline.actors import RenderActor, RenderWorker

    opts = run.opts
    model_dir = str(model_output_dir(opts))  # render_one writes <model_dir>/videos/<id>.mp4
    # a video is a script's output: the driver never decodes one (its TD rows are built "without decoding",
    # _td_rows), so the head start's worker leaves the decode to the TD stage's actors (same row, td_store.py)
    td_pre = None if local else td_pre_settings(opts)
    make = RenderWorker if local else RenderActor.remote
    return lambda: make(opts.render, opts.profile, model_dir, opts.execute.prefork, *onepass_args(opts), td_pre=td_pre,
                        decodes=not local)


def _exec_actor(run: StageRun):
    return render_worker_factory(run), "render", int(run.opts.execute.workers or _cpus())


def td_pre_settings(opts: EvalOptions) -> dict | None:
    """The TD settings the render workers decode their videos with for the TD stage (metrics/td_store.py): on a
    CPU run with TD on; None on a GPU run (the stage's GPU actors decode there) or with TD off."""
    if not opts.td or opts.metrics_device != "cpu":
        return None
    from prism_fast.metrics.td_store import td_settings

    return td_settings(opts.td_tau, opts.profile, opts.decoder, opts.metrics_device)


def _exec_lost(job: Job, exc: BaseException) -> dict:
    from prism_fast.execute.stage import lost_fields
    from prism_fast.pipeline.streaming import WorkerKilledBySample

    return lost_fields(exc, isinstance(exc, WorkerKilledBySample))


def _exec_finish(row: dict) -> dict:
    from prism_fast.execute.stage import finish_row

    return finish_row(row)


# -- Spatial audit (Q-FUNNEL-1: reference audits failed renders too) ------------------------------------------------
def _audit_rows(run: StageRun, jobs: list[Job]):
    from prism_fast.audit.stage import merge_left_rows, no_script_row, render_timed_out_row

    opts = run.opts
    empty, jobs = _no_script(run, jobs)
    skipped, jobs = _timed_out(run, jobs)
    unwitnessed: set = set()
    merged = merge_left_rows(((j.lang, j.id, j.args[0]) for j in jobs), opts.audit_cfg, opts.profile,
                             str(model_output_dir(opts) / "audit"), opts.audit_cache_dir, opts.retry_failed,
                             unwitnessed)
    done = {r["id"] for r in merged}
    # the audit actors check each audit against the render's video (video/witness.py): its path and scene
    exec_rows = run.store.rows_by_key("exec", opts.model_name)
    todo = []
    for j in jobs:
        if j.id in done:
            continue
        ex = exec_rows.get((j.lang, j.id)) or {}
        video = ex.get("video_path") if ex.get("success") else None
        todo.append(Job(j.lang, j.id, (*j.args, video, ex.get("scene_class"), j.id in unwitnessed)))
    return ([no_script_row(j.lang, j.id) for j in empty] + [render_timed_out_row(j.lang, j.id, ex) for j, ex in skipped]
            + merged, scheduled(opts, todo))


def _timed_out(run: StageRun, jobs: list[Job]) -> tuple[list[tuple[Job, dict]], list[Job]]:
    """(jobs whose current Exec row timed out where that leaves them unaudited, audit/stage.py ``skips_audit``,
    with that row; the other jobs). A row made with other settings or another script than this run's is not
    trusted for it (the sample is audited)."""
    from prism_fast.audit.stage import skips_audit, spatial_requires_exec

    if not spatial_requires_exec(run.opts.profile):
        return [], jobs
    exec_rows = run.store.rows_by_key("exec", run.opts.model_name)
    expected = run.expected("exec")
    skipped, rest = [], []
    for job in jobs:
        ex = exec_rows.get((job.lang, job.id))
        current = ex is not None and (expected is None or (ex.get("settings_sha256"), ex.get("inputs_sha256"))
                                      == expected.get((job.lang, job.id)))
        if current and skips_audit(ex, run.opts.profile):
            skipped.append((job, ex))
        else:
            rest.append(job)
    return skipped, rest


def _audit_actor(run: StageRun):
    from prism_fast.pipeline.actors import AuditActor

    opts = run.opts
    work_dir = str(model_output_dir(opts) / "audit")
    audit_cfg = opts.audit_cfg
    if audit_cfg.pictures and not audit_cfg.pictures_root:  # failing samples' pictures where `inspect` puts them
        audit_cfg = replace(audit_cfg, pictures_root=str(opts.run_dir / "inspect"))
    return (lambda: AuditActor.remote(audit_cfg, opts.profile, work_dir, opts.audit_cache_dir,
                                      opts.render.tex_cache_dir, opts.render.tex_format)), "audit", _cpus()


def _audit_lost(job: Job, exc: BaseException) -> dict:
    from prism_fast.audit.stage import lost_fields

    return lost_fields()


def _audit_finish(row: dict) -> dict:
    from prism_fast.audit.stage import finish_row

    return finish_row(row)


# -- PADVC (padvc.md §2, §10): gate and PVD in the driver, video + OCR on actors ------------------------------------
def _padvc_rows(run: StageRun, jobs: list[Job]):
    from prism_fast.metrics.padvc_run import plan_padvc
    from prism_fast.metrics.pvd import PvdCalculator

    opts, store = run.opts, run.store
    rows, work = plan_padvc(((j.lang, j.id) for j in jobs), {t.id: t.instruction for t in run.tasks},
                            store.rows_by_key("exec", opts.model_name), store.rows_by_key("audit", opts.model_name),
                            lambda: PvdCalculator(opts.padvc.pvd_config(opts.metrics_device), profile=opts.profile),
                            [i.language for i in run.inputs], opts.profile)
    return rows, [Job(lang, sid, (lang, base, pvd)) for lang, sid, base, pvd in work]


def _padvc_actor(run: StageRun):
    from prism_fast.metrics.padvc_run import ocr_cache_dir
    from prism_fast.pipeline.actors import PadvcActor

    opts = run.opts
    s, params = opts.padvc, opts.padvc_params
    ocr_dir = ocr_cache_dir(s.ocr_cache_dir, opts.run_dir)
    frames_dir = s.frame_cache(opts.runs_root)
    n = int(s.workers or _cpus())
    actor_opts = _gpu_share(opts, n)
    return (lambda: PadvcActor.options(**actor_opts).remote(s, opts.profile, params, ocr_dir, frames_dir, opts.decoder,
                                                            opts.metrics_device), "padvc", n)


def _padvc_lost(job: Job, exc: BaseException) -> dict:
    from prism_fast.metrics.padvc_run import padvc_lost_row

    return padvc_lost_row(job.args[1], exc)


def _padvc_finish(row: dict) -> dict:
    from prism_fast.schema import normalize_status

    return normalize_status(row, "padvc_status")


# -- TD (td.md §3) ------------------------------------------------------------------------------------------------
def _td_jobs(run: StageRun):
    from prism_fast.metrics.stage import td_base_row

    exec_rows = run.store.rows_by_key("exec", run.opts.model_name)
    audit_rows = run.store.rows_by_key("audit", run.opts.model_name)
    return [Job(i.language, i.id, (i.language, td_base_row(i.id, exec_rows.get((i.language, i.id), {}),
                                                          audit_rows.get((i.language, i.id), {}))))
            for i in run.inputs]


def _td_rows(run: StageRun, jobs: list[Job]):
    """Rows the driver builds without decoding: a failed render's (no video: nothing to decode) and a video the
    render worker already decoded under this run's TD settings (metrics/td_store.py) -- the same TDRaw and the
    same row-building calls as the stage's actor (``VideoMetricsActor.td``); every other job goes to the actors.
    Any exception here (say, params fitted under another profile) sends the job to the actors too, so its error
    row is the one they make."""
    from prism_fast.metrics.stage import td_finish_row
    from prism_fast.metrics.td_rows import build_td_row, no_video
    from prism_fast.metrics.td_store import load_td_raw, td_settings

    opts = run.opts
    model_dir = model_output_dir(opts)
    settings = td_settings(opts.td_tau, opts.profile, opts.decoder, opts.metrics_device)
    rows, rest = [], []
    for job in jobs:
        lang, base = job.args
        try:
            td = no_video(base)
            if td is None and opts.metrics_device == "cpu":
                td = load_td_raw(model_dir, job.id, base["video_path"], settings)
            if td is None:
                rest.append(job)
                continue
            from prism_fast.metrics.params import check_params_for_profile

            params = opts.td_params[lang]
            check_params_for_profile(params, opts.profile)
            row = build_td_row(base, td, params, profile=opts.profile)
            row.update(pixel_threshold=opts.td_tau, device=opts.metrics_device)
            rows.append({**td_finish_row(row), "id": job.id, "lang": lang})
        except Exception:  # noqa: BLE001 - the actor computes it and makes its row (or its error row)
            rest.append(job)
    if rest:
        log.info("TD: %d row(s) without decoding here, %d video(s) left to the stage's actors", len(rows), len(rest))
    return rows, rest


def _td_actor(run: StageRun):
    from prism_fast.pipeline.actors import VideoMetricsActor

    opts = run.opts
    n = _cpus()
    actor_opts = _gpu_share(opts, n)
    return (lambda: VideoMetricsActor.options(**actor_opts).remote(opts.profile, opts.td_params, opts.td_tau,
                                                                   opts.decoder, opts.metrics_device), "td", n)


def _td_lost(job: Job, exc: BaseException) -> dict:
    from prism_fast.metrics.stage import td_lost_fields

    return td_lost_fields(job.args[1])


def _td_finish(row: dict) -> dict:
    from prism_fast.metrics.stage import td_finish_row

    return td_finish_row(row)


# -- TextExpand (static, from the code's AST: cheap, so in the driver) -----------------------------------------------
def _text_expand_row(run: StageRun, job: Job) -> dict:
    from prism_fast.metrics.stage import text_expand_stage_row

    return text_expand_stage_row(run.task(job.id), job.lang, job.args[0], run.opts.profile, run.opts.model_name)


STAGES: tuple[Stage, ...] = (
    Stage("exec", lambda o: True, _script_jobs, _exec_rows, _exec_actor, lost=_exec_lost, finish=_exec_finish,
          head_follow_up="head_start_video"),  # (the head start's videos: witness and TD decode by the render actors)
    Stage("audit", lambda o: o.audit, _script_jobs, _audit_rows, _audit_actor, lost=_audit_lost, finish=_audit_finish),
    Stage("padvc", lambda o: o.padvc.enabled, lambda run: (Job(i.language, i.id, ()) for i in run.inputs),
          _padvc_rows, _padvc_actor, lost=_padvc_lost, finish=_padvc_finish),
    Stage("td", lambda o: o.td, _td_jobs, _td_rows, _td_actor, lost=_td_lost, finish=_td_finish),
    Stage("text_expand", lambda o: o.text_expand, _script_jobs, row=_text_expand_row, label="textx"),
)
