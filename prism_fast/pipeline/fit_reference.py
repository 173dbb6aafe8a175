"""``prism-fast fit-reference lang=…``: fit the per-language centering parameters from reference videos.

Input: a run directory of ``prism-fast eval model=reference`` (its exec rows give the rendered reference videos,
the dataset gives the prompts). For every selected task, like the authors' ``fit_reference_padvc.py`` and
``fit_reference_td.py`` (padvc.md §11, td.md §5):
- the video is the exec row's ``video_path`` if it exists, else the row is an error ("video missing");
- PADVC_raw is computed with no gates and no details (an undecodable video scores 0.0 in reference, Q-PADVC-3;
  it is an error row in improved); TD_raw as in the TD stage;
- μ, σ (PADVC, eps = 1e-8) and μ, σ, eps (TD, eps = smallest positive TD_raw) per language, quirks of the profile.

Outputs in ``fit_reference.out`` (default ``<run>/fit_reference``): per language
``padvc_reference_raw_scores.jsonl``, ``padvc_norm_params.json``, ``td_reference_raw_scores.jsonl``,
``td_center_params.json``, and one ``fitted_params.yaml`` in the shape of ``conf/lang/*.yaml`` (``params:``
block). The fitted values are printed beside the paper's from ``conf/lang/``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

log = logging.getLogger("prism_fast")


def _write_jsonl(path: Path, rows) -> None:
    with open(path, "w", encoding="utf-8") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")


def padvc_reference_record(task, video_path: str | None, worker, pvd_calc, profile) -> dict:
    """One ``padvc_reference_raw_scores.jsonl`` record (§11)."""
    from prism_fast.metrics.padvc import VideoDecodeError

    rec = {"id": task.id, "source_id": task.id, "language": task.language, "video_path": video_path}
    if not video_path or not Path(video_path).exists():
        rec.update(status="error", error="FileNotFoundError: video missing")
        return rec
    try:
        pvd = pvd_calc.compute(task.instruction)
        details = worker.details(video_path, pvd)
    except VideoDecodeError as exc:
        if profile.fixes("Q-PADVC-3"):   # improved: excluded from the fit
            rec.update(status="error", error=f"RuntimeError: video decode failed ({exc})")
        else:                            # reference: evaluate_single returned 0.0, which enters the fit
            rec.update(status="ok", padvc_raw=0.0)
        return rec
    except Exception as exc:  # noqa: BLE001 - recorded per row, as the toolkit's pool does
        rec.update(status="error", error=f"{type(exc).__name__}: {exc}")
        return rec
    rec.update(status="ok", padvc_raw=float(details["padvc_raw"]))
    return rec


def fit_reference_from_config(cfg) -> dict:
    from omegaconf import OmegaConf

    from prism_fast.metrics.padvc import fit_padvc_reference
    from prism_fast.metrics.pvd import PvdCalculator
    from prism_fast.metrics.td import fit_td_reference, reference_record
    from prism_fast.pipeline.padvc_stage import PadvcWorker, frame_cache_dir, padvc_settings, pvd_config
    from prism_fast.pipeline.run import options_from_config, select_run_tasks
    from prism_fast.store import ResultsStore

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    opts = options_from_config(cfg)
    fr = cfg.get("fit_reference") or {}
    run_dir = Path(fr.get("run") or opts.run_dir)
    if not (run_dir / "rows").is_dir():
        raise SystemExit(f"fit-reference: {run_dir} is not a run directory (run `prism-fast eval model=reference` "
                         "first, or set fit_reference.run=...)")
    out_dir = Path(fr.get("out") or (run_dir / "fit_reference"))
    out_dir.mkdir(parents=True, exist_ok=True)
    profile = opts.profile
    store = ResultsStore(run_dir)
    exec_rows = {(r["lang"], r["id"]): r for r in store.read("exec").to_pylist() if r["model"] == opts.model_name}
    tasks = select_run_tasks(opts, run_dir)
    do_padvc = bool(fr.get("padvc", True))
    do_td = bool(fr.get("td", True))

    s = padvc_settings(opts)
    worker = pvd_calc = None
    if do_padvc:
        worker = PadvcWorker(s, profile, s.get("ocr_cache_dir") or str(run_dir / "ocr_cache"),
                             frame_cache_dir(s, opts),
                             "opencv", opts.metrics_device)
        pvd_calc = PvdCalculator(pvd_config(s, opts.metrics_device), profile=profile)

    paper = OmegaConf.to_container(cfg.lang.params, resolve=True)
    fitted: dict = {}
    results: dict = {}
    for lang in opts.languages:
        lang_tasks = [t for t in tasks if t.language == lang]
        if not lang_tasks:
            continue
        lang_dir = out_dir / lang
        lang_dir.mkdir(exist_ok=True)
        entry = {"source": f"fit:{run_dir.name}:{profile.name}"}
        if do_padvc:
            recs = [padvc_reference_record(t, (exec_rows.get((lang, t.id)) or {}).get("video_path"), worker,
                                           pvd_calc, profile) for t in lang_tasks]
            _write_jsonl(lang_dir / "padvc_reference_raw_scores.jsonl", recs)
            fit = fit_padvc_reference(recs, profile=profile)
            fit.update(padvc_config=worker.config.describe(), ocr_signature=worker.ocr.signature(), language=lang,
                       dataset_jsonl=str(opts.dataset.path or "bundled"), ocr_cache_dir=worker.ocr_cache_dir)
            (lang_dir / "padvc_norm_params.json").write_text(json.dumps(fit, ensure_ascii=False, indent=2))
            entry["padvc"] = {"mu": fit["mu"], "sigma": fit["sigma"], "eps": fit["eps"]}
            results.setdefault(lang, {})["padvc"] = fit
        if do_td:
            recs = []
            for t in lang_tasks:
                row = {"id": t.id, "source_id": t.id, "language": lang,
                       "video_path": (exec_rows.get((lang, t.id)) or {}).get("video_path")}
                recs.append(reference_record(row, None, profile=profile, pixel_threshold=opts.td_tau))
            _write_jsonl(lang_dir / "td_reference_raw_scores.jsonl", recs)
            fit = fit_td_reference(recs, profile=profile)
            fit.update(threshold=opts.td_tau, language=lang, dataset_jsonl=str(opts.dataset.path or "bundled"))
            (lang_dir / "td_center_params.json").write_text(json.dumps(fit, ensure_ascii=False, indent=2))
            entry["td"] = {"mu": fit["mu"], "sigma": fit["sigma"], "eps": fit["eps"]}
            results.setdefault(lang, {})["td"] = fit
        fitted[lang] = entry

    yaml_path = out_dir / "fitted_params.yaml"
    yaml_path.write_text("# prism-fast fit-reference output; use as a conf/lang params block\n" +
                         OmegaConf.to_yaml(OmegaConf.create({"params": fitted})), encoding="utf-8")
    print(format_fit_table(fitted, paper))
    print(f"\nwritten: {yaml_path}")
    return {"fitted": fitted, "paper": paper, "out_dir": str(out_dir)}


def format_fit_table(fitted: dict, paper: dict) -> str:
    lines = ["| lang | metric | param | fitted | paper |", "|---|---|---|---|---|"]
    for lang, entry in fitted.items():
        for metric in ("padvc", "td"):
            if metric not in entry:
                continue
            for key in ("mu", "sigma", "eps"):
                ref = ((paper.get(lang) or {}).get(metric) or {}).get(key)
                lines.append(f"| {lang} | {metric} | {key} | {entry[metric][key]:.6g} | "
                             f"{'' if ref is None else f'{ref:.6g}'} |")
    return "\n".join(lines)
