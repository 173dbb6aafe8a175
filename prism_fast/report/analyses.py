"""The paper's analyses over the per-task table (pure): the Exec→Spatial gap with bootstrap CIs, decile and
quintile analyses, the joint diagnosis, a two-run paired comparison and Exec@k / Spatial@k.

Each function returns plain dicts (JSON-serialisable). When an analysis cannot be computed (a stage is absent,
too few scored tasks) it returns ``{"skipped": "<reason>"}`` instead of a number.
"""

from __future__ import annotations

import importlib
import logging
import math

import numpy as np
import pyarrow as pa

from prism_fast.report.stats import (
    Interval,
    binned_rate,
    bootstrap_mean_ci,
    mean_of_group_means_ci,
    pearson_r,
    top_fraction_mask,
    top_k_mask,
)
from prism_fast.report.tasks import column, groups

log = logging.getLogger(__name__)


def _b(table: pa.Table, name: str) -> np.ndarray:
    return np.array([bool(v) for v in table.column(name).to_pylist()], dtype=bool)


def _iv(iv: Interval) -> dict:
    return {"estimate": iv.estimate, "low": iv.low, "high": iv.high, "resamples": iv.resamples,
            "confidence": iv.confidence, "seed": iv.seed}


def exec_spatial_gaps(tasks: pa.Table, resamples: int = 10_000, confidence: float = 0.95, seed: int = 0) -> list[dict]:
    """Per run: the gap Exec % − Spatial % (percentage points, over all tasks) per model (both languages
    pooled) with a paired bootstrap CI, and the unweighted average over the run's models with a stratified
    bootstrap CI (each model's tasks resampled on their own)."""
    out = []
    for (run,), t in groups(tasks, ("run",)):
        per_model, diffs = [], []
        for (_, model), m in groups(t, ("run", "model")):
            e, s = _b(m, "exec_success").astype(float), _b(m, "spatial_pass").astype(float)
            d = 100.0 * (e - s)
            iv = bootstrap_mean_ci(d, resamples=resamples, confidence=confidence, seed=seed)
            per_model.append({"model": model, "tasks": m.num_rows, "exec_pct": 100 * e.mean(),
                              "spatial_pct": 100 * s.mean(), "gap": _iv(iv)})
            diffs.append(d)
        avg = mean_of_group_means_ci(diffs, resamples=resamples, confidence=confidence, seed=seed)
        out.append({"run": run, "models": per_model, "average": _iv(avg), "n_models": len(per_model)})
    return out


def binned_vs_spatial(tasks: pa.Table, value_col: str, k: int, label: str) -> dict:
    """Bins (k = 10 deciles, 5 quintiles) of ``value_col`` over the tasks that have a value, with the Spatial
    pass rate per bin, pooled over every model and language of each run."""
    per_run = []
    for (run,), t in groups(tasks, ("run",)):
        x = column(t, value_col)
        y = _b(t, "spatial_pass").astype(float)
        ok = ~np.isnan(x)
        if ok.sum() < 2:
            per_run.append({"run": run, "skipped": f"fewer than 2 tasks with {value_col}"})
            continue
        per_run.append({"run": run, "n": int(ok.sum()), "bins": binned_rate(x[ok], y[ok], k)})
    return {"metric": label, "column": value_col, "k": k, "outcome": "spatial_pass", "runs": per_run}


def text_expand_correlation(tasks: pa.Table) -> list[dict]:
    """Pearson r between TextExpand and Spatial pass (0/1, i.e. the point-biserial r) per run."""
    out = []
    for (run,), t in groups(tasks, ("run",)):
        x = column(t, "text_expand")
        y = _b(t, "spatial_pass").astype(float)
        ok = ~np.isnan(x)
        if ok.sum() < 2:
            out.append({"run": run, "skipped": "fewer than 2 tasks with a TextExpand score"})
            continue
        r = pearson_r(x[ok], y[ok])
        row = {"run": run, "n": int(ok.sum()), "pearson_r": None if math.isnan(r) else r}
        if math.isnan(r):
            row["undefined"] = "one of the two variables is constant"
        out.append(row)
    return out


