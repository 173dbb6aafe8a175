"""The config's schema: the typed dataclasses of the config groups, registered in Hydra's ConfigStore.

One declaration per setting. The YAML files in ``conf/`` hold values (each group file starts from its schema:
``defaults: [/schema_<group>@_here_, _self_]``); the code receives typed objects, made by
``OmegaConf.to_object`` of the composed group: :class:`ExecuteSchema` (``execute``, package ``prism_fast.execute``;
:meth:`ExecuteSchema.render_config` gives the renderer's ``RenderConfig``), ``AuditSchema`` (``audit``: built from
:class:`prism_fast.audit.config.AuditConfig`, whose fields and reference values are the only declaration of the
thresholds, so ``conf/audit/reference.yaml`` repeats none), :class:`PadvcSchema` (``metrics.padvc``, read by the
PADVC stage), :class:`ReportSchema` (``report``; :meth:`ReportSchema.options` gives ``ReportOptions``),
:class:`GenerateSchema`, :class:`DatasetSchema`, :class:`ClusterSchema`.

Hydra type-checks every value while it composes the config and names the key, before any work or any file:
``Value 'abc' of type 'str' could not be converted to Integer … full_key: execute.workers``; an unknown key
(``audit.no_such_key=1``) is refused the same way. The schemas are stored as plain (group-less) configs so that
``prism-fast --help`` does not list them as group options. ``model`` and ``lang`` stay open: their options
differ in shape.

A schema field left ``MISSING`` must come from the YAML; ``dataset.path`` stays missing for ``dataset=prism``
(there is no default file), which the entry point reports before anything is written.
"""

from __future__ import annotations

from dataclasses import MISSING as _DC_MISSING
from dataclasses import dataclass, field, fields, make_dataclass
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

from omegaconf import MISSING


@dataclass
class SubsetSchema:
    enabled: bool = MISSING
    fraction: float = MISSING
    seed: int = MISSING


@dataclass
class DatasetSchema:
    name: str = MISSING
    path: Optional[str] = MISSING  # sample: null (the bundled file); prism: required
    format: str = MISSING
    strict: bool = MISSING
    ids: Any = None  # a list of ids or a path to a file with one id per line
    limit: Optional[int] = None
    subset: SubsetSchema = field(default_factory=SubsetSchema)


@dataclass
class ExecuteLimitsSchema:
    address_space_gb: Optional[float] = MISSING
    memory_gb: Optional[float] = MISSING
    scratch_mb: Optional[int] = MISSING
    tmp_mb: Optional[int] = MISSING
    cpu_seconds: Optional[int] = MISSING
    file_size_mb: Optional[int] = MISSING
    processes: Optional[int] = MISSING
    open_files: Optional[int] = MISSING
    output_bytes: Optional[int] = MISSING


@dataclass
class CacheSchema:
    enabled: bool = MISSING
    dir: Optional[str] = None


@dataclass
class TexCacheSchema:
    enabled: bool = MISSING
    dir: Optional[str] = None
    format: bool = True  # compiles of manim's default template start from a checked LaTeX format (texformat.py)


