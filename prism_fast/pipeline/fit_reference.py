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


def fit_preflight_videos(tasks, exec_rows: dict, run_dir: Path, model: str) -> set[str]:
    """Ids of the selected tasks whose reference video exists; stops with the fix when there is none."""
    have = {t.id for t in tasks
            if (p := (exec_rows.get((t.language, t.id)) or {}).get("video_path")) and Path(p).is_file()}
    if not have:
        with_rows = sum(1 for t in tasks if (t.language, t.id) in exec_rows)
        raise SystemExit(f"fit-reference: none of the {len(tasks)} selected task(s) has a rendered video in {run_dir} "
                         f"(model {model}: {with_rows} exec row(s) for them). Run `prism-fast eval model={model}` "
                         "with the same dataset/lang settings first, or point fit_reference.run at that run.")
    missing = len(tasks) - len(have)
    if missing:
        log.warning("fit-reference: %d of %d selected task(s) have no video in %s; they are error records of the fit",
                    missing, len(tasks), run_dir)
    return have


def fit_reference_from_config(cfg) -> dict:
    from omegaconf import OmegaConf

    from prism_fast.metrics.padvc import fit_padvc_reference
    from prism_fast.metrics.pvd import PvdCalculator
    from prism_fast.metrics.td import fit_td_reference, reference_record
    from prism_fast.metrics.padvc_run import PadvcWorker, ocr_cache_dir, padvc_reference_record, pvd_preflight
    from prism_fast.pipeline.options import options_from_config
    from prism_fast.pipeline.run import select_run_tasks
    from prism_fast.store import ResultsStore

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    opts = options_from_config(cfg)
    fr = cfg.get("fit_reference") or {}
    run_dir = Path(fr.get("run") or opts.run_dir).absolute()
    if not (run_dir / "rows").is_dir():
        raise SystemExit(f"fit-reference: {run_dir} is not a run directory (run `prism-fast eval model=reference` "
                         "with the same dataset/lang settings first, or set fit_reference.run=<run dir>)")
    out_dir = Path(fr.get("out") or (run_dir / "fit_reference"))
    profile = opts.profile
    store = ResultsStore(run_dir)
    exec_rows = store.rows_by_key("exec", opts.model_name)
    tasks = select_run_tasks(opts, run_dir)
    do_padvc = bool(fr.get("padvc", True))
    do_td = bool(fr.get("td", True))
    if not (do_padvc or do_td):
        raise SystemExit("fit-reference: nothing to fit (fit_reference.padvc=false and fit_reference.td=false)")
    videos = fit_preflight_videos(tasks, exec_rows, run_dir, opts.model_name)

    # What PADVC needs, checked before anything is fitted or written (it used to fail only at the end with
    # "PADVC fit: no usable rows (0 ok of 2)", the cause inside a JSONL file): the OCR engine and the PVD
    # embedding models for the prompts of the tasks that have a video.
    s = opts.padvc
    worker = pvd_calc = None
    if do_padvc:
        try:
            worker = PadvcWorker(s, profile, ocr_cache_dir(s.ocr_cache_dir, run_dir), s.frame_cache(opts.runs_root),
                                 "opencv", opts.metrics_device)
        except Exception as exc:  # noqa: BLE001 - re-raised as the message a user can act on
            raise SystemExit(f"fit-reference: PADVC's OCR engine ({s.ocr_backend}) did not start: "
                             f"{type(exc).__name__}: {exc}\nFix the metrics.padvc.ocr* settings (`prism-fast doctor` "
                             "shows what this machine has), or fit TD only: fit_reference.padvc=false.") from None
        pvd_calc = PvdCalculator(s.pvd_config(opts.metrics_device), profile=profile)
        langs = sorted({t.language for t in tasks if t.id in videos})
        pvd_preflight(pvd_calc, langs, command="fit-reference")
        for t in tasks:  # every prompt once, now (cached): a prompt PVD cannot score is named before the fit
            if t.id in videos:
                try:
                    pvd_calc.compute(t.instruction)
                except Exception as exc:  # noqa: BLE001
                    raise SystemExit(f"fit-reference: PVD failed on the prompt of {t.id}: {type(exc).__name__}: "
                                     f"{exc}\nFit TD only with fit_reference.padvc=false, or drop the task "
                                     "(dataset.ids=...).") from None
    out_dir.mkdir(parents=True, exist_ok=True)
    from prism_fast.pipeline.lifecycle import record_invocation

    record_invocation(run_dir, opts.config_snapshot)

    from prism_fast.pipeline.progress import StageProgress

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
            bar = StageProgress(f"padvc {lang}", len(lang_tasks))  # OCR, one video at a time
            recs = []
            try:
                for t in lang_tasks:
                    recs.append(padvc_reference_record(t, (exec_rows.get((lang, t.id)) or {}).get("video_path"),
                                                       worker, pvd_calc, profile))
                    bar.update(1)
            finally:
                bar.close()
            _write_jsonl(lang_dir / "padvc_reference_raw_scores.jsonl", recs)
            fit = fit_padvc_reference(recs, profile=profile)
            fit.update(padvc_config=worker.config.describe(), ocr_signature=worker.ocr.signature(), language=lang,
                       dataset_jsonl=str(opts.dataset.path or "bundled"), ocr_cache_dir=worker.ocr_cache_dir)
            (lang_dir / "padvc_norm_params.json").write_text(json.dumps(fit, ensure_ascii=False, indent=2))
            entry["padvc"] = {"mu": fit["mu"], "sigma": fit["sigma"], "eps": fit["eps"]}
            results.setdefault(lang, {})["padvc"] = fit
        if do_td:
            recs = []
            bar = StageProgress(f"td {lang}", len(lang_tasks))
            try:
                for t in lang_tasks:
                    row = {"id": t.id, "source_id": t.id, "language": lang,
                           "video_path": (exec_rows.get((lang, t.id)) or {}).get("video_path")}
                    recs.append(reference_record(row, None, profile=profile, pixel_threshold=opts.td_tau))
                    bar.update(1)
            finally:
                bar.close()
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
