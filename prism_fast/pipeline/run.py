"""``prism-fast eval``: dataset + predictions → Exec → (later stages) → rows in the store + a summary.

The driver owns the results store (single writer); Ray actors return rows. Every stage skips keys already in
the store (resume after a crash), except failed rows when ``retry_failed`` is set.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import platform
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from prism_fast.dataset.bundled import bundled_dataset_path
from prism_fast.dataset.loader import Task, load_dataset, read_id_list, select_tasks
from prism_fast.dataset.split import stratified_subset
from prism_fast.execute.inputs import ScriptInput, load_inputs
from prism_fast.profile import Profile, resolve_profile
from prism_fast.pipeline.stages import Job, pending_jobs, run_actor_stage
from prism_fast.store import ResultsStore

log = logging.getLogger("prism_fast")


@dataclass
class DatasetOptions:
    path: str | None = None
    format: str = "auto"
    strict: bool = True
    ids: list[str] | str | None = None
    limit: int | None = None
    subset_fraction: float | None = None  # None = no subset
    subset_seed: int = 42


@dataclass
class EvalOptions:
    run_dir: Path
    model_name: str
    model_kind: str
    predictions: str | None
    languages: list[str]
    dataset: DatasetOptions
    profile: Profile
    render: object  # prism_fast.execute.render.RenderConfig
    render_workers: int | None = None
    render_prefork: bool = True
    restrict_to_predictions: bool = False
    retry_failed: bool = False
    text_expand: bool = True
    audit: bool = True
    audit_cfg: object = None  # prism_fast.audit.config.AuditConfig
    audit_cache_dir: str | None = None  # audit/cache.py; None = off
    td: bool = True
    td_tau: int = 25
    metrics_device: str = "cpu"
    decoder: str = "auto"
    td_params: dict = field(default_factory=dict)  # lang -> metrics.td.TDParams
    ray_address: str | None = None
    ray_num_cpus: int | None = None
    ray_num_gpus: int | None = None
    ray_runtime_env: dict = field(default_factory=dict)
    config_snapshot: dict = field(default_factory=dict)


# -- configuration → typed options (the only place that reads the DictConfig) -------------------------------
def options_from_config(cfg) -> EvalOptions:
    from omegaconf import OmegaConf

    d = cfg.dataset
    subset = d.get("subset") or {}
    profile = resolve_profile(cfg.profile, OmegaConf.to_container(cfg.quirks) or {})
    predictions = cfg.model.get("predictions")
    restrict = False
    if cfg.model.kind == "responses" and predictions is None:
        from prism_fast.fixtures import bundled_responses_path

        predictions, restrict = str(bundled_responses_path()), True
    return EvalOptions(
        run_dir=Path(cfg.run_dir),
        model_name=str(cfg.model.name),
        model_kind=str(cfg.model.kind),
        predictions=predictions,
        languages=list(cfg.lang.languages),
        dataset=DatasetOptions(
            path=d.path,
            format=d.format,
            strict=bool(d.strict),
            ids=OmegaConf.to_container(d.ids) if OmegaConf.is_config(d.ids) else d.ids,
            limit=d.limit,
            subset_fraction=float(subset.get("fraction", 0.2)) if subset.get("enabled") else None,
            subset_seed=int(subset.get("seed", 42)),
        ),
        profile=profile,
        render=render_config_from_mapping(OmegaConf.to_container(cfg.render, resolve=True), Path(cfg.runs_root)),
        render_workers=cfg.render.get("workers"),
        render_prefork=bool(cfg.render.get("prefork", True)),
        restrict_to_predictions=restrict,
        retry_failed=bool(cfg.retry_failed),
        text_expand=bool(cfg.metrics.text_expand.enabled),
        audit=bool(cfg.audit.enabled),
        audit_cfg=audit_config_from_mapping(OmegaConf.to_container(cfg.audit, resolve=True)),
        audit_cache_dir=(str((Path(cfg.runs_root) / ".cache" / "audit").resolve()) if cfg.audit.get("cache", False)
                         else None),
        td=bool(cfg.metrics.td.enabled),
        td_tau=int(cfg.metrics.td.tau),
        metrics_device=str(cfg.metrics.device),
        decoder=str(cfg.metrics.decoder),
        td_params=_td_params(cfg),
        ray_address=cfg.cluster.address,
        ray_num_cpus=cfg.cluster.num_cpus,
        ray_num_gpus=cfg.cluster.num_gpus,
        ray_runtime_env=OmegaConf.to_container(cfg.cluster.runtime_env) or {},
        config_snapshot=OmegaConf.to_container(cfg, resolve=True),
    )


def audit_config_from_mapping(a: dict):
    """conf/audit/*.yaml → audit.config.AuditConfig (same field names; unknown keys are an error)."""
    from dataclasses import fields

    from prism_fast.audit.config import AuditConfig

    known = {f.name for f in fields(AuditConfig)}
    values = {k: v for k, v in a.items() if k not in ("enabled", "cache")}
    unknown = sorted(set(values) - known)
    if unknown:
        raise KeyError(f"unknown audit setting(s) {unknown}; see prism_fast/audit/config.py")
    return AuditConfig(**values)


def _td_params(cfg) -> dict:
    from prism_fast.metrics.td import TDParams

    return {lang: TDParams(float(p.td.mu), float(p.td.sigma), float(p.td.eps), source=str(p.get("source", "paper")))
            for lang, p in cfg.lang.params.items()}


def render_config_from_mapping(r: dict, runs_root: Path):
    """conf/render/*.yaml → execute.render.RenderConfig."""
    from prism_fast.execute.render import RenderConfig
    from prism_fast.execute.sandbox import Limits

    lim = r.get("limits") or {}
    gb = lim.get("address_space_gb")
    cache = r.get("cache") or {}
    cache_dir = None
    if cache.get("enabled"):
        cache_dir = str(Path(cache.get("dir") or (runs_root / ".cache" / "render")).resolve())
    tex = r.get("tex_cache") or {}
    tex_cache_dir = None
    if tex.get("enabled"):
        from prism_fast.execute.fingerprint import fingerprint_hash
        from prism_fast.execute.render import _resolve_bin

        # one directory per render environment (manim, TeX, dvisvgm, fonts): an upgrade never reuses entries
        fp = fingerprint_hash(_resolve_bin(r.get("manim_bin") or "manim"))
        tex_cache_dir = str((Path(tex.get("dir") or (runs_root / ".cache" / "tex")) / fp).resolve())
    kwargs = dict(
        quality_flag=f"-{r.get('quality', 'ql')}",
        timeout_s=int(r.get("timeout_s", 600)),
        limits=Limits(
            address_space_mb=int(gb * 1024) if gb else None,
            cpu_seconds=lim.get("cpu_seconds"),
            file_size_mb=lim.get("file_size_mb"),
            max_processes=lim.get("processes"),
            open_files=lim.get("open_files"),
            memory_mb=int(lim["memory_gb"] * 1024) if lim.get("memory_gb") else None,
            tmp_mb=int(lim.get("tmp_mb") or 512),
        ),
        sandbox=str(r.get("sandbox", "auto")),
        scratch_mb=int(lim.get("scratch_mb") or 2048),
        isolate_network=bool(r.get("network_isolation", True)),
        cache_dir=cache_dir,
        tex_cache_dir=tex_cache_dir,
        play_hashing=bool(r.get("play_hashing", False)),
    )
    if r.get("manim_bin"):
        kwargs["manim_bin"] = r["manim_bin"]
    if lim.get("output_bytes"):
        kwargs["output_tail_bytes"] = int(lim["output_bytes"])
    return RenderConfig(**kwargs)


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
        issues_file = run_dir / "dataset_issues.jsonl"
        with open(issues_file, "w", encoding="utf-8") as fh:
            for i in loaded.issues:
                fh.write(json.dumps(i.__dict__, ensure_ascii=False) + "\n")
        log.warning("%d invalid dataset record(s) skipped; listed in %s", len(loaded.issues), issues_file)
    ids = d.ids
    if isinstance(ids, str):
        ids = read_id_list(ids)
    tasks = loaded.tasks
    if d.subset_fraction is not None:
        tasks = stratified_subset(tasks, d.subset_fraction, d.subset_seed)
    return select_tasks(tasks, ids=ids, languages=opts.languages, limit=d.limit)


def _sha256(text: str | None) -> str | None:
    return hashlib.sha256(text.encode("utf-8")).hexdigest() if text is not None else None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=5,
                             cwd=Path(__file__).resolve().parents[2])
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def write_manifest(opts: EvalOptions, run_dir: Path, n_tasks: int) -> None:
    from prism_fast import __version__
    from prism_fast.execute.fingerprint import env_fingerprint

    manifest = {
        "prism_fast_version": __version__,
        "git_commit": _git_commit(),
        "started_at": _dt.datetime.now(_dt.timezone.utc).isoformat(),
        "host": platform.node(),
        "python": sys.version.split()[0],
        **opts.profile.describe(),
        "model": opts.model_name,
        "languages": opts.languages,
        "tasks": n_tasks,
        "environment": env_fingerprint(opts.render.manim_bin),
        "config": opts.config_snapshot,
    }
    history = run_dir / "run_history"
    history.mkdir(exist_ok=True)
    text = json.dumps(manifest, ensure_ascii=False, indent=2, default=str)
    (history / f"run-{time.time_ns()}.json").write_text(text, encoding="utf-8")
    (run_dir / "run.json").write_text(text, encoding="utf-8")


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
            "source": t.source, "instruction_sha256": _sha256(t.instruction),
            "has_script": inp.script is not None, "script_sha256": _sha256(inp.script),
            "script_path": str(script_path) if script_path else None,
            "clean_status": inp.clean_status, "format_pollution": inp.format_pollution,
        })
    return rows


# -- stages ------------------------------------------------------------------------------------------------
# A task without a reply is an empty generation for the taxonomy (execution.md §4: it counts as a failure).
_GENERATION_STATUS = {"missing": "empty_after_cleanup", "empty_after_cleanup": "empty_after_cleanup",
                      "provider_error": "provider_error"}


def run_exec_stage(opts: EvalOptions, store: ResultsStore, inputs: list[ScriptInput], progress) -> None:
    import ray

    from prism_fast.execute.taxonomy import taxonomy_fields
    from prism_fast.pipeline.actors import RenderActor
    from prism_fast.schema import normalize_status

    jobs = pending_jobs(store, "exec", opts.model_name, (Job(i.language, i.id, (i.script,)) for i in inputs),
                        opts.retry_failed)
    no_script = {i.id: i for i in inputs if i.script is None}
    immediate = [  # nothing to render: an Exec failure, recorded and classified as such
        {"lang": j.lang, "id": j.id, "status": "error", "error_kind": "no_script",
         "error_detail": no_script[j.id].clean_status, "success": False, "skipped": False,
         "error": f"no script ({no_script[j.id].clean_status})",
         **taxonomy_fields(code=None, render_row=None, script_id=j.id,
                           generation_status=_GENERATION_STATUS.get(no_script[j.id].clean_status, "empty_after_cleanup"))}
        for j in jobs if j.id in no_script]
    jobs = [j for j in jobs if j.id not in no_script]
    model_dir = str(model_output_dir(opts))  # render_one writes <model_dir>/videos/<id>.mp4
    # The store is the resume authority: a video without a row is left by a run killed between the render and
    # the row's flush. render_one would trust it (Q-FUNNEL-2) and write a "skipped" row with runtime 0, so a
    # resumed run would differ from a clean one; re-render instead.
    orphans = [p for j in jobs if (p := Path(model_dir) / "videos" / f"{j.id}.mp4").exists()]
    for p in orphans:
        p.unlink()
    if orphans:
        log.warning("re-rendering %d sample(s) whose video has no row (interrupted run): %s", len(orphans),
                    ", ".join(p.stem for p in orphans[:10]))
    n = int(opts.render_workers or ray.cluster_resources().get("CPU", 1))
    run_actor_stage("exec", store, opts.model_name, opts.profile.name, jobs,
                    lambda: RenderActor.remote(opts.render, opts.profile, model_dir, opts.render_prefork,
                                               *_onepass_args(opts)), "render", n, progress,
                    immediate, _exec_lost_row,
                    transform=lambda row: normalize_status(row, "exec_status", skipped_values=("skipped",)))


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


def run_text_expand_stage(opts: EvalOptions, store: ResultsStore, tasks: list[Task], inputs: list[ScriptInput],
                          progress) -> None:
    """TextExpand from the code's AST (static, no video): cheap, so it runs in the driver."""
    from prism_fast.metrics.text_expand import text_expand_row
    from prism_fast.pipeline.stages import RowSink
    from prism_fast.schema import normalize_status

    by_id = {t.id: t for t in tasks}
    jobs = pending_jobs(store, "text_expand", opts.model_name, (Job(i.language, i.id, (i.script,)) for i in inputs),
                        opts.retry_failed)
    sink = RowSink(store, "text_expand")
    bar = progress("textx", len(jobs))
    for job in jobs:
        task = by_id[job.id]
        row = text_expand_row(job.id, job.args[0], task.instruction, task.language, opts.profile,
                              source_id=task.id)
        row = normalize_status(row, "text_expand_status")
        if isinstance(row.get("quirks_fixed"), list):
            row["quirks_fixed"] = json.dumps(row["quirks_fixed"])
        sink.add({**row, "model": opts.model_name, "lang": job.lang})
        bar.update(1, failed=row["status"] != "ok")
    sink.flush()
    bar.close()


def run_audit_stage(opts: EvalOptions, store: ResultsStore, inputs: list[ScriptInput], progress) -> None:
    """Spatial audit of every script, independently of its render (Q-FUNNEL-1: reference audits failed
    renders too). A task without a script gets an error row, so Spatial counts it as a failure."""
    import ray

    from prism_fast.pipeline.actors import AuditActor
    from prism_fast.schema import normalize_status

    jobs = pending_jobs(store, "audit", opts.model_name, (Job(i.language, i.id, (i.script,)) for i in inputs),
                        opts.retry_failed)
    no_script = {i.id for i in inputs if i.script is None}
    immediate = [{"lang": j.lang, "id": j.id, "status": "error", "error_kind": "no_script", "audit_success": 0,
                  "segment_count": 0, "visual_structure_rate": 0.0, "visual_structure_pass": 0,
                  "audit_status": "no_script"} for j in jobs if j.id in no_script]
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
    immediate += [normalize_status({**shared[j.id], "lang": j.lang}, "audit_status") for j in jobs if j.id in shared]
    jobs = [j for j in jobs if j.id not in shared]
    n = int(ray.cluster_resources().get("CPU", 1))
    audit_cfg = opts.audit_cfg
    if audit_cfg.pictures and not audit_cfg.pictures_root:  # failing samples' pictures where `inspect` puts them
        from dataclasses import replace

        audit_cfg = replace(audit_cfg, pictures_root=str(opts.run_dir / "inspect"))
    run_actor_stage("audit", store, opts.model_name, opts.profile.name, jobs,
                    lambda: AuditActor.remote(audit_cfg, opts.profile, work_dir, opts.audit_cache_dir), "audit", n,
                    progress,
                    immediate, lambda job, exc: {"audit_success": 0, "visual_structure_pass": 0,
                                                 "visual_structure_rate": 0.0, "audit_status": "worker_lost"},
                    transform=lambda row: normalize_status({**row, "audit_pass": "separate"}, "audit_status"))


def run_td_stage(opts: EvalOptions, store: ResultsStore, inputs: list[ScriptInput], progress) -> None:
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
    jobs = pending_jobs(store, "td", opts.model_name, jobs, opts.retry_failed)
    gpus = ray.cluster_resources().get("GPU", 0)
    use_gpu = opts.metrics_device.startswith("cuda") and gpus > 0
    n = int(ray.cluster_resources().get("CPU", 1))
    actor_opts = {"num_gpus": min(1.0, gpus / n)} if use_gpu else {}

    def make():
        return VideoMetricsActor.options(**actor_opts).remote(opts.profile, opts.td_params, opts.td_tau,
                                                              opts.decoder, opts.metrics_device)

    def lost(job, exc):
        return {"td_status": "worker_lost", "render_success": job.args[1]["render_success"]}

    run_actor_stage("td", store, opts.model_name, opts.profile.name, jobs, make, "td", n, progress,
                    lost_row=lost, transform=lambda row: normalize_status(row, "td_status"))


def run_eval(opts: EvalOptions) -> dict:
    from prism_fast.pipeline.progress import StageProgress
    from prism_fast.pipeline.ray_runtime import ensure_ray
    from prism_fast.pipeline.summary import summarize_run, format_summary

    run_dir = opts.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    store = ResultsStore(run_dir)
    store.sweep_temporaries()
    timings: dict[str, float] = {}

    t0 = time.perf_counter()
    tasks = select_run_tasks(opts, run_dir)
    inputs = load_inputs(opts.model_kind, tasks, opts.profile, opts.predictions)
    if opts.restrict_to_predictions:
        keep = [k for k, i in enumerate(inputs) if i.clean_status != "missing"]
        tasks, inputs = [tasks[k] for k in keep], [inputs[k] for k in keep]
    if not tasks:
        raise SystemExit("no tasks selected (check dataset.ids / lang / dataset.limit)")
    write_manifest(opts, run_dir, len(tasks))
    scripts_dir = model_output_dir(opts) / "scripts"
    scripts_dir.mkdir(parents=True, exist_ok=True)
    done = store.done_keys("tasks")
    store.append("tasks", [r for r in task_rows(opts, tasks, inputs, scripts_dir)
                           if (r["model"], r["lang"], r["id"]) not in done])
    timings["dataset"] = time.perf_counter() - t0

    ensure_ray(opts.ray_address, opts.ray_num_cpus, opts.ray_num_gpus, opts.ray_runtime_env)
    progress = StageProgress
    t0 = time.perf_counter()
    run_exec_stage(opts, store, inputs, progress)
    timings["exec"] = time.perf_counter() - t0

    if opts.audit:
        t0 = time.perf_counter()
        run_audit_stage(opts, store, inputs, progress)
        timings["audit"] = time.perf_counter() - t0

    if ((opts.config_snapshot.get("metrics") or {}).get("padvc") or {}).get("enabled"):
        from prism_fast.pipeline.padvc_stage import run_padvc_stage

        t0 = time.perf_counter()
        run_padvc_stage(opts, store, tasks, inputs, progress)
        timings["padvc"] = time.perf_counter() - t0

    if opts.td:
        t0 = time.perf_counter()
        run_td_stage(opts, store, inputs, progress)
        timings["td"] = time.perf_counter() - t0

    if opts.text_expand:
        t0 = time.perf_counter()
        run_text_expand_stage(opts, store, tasks, inputs, progress)
        timings["text_expand"] = time.perf_counter() - t0

    summary = summarize_run(store, opts.model_name, [t.id for t in tasks], timings)
    text = format_summary(summary)
    (run_dir / "summary.json").write_text(json.dumps(summary, ensure_ascii=False, indent=2), encoding="utf-8")
    (run_dir / "summary.md").write_text(text, encoding="utf-8")
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
    opts.run_dir.mkdir(parents=True, exist_ok=True)
    tasks = select_run_tasks(opts, opts.run_dir)
    inputs = [i for i in load_inputs(opts.model_kind, tasks, opts.profile, opts.predictions) if i.script is not None]
    result = profile_renders(((opts.model_name, i.id, i.script) for i in inputs), opts.render, settings, opts.profile)
    out = opts.run_dir / "profile_render.json"
    out.write_text(json.dumps(result, indent=2), encoding="utf-8")
    print(format_profile(result))
    print(f"written: {out}")
    return result