@dataclass
class ExecuteSchema:
    """``execute``: how package ``prism_fast.execute`` renders a script (conf/execute/*.yaml)."""

    quality: str = MISSING
    timeout_s: int = MISSING
    manim_bin: Optional[str] = None
    workers: Optional[int] = None
    prefork: bool = MISSING
    play_hashing: bool = MISSING
    fast_paths: bool = True  # exact fast paths of manim helpers in the render child (execute/fastpaths.py)
    share_glyph_paths: bool = True  # with them: render copies share glyphs' parsed SVG paths (guarded)
    # record every written frame's text boxes (execute/textboxes.py, PADVC's scene masks): null = only where the
    # PADVC stage reads them (pipeline/options.py wants_text_boxes: the `scene` OCR backend or OCR reuse `text`)
    text_boxes: Optional[bool] = None
    sandbox: str = MISSING
    limits: ExecuteLimitsSchema = field(default_factory=ExecuteLimitsSchema)
    network_isolation: bool = MISSING
    cache: CacheSchema = field(default_factory=CacheSchema)
    tex_cache: TexCacheSchema = field(default_factory=TexCacheSchema)
    schedule: str = MISSING
    head_start: bool = True  # renders in the driver while Ray starts (pipeline/headstart.py)
    # render every successful script twice and record both videos' sha256 (execute/determinism.py; rows:
    # determinism_sha256, determinism_equal; warned when they differ)
    determinism_check: bool = False

    def __post_init__(self) -> None:
        if self.schedule not in (MISSING, "longest_first", "input"):
            raise ValueError(f"execute.schedule: expected longest_first or input, got {self.schedule!r}")

    def render_config(self, runs_root: Path):
        """The :class:`prism_fast.execute.render.RenderConfig` of these settings: sizes in the sandbox's units,
        cache folders resolved under ``runs_root`` (the TeX cache per render-environment fingerprint)."""
        from prism_fast.execute.fingerprint import fingerprint_hash
        from prism_fast.execute.render import RenderConfig, resolve_bin
        from prism_fast.execute.sandbox import Limits

        lim = self.limits
        cache_dir = tex_cache_dir = None
        if self.cache.enabled:
            cache_dir = str(Path(self.cache.dir or (runs_root / ".cache" / "render")).resolve())
        if self.tex_cache.enabled:
            # one directory per render environment (manim, TeX, dvisvgm, fonts): an upgrade never reuses entries
            fp = fingerprint_hash(resolve_bin(self.manim_bin or "manim"))
            tex_cache_dir = str((Path(self.tex_cache.dir or (runs_root / ".cache" / "tex")) / fp).resolve())
        kwargs = dict(
            quality_flag=f"-{self.quality}",
            timeout_s=self.timeout_s,
            limits=Limits(
                address_space_mb=int(lim.address_space_gb * 1024) if lim.address_space_gb else None,
                cpu_seconds=lim.cpu_seconds,
                file_size_mb=lim.file_size_mb,
                max_processes=lim.processes,
                open_files=lim.open_files,
                memory_mb=int(lim.memory_gb * 1024) if lim.memory_gb else None,
                tmp_mb=lim.tmp_mb or 512,
            ),
            sandbox=self.sandbox,
            scratch_mb=lim.scratch_mb or 2048,
            isolate_network=self.network_isolation,
            cache_dir=cache_dir,
            tex_cache_dir=tex_cache_dir,
            tex_format=bool(self.tex_cache.format),
            play_hashing=self.play_hashing,
            fast_paths=bool(self.fast_paths),
            share_glyph_paths=bool(self.share_glyph_paths),
            determinism_check=bool(self.determinism_check),
        )
        if self.manim_bin:
            kwargs["manim_bin"] = self.manim_bin
        if lim.output_bytes:
            kwargs["output_tail_bytes"] = lim.output_bytes
        return RenderConfig(**kwargs)


@dataclass
class TDSchema:
    enabled: bool = MISSING
    tau: int = MISSING


@dataclass
class TextExpandSchema:
    enabled: bool = MISSING


@dataclass
class OcrSchema:
    """``metrics.padvc.ocr``: the fields of :class:`prism_fast.video.ocr.OcrSettings` but ``backend`` (which is
    ``metrics.padvc.ocr_backend``)."""

    provider: str = MISSING
    use_cls: bool = MISSING
    use_rec: bool = MISSING
    text_score: float = MISSING
    box_thresh: float = MISSING
    unclip_ratio: float = MISSING
    det_limit_side_len: int = MISSING
    paddle_model_dir: Optional[str] = None
    scene_masks: str = MISSING
    scene_min_opacity: float = MISSING
    scene_pad: int = MISSING
    reuse: str = "exact"  # exact | text (experimental, changes numbers; video/ocr.py "OCR reuse")


