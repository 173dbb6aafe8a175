"""``prism-fast eval``: dataset + predictions → Exec → (later stages) → rows in the store + a summary.

The driver owns the results store (single writer); Ray actors return rows. Every stage skips keys already in
the store (resume after a crash), except failed rows when ``retry_failed`` is set.
"""

from __future__ import annotations

import json
import logging
import platform
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from prism_fast.audit.config import AuditConfig
from prism_fast.config_schema import DatasetSchema, ExecuteSchema, PadvcSchema
from prism_fast.fsutil import sha256_text_or_none
from prism_fast.dataset.bundled import bundled_dataset_path
from prism_fast.dataset.loader import Task, load_dataset, read_id_list, select_tasks
from prism_fast.dataset.split import stratified_subset
from prism_fast.execute.inputs import ScriptInput, load_inputs
from prism_fast.execute.render import RenderConfig
from prism_fast.profile import Profile, resolve_profile
from prism_fast.pipeline.stages import Job, pending_jobs, run_actor_stage
from prism_fast.store import ResultsStore

log = logging.getLogger("prism_fast")


@dataclass
class EvalOptions:
    run_dir: Path
    model_name: str
    model_kind: str
    predictions: str | None
    languages: list[str]
    dataset: DatasetSchema  # the typed ``dataset`` group; ``path`` absolute, or None for the bundled set
    profile: Profile
    render: RenderConfig
    execute: ExecuteSchema  # the typed ``execute`` group (workers, prefork, … besides what RenderConfig holds)
    padvc: PadvcSchema  # the typed ``metrics.padvc`` group
    runs_root: Path
    restrict_to_predictions: bool = False
    retry_failed: bool = False
    text_expand: bool = True
    audit: bool = True
    audit_cfg: AuditConfig = field(default_factory=AuditConfig)
    audit_cache_dir: str | None = None  # audit/cache.py; None = off
    td: bool = True
    td_tau: int = 25
    metrics_device: str = "cpu"
    decoder: str = "auto"
    td_params: dict = field(default_factory=dict)  # lang -> metrics.td.TDParams
    padvc_params: dict = field(default_factory=dict)  # lang -> metrics.padvc.PadvcParams
    ray_address: str | None = None  # None: this run's own Ray instance (cluster=local)
    ray_num_cpus: int | None = None
    ray_num_gpus: int | None = None
    ray_runtime_env: dict = field(default_factory=dict)
    on_settings_change: str = "recompute"  # recompute | refuse (pipeline/settings.py)
    config_snapshot: dict = field(default_factory=dict)  # the resolved config as run.json records it

# -- configuration → typed options (the only place that reads the DictConfig) -------------------------------
def dataset_path_from_config(cfg) -> str | None:
    """``dataset.path``, checked before anything is written: ``dataset=prism`` has no default file (the group's
    ``???``), and a path that does not exist is named here rather than after the run directory was made."""
    from omegaconf import OmegaConf

    d = cfg.dataset
    if OmegaConf.is_missing(d, "path"):
        raise SystemExit(f"dataset={d.get('name')} needs dataset.path=<file>: the released PRISM dataset "
                         "(prism_dataset.jsonl or .parquet, downloaded by you). Nothing was written. The bundled "
                         "sample set is dataset=sample (the default).")
    if d.path is not None and not Path(str(d.path)).is_file():
        raise SystemExit(f"dataset.path={d.path}: no such file (relative paths are read from {Path.cwd()}). "
                         "Nothing was written.")
    return None if d.path is None else str(Path(str(d.path)).absolute())


