"""The options of ``prism-fast eval`` (and of the commands that share its settings), read from the composed
configuration: the only place that reads the DictConfig."""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

from prism_fast.audit.config import AuditConfig
from prism_fast.config_schema import DatasetSchema, ExecuteSchema, GenerateSchema, PadvcSchema
from prism_fast.execute.render import RenderConfig
from prism_fast.generate.client import ChatEndpoint, RetryPolicy
from prism_fast.generate.rounds import SelfDebugSettings
from prism_fast.generate.rows import PAPER_TEMPERATURE
from prism_fast.profile import Profile, resolve_profile


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
    padvc = OmegaConf.to_object(cfg.metrics.padvc)
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
        render=replace(execute.render_config(runs_root), text_boxes=wants_text_boxes(execute, padvc, profile)),
        execute=execute,
        padvc=padvc,
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


def wants_text_boxes(execute: ExecuteSchema, padvc: PadvcSchema, profile: Profile) -> bool:
    """Whether renders record their text boxes (execute/textboxes.py): ``execute.text_boxes`` where set, else only
    where this run's PADVC stage reads them (enabled, with the OCR backend ``scene`` under ``profile`` or OCR reuse
    ``text``): recording costs ~3 % of a render's CPU and never changes a video. The exec stage's settings hold the
    resolved value (pipeline/settings.py), so a resumed run that now needs them renders again."""
    if execute.text_boxes is not None:
        return bool(execute.text_boxes)
    ocr = padvc.ocr_settings(profile)
    # (the scene masks, and OCR reuse keyed on the boxes: metrics/padvc.py, video/ocr.py "OCR reuse")
    return bool(padvc.enabled) and (ocr.backend == "scene" or ocr.reuse == "text")


def _td_params(cfg) -> dict:
    from prism_fast.metrics.params import TDParams

    return {lang: TDParams(float(p.td.mu), float(p.td.sigma), float(p.td.eps), source=str(p.get("source", "paper")))
            for lang, p in cfg.lang.params.items()}


def _padvc_params(cfg) -> dict:
    from prism_fast.metrics.params import PadvcParams

    return {lang: PadvcParams(float(p.padvc.mu), float(p.padvc.sigma), float(p.padvc.eps), str(p.get("source", "paper")))
            for lang, p in cfg.lang.params.items()}


def model_output_dir(opts: EvalOptions) -> Path:
    from urllib.parse import quote

    return opts.run_dir / "models" / quote(opts.model_name, safe="")


# -- prism-fast generate ------------------------------------------------------------------------------------------
@dataclass
class GenerateOptions:
    run_dir: Path
    model_name: str
    endpoint: ChatEndpoint
    retry: RetryPolicy
    timeout_s: float  # configured; applied when Q-GEN-3 is fixed (see effective_timeout)
    concurrency: int
    rounds: int
    languages: list[str]
    dataset: DatasetSchema
    profile: Profile
    render: RenderConfig | None = None  # rounds > 1
    audit_cfg: AuditConfig | None = None  # rounds > 1
    selfdebug: SelfDebugSettings = field(default_factory=SelfDebugSettings)
    retry_failed: bool = False
    flush_rows: int = 16
    config_snapshot: dict = field(default_factory=dict)
    eval_overrides: list[str] = field(default_factory=list)  # this invocation's overrides that `eval` needs too


def endpoint_from_mapping(model: dict, generate: dict) -> ChatEndpoint:
    """``model.endpoint`` (+ ``generate.max_tokens`` / ``temperature``) → ChatEndpoint. The ``model`` group stays an
    open mapping (config_schema.py: its options differ in shape: a provider's endpoint, thinking style, price, or
    none at all), so its endpoint is checked here, before any request."""
    ep = model.get("endpoint")
    if not isinstance(ep, dict):
        raise SystemExit(f"model {model.get('name')!r} has no `endpoint` section, so it cannot be queried; use "
                         "model=local (any OpenAI-compatible base URL) or one of the provider configs in conf/model/")
    for key in ("base_url", "model_id"):
        if not ep.get(key) or ep.get(key) == "???":
            raise SystemExit(f"model.endpoint.{key} is not set (model {model.get('name')!r})")
    price = ep.get("price") or {}
    from prism_fast.secret_env import register_secret_names

    register_secret_names([ep.get("api_key_env")])  # kept out of every child process, whatever its name
    return ChatEndpoint(
        base_url=str(ep["base_url"]), model_id=str(ep["model_id"]), api_key_env=ep.get("api_key_env") or None,
        max_tokens=int(ep.get("max_tokens") or generate.get("max_tokens") or 8192),
        temperature=float(generate.get("temperature", PAPER_TEMPERATURE)),
        thinking=ep.get("thinking"), thinking_style=str(ep.get("thinking_style") or "none"),
        thinking_budget=ep.get("thinking_budget"), reasoning_effort=str(ep.get("reasoning_effort") or "medium"),
        extra_body=dict(ep.get("extra_body") or {}),
        price_prompt_per_mtok=price.get("prompt_per_mtok"), price_completion_per_mtok=price.get("completion_per_mtok"),
    )


def generate_options_from_config(cfg) -> GenerateOptions:
    from omegaconf import OmegaConf

    base = options_from_config(cfg)  # dataset, languages, profile, render and audit settings as `eval` reads them
    g: GenerateSchema = OmegaConf.to_object(cfg.generate)  # typed (prism_fast/config_schema.py)
    model = OmegaConf.to_container(cfg.model, resolve=True)
    sd = g.selfdebug
    return GenerateOptions(
        run_dir=base.run_dir, model_name=base.model_name,
        endpoint=endpoint_from_mapping(model, {"max_tokens": g.max_tokens, "temperature": g.temperature}),
        retry=RetryPolicy(max_attempts=g.max_attempts, base_s=g.backoff.base_s, factor=g.backoff.factor,
                          max_s=g.backoff.max_s),
        timeout_s=g.timeout_s, concurrency=g.concurrency, rounds=g.rounds, languages=base.languages,
        dataset=base.dataset, profile=base.profile, render=base.render, audit_cfg=base.audit_cfg,
        selfdebug=SelfDebugSettings(workers=int(sd.workers or os.cpu_count() or 1),
                                    error_tail_chars=sd.error_tail_chars, max_findings=sd.max_findings),
        retry_failed=base.retry_failed, flush_rows=g.flush_rows, config_snapshot=dict(base.config_snapshot),
        eval_overrides=eval_overrides(base.model_name),
    )


def _generate_only(override: str) -> bool:
    key = override.split("=", 1)[0].lstrip("+~")
    return key in ("command", "retry_failed", "generate") or key.startswith(("generate.", "hydra."))


def eval_overrides(model_name: str) -> list[str]:
    """The overrides of this ``generate`` call that its ``eval`` needs too (dataset, lang, runs_root, run_name,
    profile, model.*: they decide the run directory and the tasks), without the generation-only ones. The
    printed next step used to be ``prism-fast eval model=<name>`` alone, which evaluated another dataset in
    another run directory."""
    overrides: list[str] = []
    try:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            overrides = [str(o) for o in HydraConfig.get().overrides.task]
    except Exception:  # noqa: BLE001 - library use: no Hydra, no overrides
        overrides = []
    keep = [o for o in overrides if not _generate_only(o)]
    if not any(o.split("=", 1)[0].lstrip("+~") == "model" for o in keep):
        keep.insert(0, f"model={model_name}")
    return keep


def eval_command(opts: "GenerateOptions") -> str:
    return " ".join(["prism-fast", "eval", *(shlex.quote(o) for o in opts.eval_overrides)])