@dataclass
class PadvcModelsSchema:
    zh: Optional[str] = None
    en: Optional[str] = None
    hf_cache: Optional[str] = None


@dataclass
class PadvcSchema:
    """``metrics.padvc``: the PADVC stage's settings; the stage reads these typed values (no defaults in code)."""

    enabled: bool = MISSING
    p: float = MISSING
    event_threshold: float = MISSING
    text_dilate: int = MISSING
    text_stride: int = MISSING
    ocr_backend: str = MISSING
    ocr: OcrSchema = field(default_factory=OcrSchema)
    embedding_backend: str = MISSING
    models: PadvcModelsSchema = field(default_factory=PadvcModelsSchema)
    embedding_device: str = MISSING
    ocr_cache_dir: Optional[str] = None
    frame_cache_dir: Optional[str] = None
    workers: Optional[int] = None

    def padvc_config(self):
        from prism_fast.metrics.padvc import PadvcConfig

        return PadvcConfig(p=self.p, event_threshold_abs=self.event_threshold, text_dilate=self.text_dilate,
                           text_stride=self.text_stride)

    def ocr_settings(self, profile):
        """The OCR that runs under ``profile`` (improved: detection only, Q-PADVC-15)."""
        from dataclasses import asdict

        # (video.ocr, not metrics.padvc: the driver decides text boxes before its first render, without torch)
        from prism_fast.video.ocr import OcrSettings, ocr_settings_for_profile

        return ocr_settings_for_profile(OcrSettings(backend=self.ocr_backend, **asdict(self.ocr)), profile)

    def pvd_config(self, device: str):
        from prism_fast.metrics.pvd import PvdConfig

        return PvdConfig(embedding_backend=self.embedding_backend, zh_model=self.models.zh, en_model=self.models.en,
                         hf_cache=self.models.hf_cache, device=self.embedding_device or "cpu")

    def frame_cache(self, runs_root: Path) -> str:
        """``frame_cache_dir``, else ``<runs_root>/.cache/ocr_frames`` (beside the render and audit caches, so every
        run and every multirun job under one runs_root shares it)."""
        if self.frame_cache_dir:
            return str(Path(self.frame_cache_dir).absolute())
        return str((Path(runs_root) / ".cache" / "ocr_frames").resolve())


@dataclass
class MetricsSchema:
    device: str = MISSING
    decoder: str = MISSING
    chunk_frames: int = MISSING
    td: TDSchema = field(default_factory=TDSchema)
    padvc: PadvcSchema = field(default_factory=PadvcSchema)
    text_expand: TextExpandSchema = field(default_factory=TextExpandSchema)


@dataclass
class ClusterSchema:
    name: str = MISSING  # local | ray
    address: Optional[str] = MISSING  # local: null (own instance); ray: required (<head>:6379, ray://…, auto)
    num_cpus: Optional[int] = None
    num_gpus: Optional[int] = None
    runtime_env: Dict[str, Any] = field(default_factory=dict)


@dataclass
class BootstrapSchema:
    resamples: int = MISSING
    seed: int = MISSING
    confidence: float = MISSING


@dataclass
class Table2Schema:
    category_denominator: str = MISSING


@dataclass
class JointSchema:
    fraction: float = MISSING


@dataclass
class HtmlSchema:
    max_samples: int = MISSING
    max_pictures: int = MISSING