def cluster_from_config(cfg) -> tuple[str | None, int | None, float | None]:
    """(address, num_cpus, num_gpus) of ``cluster``, checked before anything is written.

    ``cluster=local``: this run's own Ray instance (never one that happens to run on the host), so
    ``address`` must stay null. ``cluster=ray``: join an existing cluster, whose address must be given
    (``auto`` joins whatever ``ray start`` left on this host, with a warning naming it); a joined cluster brings
    its own resources, so ``num_cpus``/``num_gpus`` must stay null."""
    from omegaconf import OmegaConf

    c = cfg.cluster
    name = c.get("name", "local")
    if OmegaConf.is_missing(c, "address"):
        raise SystemExit("cluster=ray needs cluster.address: <head-ip>:6379 (the `ray start --head` address), "
                         "ray://<head>:10001 (Ray Client), or auto (joins whatever Ray instance this host runs, with "
                         "a warning naming it). Nothing was written. cluster=local starts a private Ray instance.")
    address = c.address
    if name == "local" and address not in (None, "local"):
        raise SystemExit(f"cluster=local starts this run's own Ray instance, but cluster.address={address}; to join "
                         f"a cluster use cluster=ray cluster.address={address}")
    if address in (None, "local"):
        return None, c.get("num_cpus"), c.get("num_gpus")
    given = [k for k in ("num_cpus", "num_gpus") if c.get(k) is not None]
    if given:
        raise SystemExit(f"cluster.{'/'.join(given)} set while joining {address}: a joined cluster's resources are "
                         "its nodes' (`ray start --num-cpus …` on each node); leave them null, or use "
                         "execute.workers to use fewer render workers")
    return str(address), None, None


def options_from_config(cfg) -> EvalOptions:
    from omegaconf import OmegaConf

    dataset_path = dataset_path_from_config(cfg)
    ray_address, ray_num_cpus, ray_num_gpus = cluster_from_config(cfg)
    profile = resolve_profile(cfg.profile, OmegaConf.to_container(cfg.quirks) or {})
    # Absolute before any actor starts: actors on other nodes (or in another working directory) write videos and
    # audit reports to these paths, and rows keep them; a relative one resolved in the worker's cwd (issue #15).
    runs_root = Path(str(cfg.runs_root)).absolute()
    run_dir = Path(str(cfg.run_dir)).absolute()
    snapshot = OmegaConf.to_container(cfg, resolve=True)
    snapshot.update(runs_root=str(runs_root), run_dir=str(run_dir))
    snapshot["dataset"]["path"] = dataset_path
    # the typed groups (prism_fast/config_schema.py)
    dataset, execute, audit = (OmegaConf.to_object(cfg[g]) for g in ("dataset", "execute", "audit"))
    dataset.path = dataset_path
    predictions = cfg.model.get("predictions")
    restrict = False
    if cfg.model.kind == "responses" and predictions is None:
        from prism_fast.fixtures import bundled_responses_path

        predictions, restrict = str(bundled_responses_path()), True
    return EvalOptions(
        run_dir=run_dir,
        model_name=str(cfg.model.name),
        model_kind=str(cfg.model.kind),
        predictions=predictions,
        languages=list(cfg.lang.languages),
        dataset=dataset,
        profile=profile,
        render=execute.render_config(runs_root),
        execute=execute,
        padvc=OmegaConf.to_object(cfg.metrics.padvc),
        runs_root=runs_root,
        restrict_to_predictions=restrict,
        retry_failed=bool(cfg.retry_failed),
        text_expand=bool(cfg.metrics.text_expand.enabled),
        audit=audit.enabled,
        audit_cfg=audit.audit_config(),
        audit_cache_dir=str((runs_root / ".cache" / "audit").resolve()) if audit.cache else None,
        td=bool(cfg.metrics.td.enabled),
        td_tau=int(cfg.metrics.td.tau),
        metrics_device=str(cfg.metrics.device),
        decoder=str(cfg.metrics.decoder),
        td_params=_td_params(cfg),
        padvc_params=_padvc_params(cfg),
        ray_address=ray_address,
        ray_num_cpus=ray_num_cpus,
        ray_num_gpus=ray_num_gpus,
        ray_runtime_env=OmegaConf.to_container(cfg.cluster.runtime_env) or {},
        on_settings_change=str(cfg.get("on_settings_change", "recompute")),
        config_snapshot=snapshot,
    )


def _td_params(cfg) -> dict:
    from prism_fast.metrics.td import TDParams

    return {lang: TDParams(float(p.td.mu), float(p.td.sigma), float(p.td.eps), source=str(p.get("source", "paper")))
            for lang, p in cfg.lang.params.items()}