def joint_diagnosis(tasks: pa.Table, fraction: float = 0.10, has_padvc: dict | None = None) -> list[dict]:
    """Per run, over the tasks with both a PADVC_raw and a TextExpand score: the intersection I of the top
    ``fraction`` by PADVC_raw and the top ``fraction`` by TextExpand (each ``ceil(fraction·n)`` tasks), and a
    selection of the same size |I| by total energy (top |I|). Reports the Spatial pass rate of each set and of
    all scored tasks. Skipped, with the reason, when PADVC or total energy is absent."""
    out = []
    for (run,), t in groups(tasks, ("run",)):
        if has_padvc is not None and not has_padvc.get(run, False):
            out.append({"run": run, "skipped": "no PADVC rows in this run (metrics.padvc off or not computed)"})
            continue
        p, te, en = column(t, "padvc_raw"), column(t, "text_expand"), column(t, "total_energy")
        ok = ~np.isnan(p) & ~np.isnan(te)
        if ok.sum() < 2:
            out.append({"run": run, "skipped": "fewer than 2 tasks with both PADVC_raw and TextExpand"})
            continue
        ids = np.array(t.column("id").to_pylist(), dtype=object)[ok]
        models = np.array(t.column("model").to_pylist(), dtype=object)[ok]
        y = _b(t, "spatial_pass")[ok].astype(float)
        inter = top_fraction_mask(p[ok], fraction) & top_fraction_mask(te[ok], fraction)
        m = int(inter.sum())
        row = {"run": run, "n": int(ok.sum()), "fraction": fraction, "top_k": int(math.ceil(fraction * ok.sum())),
               "intersection_n": m, "intersection_ids": [f"{a}/{b}" for a, b in zip(models[inter], ids[inter])],
               "intersection_spatial_pct": 100 * y[inter].mean() if m else None,
               "all_spatial_pct": 100 * y.mean()}
        e = en[ok]
        if np.isnan(e).any():
            row["energy_skipped"] = "total energy missing on some scored tasks (needs geo_evolution_sum_p and max_text_burden_p)"
        else:
            sel = top_k_mask(e, m)
            row["energy_n"] = m
            row["energy_spatial_pct"] = 100 * y[sel].mean() if m else None
            row["overlap_with_energy_n"] = int((sel & inter).sum())
        out.append(row)
    return out


def compare_runs(a, b, resamples: int = 10_000, confidence: float = 0.95, seed: int = 0) -> dict:
    """Paired comparison of two runs (e.g. thinking on/off) over the tasks both have. Tasks are paired on
    (model, lang, id) when the runs share model names, otherwise on (lang, id) (each run then must hold one
    model). Reports per metric the mean of A, of B, and of the per-task difference B − A with a paired
    bootstrap CI; for the binary outcomes also the discordant counts (A only / B only)."""
    ta, tb = a.tasks, b.tasks
    ma, mb = set(ta.column("model").to_pylist()), set(tb.column("model").to_pylist())
    shared = ma & mb
    if shared:
        key_names = ("model", "lang", "id")
    elif len(ma) == 1 and len(mb) == 1:
        key_names = ("lang", "id")
    else:
        return {"skipped": f"runs share no model and hold several ({sorted(ma)} vs {sorted(mb)}); cannot pair"}

    def index(t):
        keys = zip(*(t.column(k).to_pylist() for k in key_names))
        return {k: i for i, k in enumerate(keys)}

    ia, ib = index(ta), index(tb)
    common = sorted(set(ia) & set(ib))
    if not common:
        return {"skipped": "the two runs have no task in common"}
    pa_idx = np.array([ia[k] for k in common])
    pb_idx = np.array([ib[k] for k in common])
    out = {"a": a.label, "b": b.label, "paired_on": list(key_names), "n_paired": len(common),
           "only_a": len(ia) - len(common), "only_b": len(ib) - len(common), "metrics": []}
    for name, col, binary in (("Exec %", "exec_success", True), ("Spatial %", "spatial_pass", True),
                              ("TD_c", "td_center", False), ("PADVC_c", "padvc_center", False),
                              ("TextExpand", "text_expand", False)):
        if binary:
            xa = 100.0 * _b(ta, col)[pa_idx]
            xb = 100.0 * _b(tb, col)[pb_idx]
        else:
            xa, xb = column(ta, col)[pa_idx], column(tb, col)[pb_idx]
        ok = ~np.isnan(xa) & ~np.isnan(xb)
        if ok.sum() == 0:
            out["metrics"].append({"metric": name, "skipped": "no task has the value in both runs"})
            continue
        d = xb[ok] - xa[ok]
        iv = bootstrap_mean_ci(d, resamples=resamples, confidence=confidence, seed=seed)
        row = {"metric": name, "n": int(ok.sum()), "mean_a": float(xa[ok].mean()), "mean_b": float(xb[ok].mean()),
               "diff": _iv(iv)}
        if binary:
            row["a_only"] = int(((xa > 0) & (xb == 0))[ok].sum())
            row["b_only"] = int(((xb > 0) & (xa == 0))[ok].sum())
        out["metrics"].append(row)
    return out