@dataclass
class ReportSchema:
    """``report``: what package ``prism_fast.report`` builds (conf/report/*.yaml)."""

    runs: List[str] = field(default_factory=list)
    labels: List[str] = field(default_factory=list)
    out_dir: Optional[str] = None
    formats: List[str] = MISSING
    denominator: str = MISSING
    table2: Table2Schema = field(default_factory=Table2Schema)
    text_expand_column: str = MISSING
    spatial_requires_exec: Union[str, bool] = MISSING  # auto | true | false
    bootstrap: BootstrapSchema = field(default_factory=BootstrapSchema)
    joint: JointSchema = field(default_factory=JointSchema)
    compare: List[str] = field(default_factory=list)
    html: HtmlSchema = field(default_factory=HtmlSchema)

    def options(self, run_dir: str):
        """The :class:`prism_fast.report.cli.ReportOptions` of these settings (``runs`` empty: ``run_dir``)."""
        from prism_fast.report.cli import ReportOptions

        return ReportOptions(
            runs=list(self.runs) or [str(run_dir)], labels=list(self.labels), out_dir=self.out_dir,
            formats=tuple(self.formats), denominator=self.denominator,
            category_denominator=self.table2.category_denominator, text_expand_column=self.text_expand_column,
            spatial_requires_exec=self.spatial_requires_exec, resamples=self.bootstrap.resamples,
            seed=self.bootstrap.seed, confidence=self.bootstrap.confidence, joint_fraction=self.joint.fraction,
            compare=list(self.compare), max_samples=self.html.max_samples, max_pictures=self.html.max_pictures)


@dataclass
class BackoffSchema:
    base_s: float = MISSING
    factor: float = MISSING
    max_s: float = MISSING


@dataclass
class SelfDebugSchema:
    workers: Optional[int] = None
    error_tail_chars: int = MISSING
    max_findings: int = MISSING


@dataclass
class GenerateSchema:
    """``generate``: the client settings of ``prism-fast generate`` (conf/generate/*.yaml)."""

    temperature: float = MISSING
    max_tokens: int = MISSING
    concurrency: int = MISSING
    timeout_s: float = MISSING
    max_attempts: int = MISSING
    backoff: BackoffSchema = field(default_factory=BackoffSchema)
    flush_rows: int = MISSING
    rounds: int = MISSING
    selfdebug: SelfDebugSchema = field(default_factory=SelfDebugSchema)


_TYPES = {"float": float, "int": int, "bool": bool, "str": str, float: float, int: int, bool: bool, str: str}


def _audit_config(self):
    """The :class:`prism_fast.audit.config.AuditConfig` of these settings (all but ``enabled`` and ``cache``)."""
    from prism_fast.audit.config import AuditConfig

    return AuditConfig(**{f.name: getattr(self, f.name) for f in fields(AuditConfig)})


def audit_schema():
    """``audit``: ``AuditConfig``'s fields (types and defaults: the authors' reference values, declared once in
    prism_fast/audit/config.py) plus the pipeline's ``enabled`` and ``cache`` switches."""
    from prism_fast.audit.config import AuditConfig

    spec = [("enabled", bool, field(default=True)), ("cache", bool, field(default=True))]
    for f in fields(AuditConfig):
        typ = _TYPES.get(f.type, Any)
        default = f.default if f.default is not _DC_MISSING else MISSING
        spec.append((f.name, typ, field(default=default)))
    cls = make_dataclass("AuditSchema", spec, namespace={"audit_config": _audit_config})
    cls.__module__ = __name__  # picklable as prism_fast.config_schema.AuditSchema (Ray ships it to actors)
    return cls


AuditSchema = audit_schema()

SCHEMAS = {"dataset": DatasetSchema, "execute": ExecuteSchema, "metrics": MetricsSchema, "cluster": ClusterSchema,
           "audit": AuditSchema, "report": ReportSchema, "generate": GenerateSchema}


def register() -> None:
    """Store ``schema_<group>`` for every group with a schema (idempotent)."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    for group, node in SCHEMAS.items():
        cs.store(name=f"schema_{group}", node=node)


def compose_group(path: str, *overrides: str):
    """The typed object of one config node (e.g. ``metrics.padvc``) of the default config with ``overrides``
    (Hydra syntax, type-checked): what a stage receives, for tools and tests that drive one stage directly."""
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    with initialize_config_module(config_module="prism_fast.conf", version_base=None):
        cfg = compose(config_name="config", overrides=list(overrides))
    return OmegaConf.to_object(OmegaConf.select(cfg, path))