def _padvc_params(cfg) -> dict:
    from prism_fast.metrics.padvc import PadvcParams

    return {lang: PadvcParams(float(p.padvc.mu), float(p.padvc.sigma), float(p.padvc.eps), str(p.get("source", "paper")))
            for lang, p in cfg.lang.params.items()}


def run_eval_from_config(cfg) -> dict:
    from prism_fast.pipeline.sweep import job_run_dir

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    opts = options_from_config(cfg)
    opts.run_dir = job_run_dir(opts.run_dir)  # multirun: one run directory per job (pipeline/sweep.py)
    return run_eval(opts)


def model_output_dir(opts: EvalOptions) -> Path:
    from urllib.parse import quote

    return opts.run_dir / "models" / quote(opts.model_name, safe="")


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


def write_manifest(opts: EvalOptions, run_dir: Path, n_tasks: int, fps=None) -> dict:
    """run.json of this eval (pipeline/manifest.py); ``finished_at`` is set when the run ends with its summary."""
    from prism_fast.execute.fingerprint import env_fingerprint
    from prism_fast.pipeline import manifest

    return manifest.write(run_dir, {
        **manifest.header(opts.profile, opts.model_name),
        "finished_at": None,
        "host": platform.node(),
        "python": sys.version.split()[0],
        "languages": opts.languages,
        "tasks": n_tasks,
        "environment": env_fingerprint(opts.render.manim_bin),
        # the settings every row of this run is (re)made with: stage -> lang -> settings_sha256 (rows/settings)
        "settings_sha256": fps.settings_sha if fps is not None else None,
        "config": opts.config_snapshot,
    })


def task_rows(opts: EvalOptions, tasks: list[Task], inputs: list[ScriptInput], scripts_dir: Path) -> list[dict]:
    rows = []
    for t, inp in zip(tasks, inputs):
        script_path = None
        if inp.script is not None:
            script_path = scripts_dir / f"{t.id}.py"
            script_path.write_text(inp.script, encoding="utf-8")
        rows.append({
            "model": opts.model_name, "lang": t.language, "id": t.id,
            "status": "ok" if inp.script is not None else "error",
            "error_kind": None if inp.script is not None else inp.clean_status,
            "error_detail": None, "profile": opts.profile.name,
            "source": t.source, "instruction_sha256": sha256_text_or_none(t.instruction),
            "has_script": inp.script is not None, "script_sha256": sha256_text_or_none(inp.script),
            "script_path": str(script_path) if script_path else None,
            "clean_status": inp.clean_status, "format_pollution": inp.format_pollution,
        })
    return rows


def _tagger(fps, stage: str):
    return (lambda lang, sid: fps.tag(stage, lang, sid)) if fps is not None else None


def _expected(fps, stage: str):
    return fps.expected(stage) if fps is not None else None


# -- stages ------------------------------------------------------------------------------------------------
# A task without a reply is an empty generation for the taxonomy (execution.md §4: it counts as a failure).
_GENERATION_STATUS = {"missing": "empty_after_cleanup", "empty_after_cleanup": "empty_after_cleanup",
                      "provider_error": "provider_error"}


def exec_no_script_row(lang: str, sample_id: str, clean_status: str) -> dict:
    """The Exec row of a task with nothing to render: an Exec failure, recorded and classified as such."""
    from prism_fast.execute.taxonomy import taxonomy_fields

    return {"lang": lang, "id": sample_id, "status": "error", "error_kind": "no_script",
            "error_detail": clean_status, "success": False, "skipped": False, "error": f"no script ({clean_status})",
            **taxonomy_fields(code=None, render_row=None, script_id=sample_id,
                              generation_status=_GENERATION_STATUS.get(clean_status, "empty_after_cleanup"))}


