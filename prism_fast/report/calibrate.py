"""``prism-fast calibrate``: the spatial auditor against human gold labels (the paper's data-construction
step 2).

Gold file: JSON Lines ``{"id", "spatial_pass": 0|1, "kinds": ["overlap"|"oob"|"leak", ...]}``, optionally
with ``"model"`` (the row then matches only that model's audit row; without it, every model's row of that id)
and a free-text ``"note"``. The positive class is "has a violation": the auditor predicts positive when
``visual_structure_pass != 1`` (an audit that failed to run is a positive prediction, counted separately as
``audit_failed``), and per kind when the row's breakdown has at least one finding of that kind. Gold ids
without an audit row in the run are listed as ``missing`` and left out of the matrices.

Over several run directories (a Hydra multirun over audit thresholds, one run dir per job) the summary table
has one row per run with the audit settings that differ between the runs (read from each ``run.json``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from prism_fast.report import render
from prism_fast.report.tasks import BREAKDOWN_KEY, ISSUE_KINDS
from prism_fast.store import ResultsStore

log = logging.getLogger(__name__)


def bundled_gold_path() -> Path:
    return Path(str(resources.files("prism_fast.report") / "data" / "gold_bundled.jsonl"))


def load_gold(path: str | Path) -> list[dict]:
    """Read and validate a gold file (line numbers in the errors)."""
    out, seen = [], set()
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"{path}:{n}: not JSON ({exc})") from None
            if not isinstance(row.get("id"), str) or row.get("spatial_pass") not in (0, 1, True, False):
                raise ValueError(f"{path}:{n}: needs a string 'id' and 'spatial_pass' 0/1")
            kinds = row.get("kinds") or []
            bad = set(kinds) - set(ISSUE_KINDS)
            if bad:
                raise ValueError(f"{path}:{n}: unknown kind(s) {sorted(bad)}; expected {ISSUE_KINDS}")
            if bool(row["spatial_pass"]) and kinds:
                raise ValueError(f"{path}:{n}: spatial_pass=1 with violation kinds {kinds}")
            if not bool(row["spatial_pass"]) and not kinds:
                raise ValueError(f"{path}:{n}: spatial_pass=0 needs at least one kind")
            key = (row.get("model"), row["id"])
            if key in seen:
                raise ValueError(f"{path}:{n}: duplicate gold row {key}")
            seen.add(key)
            out.append({"id": row["id"], "model": row.get("model"), "spatial_pass": int(bool(row["spatial_pass"])),
                        "kinds": sorted(set(kinds)), "note": row.get("note")})
    return out


def confusion(pairs: list[tuple[bool, bool]]) -> dict:
    """``pairs`` of (gold positive, predicted positive) → counts, precision, recall, F1, accuracy (None when
    the denominator is 0)."""
    tp = sum(1 for g, p in pairs if g and p)
    fp = sum(1 for g, p in pairs if not g and p)
    fn = sum(1 for g, p in pairs if g and not p)
    tn = sum(1 for g, p in pairs if not g and not p)
    prec = tp / (tp + fp) if tp + fp else None
    rec = tp / (tp + fn) if tp + fn else None
    f1 = 2 * prec * rec / (prec + rec) if prec is not None and rec is not None and prec + rec else None
    n = tp + fp + fn + tn
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn, "n": n, "precision": prec, "recall": rec, "f1": f1,
            "accuracy": (tp + tn) / n if n else None}


def _breakdown(row: dict) -> dict:
    b = row.get("visual_issue_breakdown")
    if isinstance(b, str):
        try:
            b = json.loads(b)
        except ValueError:
            b = {}
    return b or {}


def calibrate_run(run_dir: str | Path, gold: list[dict], model: str | None = None) -> dict:
    """The auditor of one run against ``gold``."""
    run_dir = Path(run_dir)
    store = ResultsStore(run_dir)
    audit = [r for r in store.read("audit").to_pylist() if model is None or r["model"] == model]
    by_id: dict[str, list[dict]] = {}
    for r in audit:
        by_id.setdefault(r["id"], []).append(r)
    matched, missing, other_model = [], [], 0
    models = {r["model"] for r in audit}
    for g in gold:
        if g["model"] is not None and g["model"] not in models:
            other_model += 1  # a label for another model's answers (e.g. the reference answers)
            continue
        rows = [r for r in by_id.get(g["id"], []) if g["model"] is None or r["model"] == g["model"]]
        if not rows:
            missing.append({"id": g["id"], "model": g["model"]})
            continue
        for r in rows:
            b = _breakdown(r)
            pred_kinds = [k for k in ISSUE_KINDS if int(b.get(BREAKDOWN_KEY[k], 0) or 0) > 0]
            matched.append({"model": r["model"], "lang": r["lang"], "id": g["id"],
                            "gold_pass": g["spatial_pass"], "gold_kinds": g["kinds"],
                            "pred_pass": int(r.get("visual_structure_pass") == 1),
                            "audit_success": r.get("audit_success"), "pred_kinds": pred_kinds,
                            "audit_error": r.get("error_msg"), "report": r.get("visual_audit_report"),
                            "note": g.get("note")})
    overall = confusion([(not m["gold_pass"], not m["pred_pass"]) for m in matched])
    per_kind = {k: confusion([(k in m["gold_kinds"], k in m["pred_kinds"]) for m in matched]) for k in ISSUE_KINDS}
    manifest = {}
    if (run_dir / "run.json").exists():
        manifest = json.loads((run_dir / "run.json").read_text(encoding="utf-8"))
    audit_cfg = (manifest.get("config") or {}).get("audit") or {}
    return {
        "run_dir": str(run_dir), "label": run_dir.name, "matched": len(matched), "missing": missing,
        "gold_other_models": other_model,
        "audit_failed": sum(1 for m in matched if m["audit_success"] != 1),
        "overall": overall, "per_kind": per_kind,
        "false_positives": [m for m in matched if m["gold_pass"] and not m["pred_pass"]],
        "false_negatives": [m for m in matched if not m["gold_pass"] and m["pred_pass"]],
        "kind_mismatches": [m for m in matched if sorted(m["gold_kinds"]) != sorted(m["pred_kinds"])],
        "audit_settings": _flatten(audit_cfg),
    }


def _flatten(d, prefix="audit.") -> dict:
    out = {}
    for k, v in (d or {}).items():
        if isinstance(v, dict):
            out.update(_flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def expand_runs(paths: list[str]) -> list[Path]:
    """Run directories; a path without ``rows/`` (e.g. a Hydra multirun folder) is searched two levels down."""
    out = []
    for p in map(Path, paths):
        if (p / "rows").is_dir():
            out.append(p)
            continue
        found = sorted({x.parent for x in p.glob("*/rows")} | {x.parent for x in p.glob("*/*/rows")})
        if not found:
            raise FileNotFoundError(f"{p}: no run directory (no rows/ folder here or two levels down)")
        out += found
    return out


def tradeoff(results: list[dict]) -> tuple[list[str], list[dict]]:
    """The audit settings that differ between runs, and one row per run with them and the scores."""
    keys = sorted({k for r in results for k in r["audit_settings"]})
    varying = [k for k in keys if len({json.dumps(r["audit_settings"].get(k), sort_keys=True) for r in results}) > 1]
    rows = []
    for r in results:
        row = {"run": r["run_dir"]}
        row.update({k: r["audit_settings"].get(k) for k in varying})
        o = r["overall"]
        row.update(tp=o["tp"], fp=o["fp"], fn=o["fn"], tn=o["tn"], precision=o["precision"], recall=o["recall"], f1=o["f1"])
        for kind in ISSUE_KINDS:
            row[f"{kind}_precision"] = r["per_kind"][kind]["precision"]
            row[f"{kind}_recall"] = r["per_kind"][kind]["recall"]
        rows.append(row)
    return varying, rows


def _confusion_md(c: dict) -> str:
    return render.markdown_table(
        ["", "gold violation", "gold clean"],
        [["auditor: violation", str(c["tp"]), str(c["fp"])], ["auditor: clean", str(c["fn"]), str(c["tn"])]]
    ) + (f"\nprecision {render.fmt(c['precision'])}, recall {render.fmt(c['recall'])}, F1 {render.fmt(c['f1'])}, "
         f"accuracy {render.fmt(c['accuracy'])} (n = {c['n']})\n")


def calibration_markdown(results: list[dict], gold_path: str) -> str:
    out = [f"# Auditor calibration\n\nGold: `{gold_path}`. Positive = the sample has a spatial violation.\n"]
    for r in results:
        out.append(f"## {r['run_dir']}\n")
        out.append(f"{r['matched']} matched audit rows; {len(r['missing'])} gold ids without an audit row; "
                   f"{r['gold_other_models']} gold rows for models not in this run; "
                   f"{r['audit_failed']} audits that failed to run (counted as 'violation').\n")
        out.append("### Overall\n\n" + _confusion_md(r["overall"]))
        rows = [[k, str(c["tp"]), str(c["fp"]), str(c["fn"]), str(c["tn"]), render.fmt(c["precision"]),
                 render.fmt(c["recall"]), render.fmt(c["f1"])] for k, c in r["per_kind"].items()]
        out.append("### Per kind\n\n" + render.markdown_table(
            ["kind", "TP", "FP", "FN", "TN", "precision", "recall", "F1"], rows))
        for title, key in (("False positives (gold clean, auditor violation)", "false_positives"),
                           ("False negatives (gold violation, auditor clean)", "false_negatives")):
            items = r[key]
            out.append(f"### {title}: {len(items)}\n")
            out += [f"- {m['model']}/{m['id']}: auditor kinds {m['pred_kinds'] or '—'}"
                    f"{'; audit error: ' + str(m['audit_error']) if m['audit_error'] else ''}" for m in items]
            out.append("")
    if len(results) > 1:
        varying, rows = tradeoff(results)
        cols = ["run"] + varying + ["tp", "fp", "fn", "tn", "precision", "recall", "f1"]
        out.append("## Trade-off across runs\n")
        out.append(render.markdown_table(cols, [[str(r[c]) if c == "run" or c in varying or c in ("tp", "fp", "fn", "tn")
                                                 else render.fmt(r[c]) for c in cols] for r in rows]))
    return "\n".join(out) + "\n"


def calibration_html(results: list[dict], gold_path: str, max_pictures: int = 6) -> str:
    sections = [("Summary", "<pre>" + render.html.escape(calibration_markdown(results, gold_path)) + "</pre>")]
    for r in results:
        samples = []
        for m in r["false_positives"] + r["false_negatives"]:
            folder = Path(r["run_dir"]) / "inspect" / m["id"]
            pics = [(p.name, p.read_bytes()) for p in sorted(folder.glob("*.png"))] if folder.is_dir() else []
            samples.append({"run": r["label"], "model": m["model"], "lang": m["lang"], "id": m["id"],
                            "exec_success": True, "spatial_pass": bool(m["pred_pass"]),
                            "error_type": "false positive" if m["gold_pass"] else "false negative",
                            "error_text": m.get("note"), "audit_error": m["audit_error"],
                            "audit_report": m["report"], "video_rel": None, "pictures": pics})
        sections.append((f"Misclassified samples — {r['run_dir']}",
                         render.sample_drilldown(samples, 10_000, max_pictures) or "<p>none</p>"))
    return render.html_page("prism_fast auditor calibration", sections)


@dataclass
class CalibrateOptions:
    runs: list[str]
    gold: str | None = None
    model: str | None = None
    out_dir: str | None = None
    max_pictures: int = 6
    formats: tuple[str, ...] = ("markdown", "csv", "html")
    extra: dict = field(default_factory=dict)


def calibrate(opts: CalibrateOptions) -> dict:
    gold_path = opts.gold or str(bundled_gold_path())
    gold = load_gold(gold_path)
    runs = expand_runs(opts.runs)
    results = [calibrate_run(r, gold, opts.model) for r in runs]
    out = Path(opts.out_dir) if opts.out_dir else runs[0] / "calibrate"
    out.mkdir(parents=True, exist_ok=True)
    files = []
    payload = {"gold": gold_path, "runs": results}
    (out / "calibration.json").write_text(json.dumps(payload, indent=1, sort_keys=True, ensure_ascii=False, default=str)
                                          + "\n", encoding="utf-8")
    files.append(out / "calibration.json")
    if "markdown" in opts.formats:
        (out / "calibration.md").write_text(calibration_markdown(results, gold_path), encoding="utf-8")
        files.append(out / "calibration.md")
    if "csv" in opts.formats:
        render.write_csv(out / "tradeoff.csv", tradeoff(results)[1])
        files.append(out / "tradeoff.csv")
    if "html" in opts.formats:
        (out / "calibration.html").write_text(calibration_html(results, gold_path, opts.max_pictures), encoding="utf-8")
        files.append(out / "calibration.html")
    return {"out_dir": out, "files": files, "results": results}


def calibrate_from_config(cfg) -> int:
    c = cfg.calibrate
    runs = c.get("run")
    if runs is None:
        runs = [str(cfg.run_dir)]
    elif isinstance(runs, str):
        runs = [runs]
    else:
        runs = [str(x) for x in runs]
    opts = CalibrateOptions(runs=runs, gold=c.get("gold"), model=c.get("model"), out_dir=c.get("out_dir"),
                            max_pictures=int(c.get("max_pictures", 6)))
    built = calibrate(opts)
    print((built["out_dir"] / "calibration.md").read_text(encoding="utf-8"))
    print(f"calibrate: {len(built['files'])} files in {built['out_dir']}")
    return 0
