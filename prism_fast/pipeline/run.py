"""``prism-fast eval``: dataset + predictions → Exec → (later stages) → rows in the store + a summary.

The driver owns the results store (single writer); Ray actors return rows. Every stage skips keys already in
the store (resume after a crash), except failed rows when ``retry_failed`` is set.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import logging
import os
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
    restrict_to_predictions: bool = False
    retry_failed: bool = False
    ray_address: str | None = None
    ray_num_cpus: int | None = None
    ray_num_gpus: int | None = None
    ray_runtime_env: dict = field(default_factory=dict)
    config_snapshot: dict = field(default_factory=dict)


# -- configuration → typed options (the only place that reads the DictConfig) -------------------------------
def options_from_config(cfg) -> EvalOptions:
    from omegaconf import OmegaConf

    from prism_fast.execute.render import render_config_from_mapping

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
        render=render_config_from_mapping(OmegaConf.to_container(cfg.render, resolve=True)),
        render_workers=cfg.render.get("workers"),
        restrict_to_predictions=restrict,
        retry_failed=bool(cfg.retry_failed),
        ray_address=cfg.cluster.address,
        ray_num_cpus=cfg.cluster.num_cpus,
        ray_num_gpus=cfg.cluster.num_gpus,
        ray_runtime_env=OmegaConf.to_container(cfg.cluster.runtime_env) or {},
        config_snapshot=OmegaConf.to_container(cfg, resolve=True),
    )


def run_eval_from_config(cfg) -> dict:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return run_eval(options_from_config(cfg))


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
    from prism_fast.execute.fingerprint import environment_fingerprint

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
        "environment": environment_fingerprint(),
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
def _pending(store: ResultsStore, stage: str, opts: EvalOptions, inputs: list[ScriptInput]) -> list[ScriptInput]:
    done = store.done_keys(stage, include_failed=not opts.retry_failed)
    return [i for i in inputs if (opts.model_name, i.language, i.id) not in done]


class _RowSink:
    """Buffers rows and appends them to the store in small batches (and at the end)."""

    def __init__(self, store: ResultsStore, stage: str, flush_every: int = 8):
        self.store, self.stage, self.flush_every, self.buf = store, stage, flush_every, []
        self.count = 0

    def add(self, row: dict) -> None:
        self.buf.append(row)
        self.count += 1
        if len(self.buf) >= self.flush_every:
            self.flush()

    def flush(self) -> None:
        if self.buf:
            self.store.append(self.stage, self.buf)
            self.buf = []


def run_exec_stage(opts: EvalOptions, store: ResultsStore, inputs: list[ScriptInput], progress) -> None:
    import ray

    from prism_fast.pipeline.actors import RenderActor
    from prism_fast.pipeline.streaming import stream_map

    pending = _pending(store, "exec", opts, inputs)
    sink = _RowSink(store, "exec")
    key = {"model": opts.model_name, "profile": opts.profile.name}
    bar = progress("exec", len(pending))
    for inp in pending:
        if inp.script is None:  # no script to render: an Exec failure, recorded as such
            sink.add({**key, "lang": inp.language, "id": inp.id, "status": "error", "error_kind": "no_script",
                      "error_detail": inp.clean_status, "success": False, "skipped": False,
                      "error": f"no script ({inp.clean_status})"})
            bar.update(1)
    to_render = [i for i in pending if i.script is not None]
    if to_render:
        n = max(1, min(len(to_render), int(opts.render_workers or ray.cluster_resources().get("CPU", 1))))
        video_dir = str(opts.run_dir / "videos" / opts.model_name)
        actors = [RenderActor.remote(opts.render, opts.profile, video_dir) for _ in range(n)]
        by_id = {i.id: i for i in to_render}

        def on_result(item, row):
            inp = by_id[item[0]]
            sink.add({**key, **row, "lang": inp.language})
            bar.update(1, failed=row.get("status") != "ok")

        def on_error(item, exc):
            inp = by_id[item[0]]
            sink.add({**key, "lang": inp.language, "id": inp.id, "status": "error", "error_kind": "worker_lost",
                      "error_detail": f"{type(exc).__name__}: {exc}"[:4000], "success": False, "skipped": False,
                      "error": "render worker lost"})
            bar.update(1, failed=True)

        stream_map(actors, "render", ((i.id, i.script) for i in to_render), on_result, on_error)
        for a in actors:
            ray.kill(a)
    sink.flush()
    bar.close()


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
    scripts_dir = run_dir / "scripts" / opts.model_name
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

    summary = summarize_run(store, opts.model_name, [t.id for t in tasks], timings)
    text = format_summary(summary)
    (run_dir / "summary.json").write_text(json.dumps(summary, ensure_ascii=False, indent=2), encoding="utf-8")
    (run_dir / "summary.md").write_text(text, encoding="utf-8")
    print(text)
    print(f"\nrun directory: {run_dir}")
    return summary