def run_exec_stage(opts: EvalOptions, store: ResultsStore, inputs: list[ScriptInput], progress, fps=None) -> None:
    import ray

    from prism_fast.pipeline.actors import RenderActor
    from prism_fast.schema import normalize_status

    jobs = pending_jobs(store, "exec", opts.model_name, (Job(i.language, i.id, (i.script,)) for i in inputs),
                        opts.retry_failed, _expected(fps, "exec"))
    no_script = {i.id: i for i in inputs if i.script is None}
    immediate = [exec_no_script_row(j.lang, j.id, no_script[j.id].clean_status) for j in jobs if j.id in no_script]
    jobs = [j for j in jobs if j.id not in no_script]
    model_dir = str(model_output_dir(opts))  # render_one writes <model_dir>/videos/<id>.mp4
    # The store is the resume authority: a video of a pending sample was left by a run killed between the render
    # and the row's flush, or made with other settings (a stale row being recomputed). render_one would trust it
    # (Q-FUNNEL-2) and write a "skipped" row with runtime 0, so a resumed run would differ from a clean one;
    # re-render instead (the render cache serves what did not change).
    orphans = [p for j in jobs if (p := Path(model_dir) / "videos" / f"{j.id}.mp4").exists()]
    for p in orphans:
        p.unlink()
    if orphans:
        log.warning("re-rendering %d sample(s) whose video has no current row (interrupted run or changed "
                    "settings): %s", len(orphans), ", ".join(p.stem for p in orphans[:10]))
    n = int(opts.execute.workers or ray.cluster_resources().get("CPU", 1))
    run_actor_stage("exec", store, opts.model_name, opts.profile.name, jobs,
                    lambda: RenderActor.remote(opts.render, opts.profile, model_dir, opts.execute.prefork,
                                               *_onepass_args(opts)), "render", n, progress,
                    immediate, _exec_lost_row,
                    transform=lambda row: normalize_status(row, "exec_status", skipped_values=("skipped",)),
                    tag=_tagger(fps, "exec"))


def _exec_lost_row(job, exc) -> dict:
    """Exec fields of a sample whose render never returned: its worker died under it twice (the script is taken
    to have killed it: a failed render, final) or it was lost otherwise (retried on resume; pipeline/stages.py)."""
    from prism_fast.pipeline.streaming import WorkerKilledBySample

    if isinstance(exc, WorkerKilledBySample):
        return {"success": False, "skipped": False, "exec_status": "failed", "error": f"{type(exc).__name__}: {exc}"}
    return {"success": False, "skipped": False, "error": "render worker lost"}


def _onepass_args(opts: EvalOptions) -> tuple:
    """(audit settings, audit work dir, audit cache dir) for the render actors when the audit may share the
    render's execution (``audit.one_pass=auto``, audit/onepass.py), else (None, None, None)."""
    if not opts.audit or opts.audit_cfg is None or getattr(opts.audit_cfg, "one_pass", "off") != "auto":
        return None, None, None
    return opts.audit_cfg.to_dict(), str(model_output_dir(opts) / "audit"), opts.audit_cache_dir


def text_expand_stage_row(opts: EvalOptions, task: Task, lang: str, script: str | None) -> dict:
    """One TextExpand row. The metric runs in the driver, so whatever it raises (a RecursionError on a deep or
    recursive script, a bug) is caught here and becomes the sample's error row: no script stops a run."""
    from prism_fast.metrics.text_expand import text_expand_row
    from prism_fast.schema import normalize_status

    try:
        row = text_expand_row(task.id, script, task.instruction, task.language, opts.profile, source_id=task.id)
        row = normalize_status(row, "text_expand_status")
        if isinstance(row.get("quirks_fixed"), list):
            row["quirks_fixed"] = json.dumps(row["quirks_fixed"])
    except Exception as exc:  # noqa: BLE001 - the sample's error row
        log.warning("text_expand %s raised %s: recorded as its error row", task.id, type(exc).__name__)
        row = {"id": task.id, "status": "error", "text_expand_status": "exception", "error_kind": "stage_exception",
               "error_detail": f"{type(exc).__name__}: {exc}"[:4000], "profile": opts.profile.name}
    return {**row, "model": opts.model_name, "lang": lang}


