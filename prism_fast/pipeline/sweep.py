"""Hydra multirun: one run directory per job and a sweep summary at the end.

``prism-fast -m lang=en,zh metrics.td.tau=20,25,30`` runs one job per combination. In multirun mode each job's
run directory is Hydra's job directory (``<runs_root>/multirun/<date>/<time>/<job num>/``, with its ``.hydra/``
written by the job, ``pipeline/lifecycle.py::record_invocation``), so jobs never share rows. Renders and audits are still computed once: they come from the content-addressed render cache
(``execute.cache``) and audit cache (``audit.cache``) under ``runs_root``, so a sweep over metric settings only
re-runs the metric stages (each job's exec/audit rows say ``cache_hit`` / ``audit_cache_hit``).

:class:`SweepSummary` is a Hydra callback (registered in ``conf/config.yaml``). When the sweep ends it reads every
job's overrides and ``summary.json`` and writes ``sweep_summary.{md,json,csv}`` into the sweep directory: one line
per (job, model, language) with the swept values and the headline numbers.
"""

from __future__ import annotations

import csv
import io
import json
import logging
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

METRICS = ("tasks", "exec_pct", "spatial_pct", "td_center_mean_rendered", "u_td_mean_all", "text_expand_ratio_mean",
           "render_mean_s")


def job_run_dir(default: Path) -> Path:
    """The run directory for this process: Hydra's job directory in multirun mode, else ``default``."""
    try:
        from hydra.core.hydra_config import HydraConfig
        from hydra.types import RunMode
    except ImportError:  # pragma: no cover - hydra is a dependency
        return default
    if not HydraConfig.initialized():
        return default
    hc = HydraConfig.get()
    if hc.mode == RunMode.MULTIRUN:
        return Path(hc.runtime.output_dir)
    return default


def _read_overrides(job_dir: Path) -> list[str]:
    import yaml

    path = job_dir / ".hydra" / "overrides.yaml"
    if not path.exists():
        return []
    return [str(x) for x in (yaml.safe_load(path.read_text(encoding="utf-8")) or [])]


def collect(sweep_dir: Path) -> list[dict[str, Any]]:
    """One record per (job, model, language) of the finished jobs under ``sweep_dir`` (in job number order)."""
    records = []
    jobs = sorted((p for p in Path(sweep_dir).iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name))
    for job in jobs:
        overrides = _read_overrides(job)
        summary_path = job / "summary.json"
        if not summary_path.exists():
            records.append({"job": int(job.name), "overrides": overrides, "status": "no summary"})
            continue
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
        for g in summary.get("groups", []):
            rec = {"job": int(job.name), "overrides": overrides, "status": "ok", "model": g.get("model"),
                   "lang": g.get("lang")}
            rec.update({k: g.get(k) for k in METRICS})
            rec["stage_seconds"] = summary.get("stage_seconds", {})
            records.append(rec)
    _mark_swept(records)
    return records


def _mark_swept(records: list[dict]) -> None:
    """``swept``: the overrides of a record whose key has more than one value across the jobs, or is missing
    from some job; the overrides shared by every job are the sweep's common settings."""
    per_job = {r["job"]: {o.partition("=")[0]: o.partition("=")[2] for o in r["overrides"]} for r in records}
    keys = {k for ov in per_job.values() for k in ov}
    swept = {k for k in keys if len({ov.get(k) for ov in per_job.values()}) > 1}
    for r in records:
        r["swept"] = [o for o in r["overrides"] if o.partition("=")[0] in swept]


def format_markdown(records: list[dict]) -> str:
    head = ["job", "swept", "model", "lang", *METRICS, "stage s"]
    lines = ["## prism_fast sweep summary", "", "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in records:
        cells = [str(r["job"]), " ".join(r["swept"]) or "-"]
        if r["status"] != "ok":
            cells += [r["status"]] + ["-"] * (len(head) - 3)
        else:
            cells += [str(r.get("model")), str(r.get("lang"))]
            cells += ["-" if r.get(k) is None else str(r[k]) for k in METRICS]
            cells.append(", ".join(f"{k}={v}" for k, v in r["stage_seconds"].items()))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def write_sweep_summary(sweep_dir: Path) -> list[dict]:
    sweep_dir = Path(sweep_dir)
    records = collect(sweep_dir)
    (sweep_dir / "sweep_summary.json").write_text(json.dumps(records, ensure_ascii=False, indent=2), encoding="utf-8")
    (sweep_dir / "sweep_summary.md").write_text(format_markdown(records), encoding="utf-8")
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["job", "swept", "status", "model", "lang", *METRICS])
    for r in records:
        writer.writerow([r["job"], " ".join(r["swept"]), r["status"], r.get("model"), r.get("lang"),
                         *[r.get(k) for k in METRICS]])
    (sweep_dir / "sweep_summary.csv").write_text(buf.getvalue(), encoding="utf-8")
    return records


try:
    from hydra.experimental.callback import Callback as _Callback
except ImportError:  # pragma: no cover
    _Callback = object


class SweepSummary(_Callback):
    """Hydra callback: writes the sweep summary when a multirun ends (nothing in single-run mode)."""

    def on_multirun_end(self, config, **kwargs) -> None:
        sweep_dir = Path(config.hydra.sweep.dir)
        if not sweep_dir.exists():
            return
        records = write_sweep_summary(sweep_dir)
        print(format_markdown(records))
        print(f"sweep summary: {sweep_dir / 'sweep_summary.md'}")
