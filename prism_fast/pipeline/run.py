"""``prism-fast eval``: dataset + predictions → the stages of ``pipeline/eval_stages.py`` → rows in the store + a
summary.

The driver owns the results store (single writer); Ray actors return rows. Every stage skips keys already in
the store (resume after a crash), except failed rows when ``retry_failed`` is set.
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import time
from concurrent.futures import Future
from dataclasses import replace
from pathlib import Path

from prism_fast.audit.stage import spatial_requires_exec
from prism_fast.dataset.bundled import bundled_dataset_path
from prism_fast.dataset.loader import Task, load_dataset, read_id_list, select_tasks
from prism_fast.dataset.split import stratified_subset
from prism_fast.execute.inputs import load_inputs
from prism_fast.pipeline.options import EvalOptions, model_output_dir, options_from_config
from prism_fast.pipeline.stages import Job, StageRun, pending_jobs, run_stage
from prism_fast.store import ResultsStore

log = logging.getLogger("prism_fast")


def run_eval_from_config(cfg) -> dict:
    from prism_fast.pipeline.sweep import job_run_dir

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    opts = options_from_config(cfg)
    opts.run_dir = job_run_dir(opts.run_dir)  # multirun: one run directory per job (pipeline/sweep.py)
    return run_eval(opts)


# -- tasks -------------------------------------------------------------------------------------------------
def select_run_tasks(opts: EvalOptions, run_dir: Path) -> list[Task]:
    d = opts.dataset
    path = Path(d.path) if d.path else bundled_dataset_path()
    loaded = load_dataset(path, strict=d.strict, fmt=d.format)
    if loaded.issues:
        run_dir.mkdir(parents=True, exist_ok=True)
        issues_file = run_dir / "dataset_issues.jsonl"
        with open(issues_file, "w", encoding="utf-8") as fh:
            for i in loaded.issues:
                fh.write(json.dumps(i.__dict__, ensure_ascii=False) + "\n")
        log.warning("%d invalid dataset record(s) skipped; listed in %s", len(loaded.issues), issues_file)
    ids = d.ids
    if isinstance(ids, str):
        ids = read_id_list(ids)
    tasks = loaded.tasks
    if d.subset.enabled:
        tasks = stratified_subset(tasks, d.subset.fraction, d.subset.seed)
    return select_tasks(tasks, ids=ids, languages=opts.languages, limit=d.limit)


def _write_task_rows(opts: EvalOptions, run: StageRun) -> None:
    """The ``tasks`` rows of the selection not stored yet (each script written beside them)."""
    from prism_fast.execute.stage import task_row

    scripts_dir = model_output_dir(opts) / "scripts"
    scripts_dir.mkdir(parents=True, exist_ok=True)
    todo = {(j.lang, j.id) for j in pending_jobs(run.store, "tasks", opts.model_name,
                                                 (Job(t.language, t.id, ()) for t in run.tasks), False,
                                                 run.expected("tasks"))}
    rows = []
    for t, inp in zip(run.tasks, run.inputs):
        script_path = None
        if inp.script is not None:
            script_path = scripts_dir / f"{t.id}.py"
            script_path.write_text(inp.script, encoding="utf-8")
        row = task_row(opts.model_name, opts.profile.name, t, inp, script_path)
        if (row["lang"], row["id"]) in todo:
            rows.append({**row, **run.fps.tag("tasks", row["lang"], row["id"])})
    run.store.append("tasks", rows, invalid="error_row")


def _forget_stale_outputs(opts: EvalOptions, stale: dict) -> None:
    """Files a clean run would not have for rows being recomputed: the audit report of a stale audit row
    (Q-SPATIAL-19) and the per-video OCR cache of a sample whose video is re-rendered (Q-PADVC-7). Videos of
    pending samples are handled by the Exec stage."""
    if "audit" in stale:
        from prism_fast.audit.stage import forget_reports

        forget_reports(model_output_dir(opts) / "audit", (sid for _, sid in stale["audit"].keys))
    if "exec" in stale:
        # (imported only here: the PADVC module loads torch and the OCR stack, seconds of start-up for nothing)
        from prism_fast.metrics.padvc_run import forget_video_ocr, ocr_cache_dir

        forget_video_ocr(ocr_cache_dir(opts.padvc.ocr_cache_dir, opts.run_dir),
                         (sid for _, sid in stale["exec"].keys))


def _start_format_prebuild(opts: EvalOptions, stages) -> tuple | None:
    """The LaTeX format of the render workers (execute/texformat.py): the one an earlier run published under the
    TeX cache root when it verifies, else built and self-checked in a thread of this process while Ray starts
    (mostly waiting), instead of by each worker at its first sample, and published for later runs. Returns
    (future, a directory to remove at the end or None), or None where the Exec stage does not run with the format."""
    cfg = opts.render
    if not (cfg.tex_cache_dir and cfg.tex_format and opts.execute.prefork and any(s.name == "exec" for s in stages)):
        return None
    from concurrent.futures import ThreadPoolExecutor

    from prism_fast import integrity
    from prism_fast.execute import texformat

    root = Path(cfg.tex_cache_dir)
    try:
        key = integrity.load_or_create_key(integrity.default_key_dir(root))
    except Exception as exc:  # noqa: BLE001 - the workers say what is wrong with the cache's key themselves
        log.warning("tex cache: no integrity key (%s: %s); the LaTeX format is built, not kept", type(exc).__name__, exc)
        key = None
    info = texformat.published(root, key) if key is not None else None
    if info is not None:
        done: Future = Future()
        done.set_result((info, ""))
        return done, None
    tmp = root / "tmp"
    tmp.mkdir(parents=True, exist_ok=True)
    where = Path(tempfile.mkdtemp(prefix="format_", dir=str(tmp)))

    def build():
        info, why = texformat.build(where)
        if info is not None and key is not None:
            texformat.publish(info, root, key)  # the workers still take this run's own file (a later run's may differ)
        return info, why

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tex-format")
    future = pool.submit(build)
    pool.shutdown(wait=False)
    return future, where


def _with_prebuilt_format(render_cfg, prebuild: tuple):
    """The render workers' configuration with the driver's format (``RenderConfig.tex_format_prebuilt``); where it
    could not be built, ``render_cfg`` itself: each worker builds (and self-checks) its own and says so."""
    try:
        info, why = prebuild[0].result()
    except Exception as exc:  # noqa: BLE001 - the workers build their own
        info, why = None, f"{type(exc).__name__}: {exc}"
    if info is None:
        log.warning("tex cache: the driver could not build the LaTeX format (%s); each render worker tries itself",
                    why)
        return render_cfg
    from prism_fast.execute.fingerprint import fingerprint_hash
    from prism_fast.execute.render import resolve_bin

    env = fingerprint_hash(resolve_bin(render_cfg.manim_bin))  # a worker on another TeX install builds its own
    return replace(render_cfg, tex_format_prebuilt=(str(info.path.with_suffix(".fmt")), info.sha256, env))


def _render_config(opts: EvalOptions, prebuild: tuple | None) -> Future:
    """The render workers' configuration, known once the driver's format is built: a Future (the head start
    waits for it in its thread, the actors get it after ``ray.init``)."""
    if prebuild is None:
        done: Future = Future()
        done.set_result(opts.render)
        return done
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="render-config")
    future = pool.submit(_with_prebuilt_format, opts.render, prebuild)
    pool.shutdown(wait=False)
    return future


def _start_head_start(opts: EvalOptions, run: StageRun, stages, render_cfg: Future):
    """The Exec stage's jobs, and its head start (pipeline/headstart.py) rendering the back of them while Ray
    starts: ``(prepared, head)``, head None where it does not apply (off, a joined cluster, no prefork, no job)."""
    exec_stage = next((s for s in stages if s.name == "exec"), None)
    if exec_stage is None:
        return None, None
    from prism_fast.pipeline.stages import stage_jobs

    prepared = stage_jobs(exec_stage, run)
    if not (opts.execute.head_start and opts.execute.prefork and opts.ray_address in (None, "local") and prepared[1]):
        return prepared, None
    from prism_fast.execute import sandbox

    if sandbox.effective_level(opts.render.sandbox) not in ("namespaces", "bwrap"):
        # this process holds the run's secrets (secret_env.py) and is not a Ray worker: a script runs under it only
        # where its sandbox hides every process outside its own (PID namespace)
        log.info("execute.head_start: off at sandbox level %s (renders only in the Ray actors)",
                 sandbox.effective_level(opts.render.sandbox))
        return prepared, None
    from prism_fast.pipeline.eval_stages import render_worker_factory
    from prism_fast.pipeline.headstart import HeadStart, JobQueue

    queue = JobQueue((j.id, *j.args) for j in prepared[1])
    return prepared, HeadStart(render_worker_factory(run, local=True), "render", queue, render_cfg).start()


def _prestart_head_server(opts: EvalOptions) -> bool:
    """Launch the head start's prefork server now (execute/render.py ``prestart_prefork``) where the head start will
    run (the conditions of :func:`_start_head_start`): it imports manim on the other core while this process loads
    the dataset and checks the run, so the first render starts ~1 s sooner. Not taken (no job left, other
    settings), it is closed at the run's end."""
    from prism_fast.pipeline.eval_stages import STAGES, onepass_args

    if not (opts.execute.head_start and opts.execute.prefork and opts.ray_address in (None, "local")):
        return False
    if not any(s.name == "exec" and s.enabled(opts) for s in STAGES):
        return False
    from prism_fast.execute import sandbox
    from prism_fast.execute.render import prestart_prefork

    if sandbox.effective_level(opts.render.sandbox) not in ("namespaces", "bwrap"):
        return False
    from prism_fast.audit.onepass import PRELOAD

    return prestart_prefork(opts.render, PRELOAD if onepass_args(opts)[0] is not None else ())