def run_text_expand_stage(opts: EvalOptions, store: ResultsStore, tasks: list[Task], inputs: list[ScriptInput],
                          progress, fps=None) -> None:
    """TextExpand from the code's AST (static, no video): cheap, so it runs in the driver."""
    from prism_fast.pipeline.stages import RowSink

    by_id = {t.id: t for t in tasks}
    jobs = pending_jobs(store, "text_expand", opts.model_name, (Job(i.language, i.id, (i.script,)) for i in inputs),
                        opts.retry_failed, _expected(fps, "text_expand"))
    sink = RowSink(store, "text_expand")
    bar = progress("textx", len(jobs))
    for job in jobs:
        row = text_expand_stage_row(opts, by_id[job.id], job.lang, job.args[0])
        if fps is not None:
            row.update(fps.tag("text_expand", job.lang, job.id))
        sink.add(row)
        bar.update(1, failed=row["status"] != "ok")
    sink.flush()
    bar.close()


def audit_no_script_row(lang: str, sample_id: str) -> dict:
    """The audit row of a task without a script: a Spatial failure."""
    return {"lang": lang, "id": sample_id, "status": "error", "error_kind": "no_script", "audit_success": 0,
            "segment_count": 0, "visual_structure_rate": 0.0, "visual_structure_pass": 0, "audit_status": "no_script"}


def audit_lost_row(job, exc) -> dict:
    return {"audit_success": 0, "visual_structure_pass": 0, "visual_structure_rate": 0.0, "audit_status": "worker_lost"}


def run_audit_stage(opts: EvalOptions, store: ResultsStore, inputs: list[ScriptInput], progress, fps=None) -> None:
    """Spatial audit of every script, independently of its render (Q-FUNNEL-1: reference audits failed
    renders too). A task without a script gets an error row, so Spatial counts it as a failure."""
    import ray

    from prism_fast.pipeline.actors import AuditActor
    from prism_fast.schema import normalize_status

    jobs = pending_jobs(store, "audit", opts.model_name, (Job(i.language, i.id, (i.script,)) for i in inputs),
                        opts.retry_failed, _expected(fps, "audit"))
    no_script = {i.id for i in inputs if i.script is None}
    immediate = [audit_no_script_row(j.lang, j.id) for j in jobs if j.id in no_script]
    jobs = [j for j in jobs if j.id not in no_script]
    work_dir = str(model_output_dir(opts) / "audit")
    from prism_fast.audit.onepass import load_shared_audit

    shared = {}
    if getattr(opts.audit_cfg, "one_pass", "off") == "auto":  # one_pass=off: a resumed run audits for real
        shared = {j.id: r for j in jobs
                  if (r := load_shared_audit(j.id, j.args[0], work_dir, opts.audit_cfg.to_dict())) is not None
                  # retry_failed: a failed separate audit left by a render actor is audited again here
                  and not (opts.retry_failed and r.get("audit_pass") == "separate" and r.get("status") != "ok")}
    if opts.audit_cache_dir:
        from prism_fast.audit.onepass import cache_shared_audit

        shared = {j.id: (cache_shared_audit(shared[j.id], j.id, j.args[0], opts.audit_cfg, opts.profile,
                                            opts.audit_cache_dir, work_dir)
                         if shared[j.id].get("audit_pass") == "shared" else shared[j.id])  # separate: cached
                  for j in jobs if j.id in shared}
    immediate += [normalize_status({**shared[j.id], "lang": j.lang, "id": j.id}, "audit_status")
                  for j in jobs if j.id in shared]
    jobs = [j for j in jobs if j.id not in shared]
    n = int(ray.cluster_resources().get("CPU", 1))
    audit_cfg = opts.audit_cfg
    if audit_cfg.pictures and not audit_cfg.pictures_root:  # failing samples' pictures where `inspect` puts them
        from dataclasses import replace

        audit_cfg = replace(audit_cfg, pictures_root=str(opts.run_dir / "inspect"))
    run_actor_stage("audit", store, opts.model_name, opts.profile.name, jobs,
                    lambda: AuditActor.remote(audit_cfg, opts.profile, work_dir, opts.audit_cache_dir), "audit", n,
                    progress, immediate, audit_lost_row,
                    transform=lambda row: normalize_status({**row, "audit_pass": "separate"}, "audit_status"),
                    tag=_tagger(fps, "audit"))