def _selfdebug_helper():
    try:
        module = importlib.import_module("prism_fast.generate.selfdebug")
    except ImportError:
        return None
    return getattr(module, "exec_spatial_at_k", None)


def _sample_of(row: dict) -> str:
    if row.get("sample_id"):
        return str(row["sample_id"])
    return str(row["id"]).split("#r")[0]  # later rounds are keyed "<id>#r<k>"


def exec_spatial_at_k_from_rows(rows: list[dict]) -> list[dict]:
    """Exec@k / Spatial@k per (model, lang) from ``selfdebug`` rows (rounds numbered from 1): a task counts at k
    when some round ≤ k succeeded; the denominator is every task with selfdebug rows in that group."""
    by_group: dict[tuple, dict[str, dict[int, tuple[bool, bool]]]] = {}
    for r in rows:
        if r.get("round") is None:
            continue
        task = by_group.setdefault((r["model"], r["lang"]), {}).setdefault(_sample_of(r), {})
        task[int(r["round"])] = (bool(r.get("exec_success")), bool(r.get("spatial_pass")))
    out = []
    for (model, lang), tasks in sorted(by_group.items()):
        k_max = max(k for t in tasks.values() for k in t)
        n = len(tasks)
        for k in range(1, k_max + 1):
            e = sum(1 for t in tasks.values() if any(ok for j, (ok, _) in t.items() if j <= k))
            s = sum(1 for t in tasks.values() if any(ok for j, (_, ok) in t.items() if j <= k))
            out.append({"model": model, "lang": lang, "k": k, "tasks": n,
                        "exec_at_k_pct": 100 * e / n, "spatial_at_k_pct": 100 * s / n})
    return out


def exec_spatial_at_k(run) -> dict:
    """Exec@k / Spatial@k per (model, lang) of a run with ``selfdebug`` rows, through
    ``prism_fast.generate.selfdebug.exec_spatial_at_k`` when it exists, else our computation from the rows
    (the output names its source)."""
    if not run.selfdebug_rows:
        return {"run": run.label, "skipped": "no selfdebug rows in this run"}
    helper = _selfdebug_helper()
    if helper is None:
        log.warning("prism_fast.generate.selfdebug.exec_spatial_at_k not found; computing Exec@k from the rows")
        return {"run": run.label, "source": "report (computed from selfdebug rows)",
                "rows": exec_spatial_at_k_from_rows(run.selfdebug_rows)}
    out = []
    groups_: dict[tuple, list[dict]] = {}
    for r in run.selfdebug_rows:
        groups_.setdefault((r["model"], r["lang"]), []).append(r)
    for (model, lang), rows in sorted(groups_.items()):
        for k, c in sorted(helper(rows).items()):
            out.append({"model": model, "lang": lang, "k": int(k), "tasks": c["tasks"],
                        "exec_at_k_pct": 100 * c["exec"], "spatial_at_k_pct": 100 * c["spatial"]})
    return {"run": run.label, "source": "prism_fast.generate.selfdebug.exec_spatial_at_k", "rows": out}