def run_eval(opts: EvalOptions) -> dict:
    _prestart_head_server(opts)  # first: its manim import overlaps ours of Ray (any server not taken is closed below,
    # or by the driver's end)
    from prism_fast.execute.stage import generation_report
    from prism_fast.pipeline.eval_stages import STAGES
    from prism_fast.pipeline.lifecycle import record_invocation
    from prism_fast.pipeline.manifest import finish, write_manifest
    from prism_fast.pipeline.progress import StageProgress
    from prism_fast.pipeline.ray_runtime import ensure_ray
    from prism_fast.pipeline.settings import RunFingerprints, announce_recompute, check_resume
    from prism_fast.pipeline.summary import format_summary, summarize_run

    run_dir = opts.run_dir = Path(opts.run_dir).absolute()
    store = ResultsStore(run_dir)
    timings: dict[str, float] = {}

    t0 = time.perf_counter()
    tasks = select_run_tasks(opts, run_dir)
    inputs = load_inputs(opts.model_kind, tasks, opts.profile, opts.predictions)
    if opts.restrict_to_predictions:
        keep = [k for k, i in enumerate(inputs) if i.clean_status != "missing"]
        tasks, inputs = [tasks[k] for k in keep], [inputs[k] for k in keep]
    if not tasks:
        raise SystemExit("no tasks selected (check dataset.ids / lang / dataset.limit)")
    stages = [s for s in STAGES if s.enabled(opts)]
    fps = RunFingerprints(opts, tasks, inputs)
    # before anything is written: refuse (or announce) rows made with other settings than this run's
    stale = check_resume(fps, store, ["tasks", *(s.name for s in stages)], opts.on_settings_change, run_dir)
    record_invocation(run_dir, opts.config_snapshot)  # .hydra/ + prism-fast.log in the run directory
    announce_recompute(stale)
    store.sweep_temporaries()
    for name in ("summary.md", "summary.json"):  # a summary only ever describes the rows of a finished run
        (run_dir / name).unlink(missing_ok=True)
    manifest = write_manifest(opts, run_dir, len(tasks), fps)
    fps.register(store)
    _forget_stale_outputs(opts, stale)
    generation = generation_report(opts.model_kind, opts.model_name, opts.predictions, inputs)
    run = StageRun(opts, store, tasks, inputs, fps, StageProgress)
    _write_task_rows(opts, run)
    timings["dataset"] = time.perf_counter() - t0

    prebuild = _start_format_prebuild(opts, stages) if any(i.script for i in inputs) else None
    render_cfg = _render_config(opts, prebuild)
    head, finished = None, False
    try:
        t_head = time.perf_counter()
        prepared, head = _start_head_start(opts, run, stages, render_cfg)  # renders while Ray starts
        t0 = time.perf_counter()
        ensure_ray(opts.ray_address, opts.ray_num_cpus, opts.ray_num_gpus, opts.ray_runtime_env)
        timings["ray_start"] = time.perf_counter() - t0
        opts.render = render_cfg.result()
        for stage in stages:
            # (with a head start the Exec stage's time counts from it: its first renders ran while Ray started)
            t0 = t_head if stage.name == "exec" and head is not None else time.perf_counter()
            run_stage(stage, run, *((prepared, head) if stage.name == "exec" else ()))
            timings[stage.name] = time.perf_counter() - t0
        finished = True
    finally:
        if head is not None:
            head.stop()
            if finished:  # idle by now: its worker closes (its prefork server gone) before the format's directory
                head.join(30.0)  # (interrupted: not waited for; the driver's end takes every process along)
        if prebuild is not None and prebuild[1] is not None:
            shutil.rmtree(prebuild[1], ignore_errors=True)
        from prism_fast.execute.render import discard_prestarted

        discard_prestarted()

    summary = summarize_run(store, opts.model_name, [t.id for t in tasks], timings,
                            current={s: fps.expected(s) for s in fps.settings_sha if s != "tasks"},
                            spatial_requires_exec=spatial_requires_exec(opts.profile))
    if generation:
        summary["generation"] = generation
    text = format_summary(summary)
    (run_dir / "summary.json").write_text(json.dumps(summary, ensure_ascii=False, indent=2), encoding="utf-8")
    (run_dir / "summary.md").write_text(text, encoding="utf-8")
    finish(manifest, run_dir)
    print(text)
    print(f"\nrun directory: {run_dir}")
    return summary