def td_lost_row(job, exc) -> dict:
    return {"td_status": "worker_lost", "render_success": job.args[1]["render_success"]}


def run_td_stage(opts: EvalOptions, store: ResultsStore, inputs: list[ScriptInput], progress, fps=None) -> None:
    """TD over each rendered video, gated on the render row and weighted by the audit's rate (td.md §3)."""
    import ray

    from prism_fast.pipeline.actors import VideoMetricsActor
    from prism_fast.schema import normalize_status

    exec_rows = {(r["lang"], r["id"]): r for r in store.read("exec").to_pylist() if r["model"] == opts.model_name}
    audit_rows = {(r["lang"], r["id"]): r for r in store.read("audit").to_pylist() if r["model"] == opts.model_name}
    jobs = []
    for i in inputs:
        ex, au = exec_rows.get((i.language, i.id), {}), audit_rows.get((i.language, i.id), {})
        base = {"id": i.id, "source_id": i.id, "render_success": bool(ex.get("success")),
                "video_path": ex.get("video_path"),
                "visual_structure_pass": au.get("visual_structure_pass", 0),
                "visual_structure_rate": au.get("visual_structure_rate", 0.0)}
        jobs.append(Job(i.language, i.id, (i.language, base)))
    jobs = pending_jobs(store, "td", opts.model_name, jobs, opts.retry_failed, _expected(fps, "td"))
    gpus = ray.cluster_resources().get("GPU", 0)
    use_gpu = opts.metrics_device.startswith("cuda") and gpus > 0
    n = int(ray.cluster_resources().get("CPU", 1))
    actor_opts = {"num_gpus": min(1.0, gpus / n)} if use_gpu else {}

    def make():
        return VideoMetricsActor.options(**actor_opts).remote(opts.profile, opts.td_params, opts.td_tau,
                                                              opts.decoder, opts.metrics_device)

    run_actor_stage("td", store, opts.model_name, opts.profile.name, jobs, make, "td", n, progress,
                    lost_row=td_lost_row, transform=lambda row: normalize_status(row, "td_status"),
                    tag=_tagger(fps, "td"))


def _forget_stale_outputs(opts: EvalOptions, stale: dict) -> None:
    """Files a clean run would not have for rows being recomputed: the audit report of a stale audit row (reference
    reads an existing one, Q-SPATIAL-19) and the per-video OCR cache of a sample whose video is re-rendered
    (reference keys it by the video's path, Q-PADVC-7). Videos of pending samples are handled by the Exec stage."""
    import shutil

    model_dir = model_output_dir(opts)
    for _, sid in stale["audit"].keys if "audit" in stale else ():
        shutil.rmtree(model_dir / "audit" / "audits" / sid, ignore_errors=True)
    if "exec" in stale:
        ocr_dir = Path(opts.padvc.ocr_cache_dir or (opts.run_dir / "ocr_cache"))
        for _, sid in stale["exec"].keys:
            for p in ocr_dir.glob(f"{sid[:80]}__*.json*") if ocr_dir.is_dir() else ():
                p.unlink(missing_ok=True)


def generation_report(opts: EvalOptions, inputs: list[ScriptInput]) -> dict:
    """Tasks of a generated (or predictions) model without a usable reply, split into those requested whose
    request or reply failed and those never requested (no entry in the predictions): both count as Exec failures
    (empty_output), but the second means the predictions do not cover the selection."""
    if opts.model_kind == "reference":
        return {}
    failed: dict[str, int] = {}
    never = []
    for i in inputs:
        if i.clean_status == "missing":
            never.append(i.id)
        elif i.script is None:
            failed[i.clean_status] = failed.get(i.clean_status, 0) + 1
    if never:
        log.warning("%d of %d selected task(s) were never requested from model %s (no entry in %s), e.g. %s: they "
                    "are scored as Exec failures (empty_output). Generate them first (`prism-fast generate` with "
                    "the same dataset/lang settings) or select only generated ids.", len(never), len(inputs),
                    opts.model_name, opts.predictions, ", ".join(never[:5]))
    return {"requested_failed": dict(sorted(failed.items())), "never_requested": len(never)}


