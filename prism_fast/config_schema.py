"""Structured-config schemas of the config groups, registered in Hydra's ConfigStore (issue #15, item 9).

Without them a wrong type surfaced as a traceback deep in a stage, after the run directory was made
(``dataset.limit=abc``). With them Hydra type-checks every value while it composes the config and names the key:
``Value 'abc' of type 'str' could not be converted to Integer … full_key: dataset.limit``; an unknown key is
refused the same way. The YAML files in ``conf/`` keep the values; each group file starts from its schema
(``defaults: [/schema_<group>@_here_, _self_]``). The schemas are stored as plain (group-less) configs so that
``prism-fast --help`` does not list them as group options.

Groups with a schema: ``dataset``, ``render``, ``metrics`` (``td`` and ``text_expand`` typed; ``padvc`` is an open
mapping, checked by ``PadvcConfig`` / the OCR settings when the stage starts), ``cluster`` and ``audit`` (built
from :class:`prism_fast.audit.config.AuditConfig`, so a new threshold needs no second declaration). ``model``,
``lang``, ``report`` and ``generate`` stay open: their options differ in shape.

A schema field left ``MISSING`` must come from the YAML; ``dataset.path`` stays missing for ``dataset=prism``
(there is no default file), which the entry point reports before anything is written.
"""

from __future__ import annotations

from dataclasses import MISSING as _DC_MISSING
from dataclasses import dataclass, field, fields, make_dataclass
from typing import Any, Dict, Optional

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
class RenderLimitsSchema:
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
class RenderSchema:
    quality: str = MISSING
    timeout_s: int = MISSING
    manim_bin: Optional[str] = None
    workers: Optional[int] = None
    prefork: bool = MISSING
    play_hashing: bool = MISSING
    sandbox: str = MISSING
    limits: RenderLimitsSchema = field(default_factory=RenderLimitsSchema)
    network_isolation: bool = MISSING
    cache: CacheSchema = field(default_factory=CacheSchema)
    tex_cache: CacheSchema = field(default_factory=CacheSchema)


@dataclass
class TDSchema:
    enabled: bool = MISSING
    tau: int = MISSING


@dataclass
class TextExpandSchema:
    enabled: bool = MISSING


@dataclass
class MetricsSchema:
    device: str = MISSING
    decoder: str = MISSING
    chunk_frames: int = MISSING
    td: TDSchema = field(default_factory=TDSchema)
    padvc: Any = MISSING
    text_expand: TextExpandSchema = field(default_factory=TextExpandSchema)


@dataclass
class ClusterSchema:
    name: str = MISSING  # local | ray
    address: Optional[str] = MISSING  # local: null (own instance); ray: required (<head>:6379, ray://…, auto)
    num_cpus: Optional[int] = None
    num_gpus: Optional[int] = None
    runtime_env: Dict[str, Any] = field(default_factory=dict)


_TYPES = {"float": float, "int": int, "bool": bool, "str": str, float: float, int: int, bool: bool, str: str}


def audit_schema():
    """``AuditConfig``'s fields (types and defaults) plus the pipeline's ``enabled`` and ``cache`` switches."""
    from prism_fast.audit.config import AuditConfig

    spec = [("enabled", bool, field(default=True)), ("cache", bool, field(default=True))]
    for f in fields(AuditConfig):
        typ = _TYPES.get(f.type, Any)
        default = f.default if f.default is not _DC_MISSING else MISSING
        spec.append((f.name, typ, field(default=default)))
    return make_dataclass("AuditSchema", spec)


SCHEMAS = {"dataset": DatasetSchema, "render": RenderSchema, "metrics": MetricsSchema, "cluster": ClusterSchema}


def register() -> None:
    """Store ``schema_<group>`` for every group with a schema (idempotent)."""
    from hydra.core.config_store import ConfigStore

    cs = ConfigStore.instance()
    for group, node in SCHEMAS.items():
        cs.store(name=f"schema_{group}", node=node)
    cs.store(name="schema_audit", node=audit_schema())