def profile_render_from_config(cfg) -> dict:
    """``prism-fast profile-render``: repeated, one-at-a-time renders of the selected tasks' scripts."""
    from prism_fast.execute.profiling import ProfileSettings, format_profile, profile_renders

    opts = options_from_config(cfg)
    pr = cfg.profile_render
    settings = ProfileSettings(repeats=int(pr.repeats), warmup=int(pr.warmup),
                               pin_cpu=None if pr.pin_cpu is None else int(pr.pin_cpu),
                               tex_cache=bool(pr.get("tex_cache", False)),
                               play_hashing=bool(pr.get("play_hashing", True)),
                               fast_paths=bool(pr.get("fast_paths", False)))
    tasks = select_run_tasks(opts, opts.run_dir)
    inputs = [i for i in load_inputs(opts.model_kind, tasks, opts.profile, opts.predictions) if i.script is not None]
    from prism_fast.pipeline.lifecycle import record_invocation

    record_invocation(opts.run_dir, opts.config_snapshot)
    from prism_fast.pipeline.progress import StageProgress

    bar = StageProgress("render", len(inputs) * (settings.warmup + settings.repeats))
    try:
        result = profile_renders(((opts.model_name, i.id, i.script) for i in inputs), opts.render, settings,
                                 opts.profile, on_render=lambda failed: bar.update(1, failed=failed))
    finally:
        bar.close()
    out = opts.run_dir / "profile_render.json"
    out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(format_profile(result))
    print(f"written: {out}")
    return result