def run_eval(opts: EvalOptions) -> dict:
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
    padvc_on = opts.padvc.enabled
    enabled = ["tasks", "exec", *(["audit"] if opts.audit else []), *(["padvc"] if padvc_on else []),
               *(["td"] if opts.td else []), *(["text_expand"] if opts.text_expand else [])]
    fps = RunFingerprints(opts, tasks, inputs)
    # before anything is written: refuse (or announce) rows made with other settings than this run's
    stale = check_resume(fps, store, enabled, opts.on_settings_change, run_dir)
    from prism_fast.pipeline.lifecycle import record_invocation

    record_invocation(run_dir, opts.config_snapshot)  # .hydra/ + prism-fast.log in the run directory
    announce_recompute(stale)
    store.sweep_temporaries()
    for name in ("summary.md", "summary.json"):  # a summary only ever describes the rows of a finished run
        (run_dir / name).unlink(missing_ok=True)
    manifest = write_manifest(opts, run_dir, len(tasks), fps)
    fps.register(store)
    _forget_stale_outputs(opts, stale)
    generation = generation_report(opts, inputs)
    scripts_dir = model_output_dir(opts) / "scripts"
    scripts_dir.mkdir(parents=True, exist_ok=True)
    todo = {(j.lang, j.id) for j in pending_jobs(store, "tasks", opts.model_name,
                                                 (Job(t.language, t.id, ()) for t in tasks), False,
                                                 fps.expected("tasks"))}
    store.append("tasks", [{**r, **fps.tag("tasks", r["lang"], r["id"])}
                           for r in task_rows(opts, tasks, inputs, scripts_dir) if (r["lang"], r["id"]) in todo],
                 invalid="error_row")
    timings["dataset"] = time.perf_counter() - t0

    ensure_ray(opts.ray_address, opts.ray_num_cpus, opts.ray_num_gpus, opts.ray_runtime_env)
    progress = StageProgress
    t0 = time.perf_counter()
    run_exec_stage(opts, store, inputs, progress, fps)
    timings["exec"] = time.perf_counter() - t0

    if opts.audit:
        t0 = time.perf_counter()
        run_audit_stage(opts, store, inputs, progress, fps)
        timings["audit"] = time.perf_counter() - t0

    if padvc_on:
        from prism_fast.pipeline.padvc_stage import run_padvc_stage

        t0 = time.perf_counter()
        run_padvc_stage(opts, store, tasks, inputs, progress, fps)
        timings["padvc"] = time.perf_counter() - t0

    if opts.td:
        t0 = time.perf_counter()
        run_td_stage(opts, store, inputs, progress, fps)
        timings["td"] = time.perf_counter() - t0

    if opts.text_expand:
        t0 = time.perf_counter()
        run_text_expand_stage(opts, store, tasks, inputs, progress, fps)
        timings["text_expand"] = time.perf_counter() - t0

    summary = summarize_run(store, opts.model_name, [t.id for t in tasks], timings,
                            current={s: fps.expected(s) for s in fps.settings_sha if s != "tasks"})
    if generation:
        summary["generation"] = generation
    text = format_summary(summary)
    (run_dir / "summary.json").write_text(json.dumps(summary, ensure_ascii=False, indent=2), encoding="utf-8")
    (run_dir / "summary.md").write_text(text, encoding="utf-8")
    from prism_fast.pipeline.manifest import finish

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
                               play_hashing=bool(pr.get("play_hashing", True)))
    tasks = select_run_tasks(opts, opts.run_dir)
    inputs = [i for i in load_inputs(opts.model_kind, tasks, opts.profile, opts.predictions) if i.script is not None]
    from prism_fast.pipeline.lifecycle import record_invocation

    record_invocation(opts.run_dir, opts.config_snapshot)
    result = profile_renders(((opts.model_name, i.id, i.script) for i in inputs), opts.render, settings, opts.profile)
    out = opts.run_dir / "profile_render.json"
    out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(format_profile(result))
    print(f"written: {out}")
    return result
