"""``prism-fast report``: the paper's tables, statistics and plots over one or many runs.

``report_from_config(cfg)`` takes the typed ``report`` group (``prism_fast.config_schema.ReportSchema``) as
:class:`ReportOptions` and calls
:func:`build_report`, which reads each run directory, computes everything and writes the files listed in
README "Reports" to ``report.out_dir`` (default ``<first run>/report``).
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.compute  # noqa: F401  (pa.compute)

from prism_fast.report import analyses, render
from prism_fast.report.tables import DENOMINATORS, table1, table2
from prism_fast.report.tasks import RunData, load_run

log = logging.getLogger(__name__)

FORMATS = ("markdown", "csv", "latex", "png", "html")


@dataclass
class ReportOptions:
    runs: list[str]
    labels: list[str] = field(default_factory=list)
    out_dir: str | None = None
    formats: tuple[str, ...] = FORMATS
    denominator: str = "all_tasks"
    category_denominator: str = "failures"
    text_expand_column: str = "text_expand_ratio_unique"
    spatial_requires_exec: str | bool = "auto"  # auto | true | false
    resamples: int = 10_000
    seed: int = 0
    confidence: float = 0.95
    joint_fraction: float = 0.10
    compare: list[str] = field(default_factory=list)
    max_samples: int = 1000
    max_pictures: int = 6
    title: str = "prism_fast report"


def _labels(runs: list[str], labels: list[str]) -> list[str]:
    if labels:
        if len(labels) != len(runs):
            raise ValueError(f"report.labels has {len(labels)} entries for {len(runs)} runs")
        return list(labels)
    names = [Path(r).name or str(r) for r in runs]
    # disambiguate equal directory names (e.g. Hydra multirun subdirs 0, 1, … or equal run names)
    return [n if names.count(n) == 1 else str(Path(r)) for n, r in zip(names, runs)]


def load_runs(opts: ReportOptions) -> list[RunData]:
    return [load_run(r, label, text_expand_column=opts.text_expand_column,
                     spatial_requires_exec=opts.spatial_requires_exec)
            for r, label in zip(opts.runs, _labels(opts.runs, opts.labels))]


def compute(runs: list[RunData], opts: ReportOptions) -> dict:
    """Every table and statistic as plain data (what ``stats.json`` holds)."""
    if opts.denominator not in DENOMINATORS:
        raise ValueError(f"report.denominator={opts.denominator!r}; expected one of {DENOMINATORS}")
    tasks = pa.concat_tables([r.tasks for r in runs])
    stages = {r.label: set(r.stages) for r in runs}
    boot = dict(resamples=opts.resamples, confidence=opts.confidence, seed=opts.seed)
    # Every analysis below has Spatial pass as its outcome: runs without audit rows are skipped, with a reason.
    audited = [r for r in runs if r.has("audit")]
    no_audit = [{"run": r.label, "skipped": "no audit rows in this run (Spatial unknown)"} for r in runs if not r.has("audit")]
    t_aud = pa.concat_tables([r.tasks for r in audited]) if audited else None
    rendered_only = t_aud.filter(pa.compute.equal(t_aud.column("exec_success"), True)) if t_aud is not None else None

    def per_run(fn, table, *args, **kw):
        return (fn(table, *args, **kw) if table is not None and table.num_rows else []) + no_audit

    def bins(table, col, k, label):
        res = (analyses.binned_vs_spatial(table, col, k, label) if table is not None and table.num_rows
               else {"metric": label, "column": col, "k": k, "outcome": "spatial_pass", "runs": []})
        res["runs"] = [({"run": x["run"], "skipped": "no PADVC rows in this run"}
                        if col == "padvc_raw" and not stages.get(x["run"], set()) >= {"padvc"} else x)
                       for x in res["runs"]] + no_audit
        return res

    result = {
        "runs": [{"label": r.label, "run_dir": str(r.run_dir), "stages": list(r.stages),
                  "profile": r.manifest.get("profile"), "spatial_requires_exec": r.spatial_requires_exec,
                  "tasks": r.tasks.num_rows} for r in runs],
        "notes": [n for r in runs for n in r.notes],
        "table1": table1(tasks, opts.denominator, stages),
        "table2": table2(tasks, opts.category_denominator),
        "gap": per_run(analyses.exec_spatial_gaps, t_aud, **boot),
        # PADVC and TD deciles over the rendered tasks (the population their *_mean_rendered columns use)
        "padvc_deciles": bins(rendered_only, "padvc_raw", 10, "PADVC_raw"),
        "td_deciles": bins(rendered_only, "td_center", 10, "TD_c"),
        "text_expand_quintiles": bins(t_aud, "text_expand", 5, "TextExpand"),
        "text_expand_pearson": per_run(analyses.text_expand_correlation, t_aud),
        "joint": per_run(analyses.joint_diagnosis, t_aud, opts.joint_fraction, {r.label: r.has("padvc") for r in runs}),
        "at_k": [analyses.exec_spatial_at_k(r) for r in runs if r.has("selfdebug")],
        "bootstrap": boot,
        "text_expand_column": opts.text_expand_column,
    }
    if opts.compare:
        if len(opts.compare) != 2:
            raise ValueError("report.compare takes exactly two run directories [A, B]")
        a, b = (load_run(p, lbl, text_expand_column=opts.text_expand_column,
                         spatial_requires_exec=opts.spatial_requires_exec)
                for p, lbl in zip(opts.compare, _labels(list(opts.compare), [])))
        result["compare"] = analyses.compare_runs(a, b, **boot)
    return result


def _ci(iv: dict) -> str:
    return f"{iv['estimate']:.1f} [{iv['low']:.1f}, {iv['high']:.1f}]"


def _bins_md(analysis: dict) -> str:
    out = f"### {analysis['metric']} {'deciles' if analysis['k'] == 10 else 'quintiles'} vs Spatial pass\n\n"
    for r in analysis["runs"]:
        if "skipped" in r:
            out += f"- {r['run']}: skipped — {r['skipped']}\n"
            continue
        out += f"{r['run']} (n = {r['n']}):\n\n"
        out += render.markdown_table(["bin", "n", "min", "max", "Spatial pass %"],
                                     [[str(b["bin"]), str(b["n"]), render.fmt(b["min"]), render.fmt(b["max"]),
                                       render.fmt(100 * b["outcome_mean"], "pct")] for b in r["bins"]]) + "\n"
    return out + "\n"


def stats_markdown(res: dict) -> str:
    b = res["bootstrap"]
    out = ["# Statistics\n",
           f"Bootstrap: {b['resamples']} resamples, seed {b['seed']}, {100 * b['confidence']:.0f} % percentile "
           "interval.\n", "## Exec → Spatial gap (percentage points, all tasks)\n"]
    for g in res["gap"]:
        if "skipped" in g:
            out.append(f"- {g['run']}: skipped — {g['skipped']}\n")
            continue
        rows = [[m["model"], str(m["tasks"]), render.fmt(m["exec_pct"], "pct"), render.fmt(m["spatial_pct"], "pct"),
                 _ci(m["gap"])] for m in g["models"]]
        rows.append([f"average of {g['n_models']} model(s)", "", "", "", _ci(g["average"])])
        out.append(f"{g['run']}:\n\n" + render.markdown_table(["model", "tasks", "Exec %", "Spatial %", "gap [95 % CI]"], rows))
    out.append("## Decile and quintile analyses\n")
    for key in ("padvc_deciles", "td_deciles", "text_expand_quintiles"):
        out.append(_bins_md(res[key]))
    out.append(f"### Pearson r (TextExpand = `{res['text_expand_column']}`, Spatial pass 0/1)\n")
    for p in res["text_expand_pearson"]:
        out.append(f"- {p['run']}: " + (f"skipped — {p['skipped']}" if "skipped" in p else
                                         f"r = {render.fmt(p['pearson_r'])} (n = {p['n']})"
                                         + (f", undefined: {p['undefined']}" if p.get("undefined") else "")))
    out.append("\n## Joint diagnosis (top PADVC ∩ top TextExpand vs same-size total-energy selection)\n")
    for j in res["joint"]:
        if "skipped" in j:
            out.append(f"- {j['run']}: skipped — {j['skipped']}")
            continue
        line = (f"- {j['run']}: n = {j['n']}, top {100 * j['fraction']:.0f} % = {j['top_k']} each, intersection "
                f"{j['intersection_n']} with Spatial {render.fmt(j['intersection_spatial_pct'], 'pct')} % "
                f"(all scored: {render.fmt(j['all_spatial_pct'], 'pct')} %)")
        if "energy_skipped" in j:
            line += f"; energy selection skipped — {j['energy_skipped']}"
        else:
            line += (f"; total-energy top {j['energy_n']}: Spatial {render.fmt(j['energy_spatial_pct'], 'pct')} % "
                     f"(shared with the intersection: {j['overlap_with_energy_n']})")
        out.append(line)
    if "compare" in res:
        c = res["compare"]
        out.append("\n## Two-run comparison (B − A, paired)\n")
        if "skipped" in c:
            out.append(f"skipped — {c['skipped']}")
        else:
            out.append(f"A = {c['a']}, B = {c['b']}; paired on {', '.join(c['paired_on'])}: {c['n_paired']} tasks "
                       f"(only in A: {c['only_a']}, only in B: {c['only_b']}).\n")
            rows = []
            for m in c["metrics"]:
                if "skipped" in m:
                    rows.append([m["metric"], render.DASH, render.DASH, render.DASH, m["skipped"], ""])
                    continue
                kind = "pct" if m["metric"].endswith("%") else "float"
                diff = m["diff"]
                ci = (f"{render.fmt(diff['estimate'], kind)} [{render.fmt(diff['low'], kind)}, "
                      f"{render.fmt(diff['high'], kind)}]")
                disc = f"{m['a_only']} / {m['b_only']}" if "a_only" in m else ""
                rows.append([m["metric"], str(m["n"]), render.fmt(m["mean_a"], kind), render.fmt(m["mean_b"], kind), ci, disc])
            out.append(render.markdown_table(["metric", "n", "A", "B", "B − A [95 % CI]", "A only / B only"], rows))
    if res["at_k"]:
        out.append("\n## Exec@k / Spatial@k (selfdebug)\n")
        for a in res["at_k"]:
            if "skipped" in a:
                out.append(f"- {a['run']}: skipped — {a['skipped']}")
                continue
            out.append(f"{a['run']} (source: {a['source']}):\n")
            out.append(render.markdown_table(["model", "lang", "k", "Exec@k %", "Spatial@k %"],
                                             [[r["model"], r["lang"], str(r["k"]), render.fmt(r["exec_at_k_pct"], "pct"),
                                               render.fmt(r["spatial_at_k_pct"], "pct")] for r in a["rows"]]))
    if res["notes"]:
        out.append("\n## Notes\n")
        out += [f"- {n}" for n in res["notes"]]
    return "\n".join(out) + "\n"


def _pictures(run_dir: Path, sample_id: str) -> list[tuple[str, bytes]]:
    folder = run_dir / "inspect" / sample_id
    if not folder.is_dir():
        return []
    return [(p.name, p.read_bytes()) for p in sorted(folder.glob("*.png"))]


def drilldown_samples(runs: list[RunData], out_dir: Path) -> list[dict]:
    """Every task, failing ones (Exec or Spatial) first."""
    samples = []
    multi = len(runs) > 1
    for r in runs:
        for row in r.tasks.to_pylist():
            samples.append({**row, "show_run": multi,
                            "video_rel": render._video_link(row["video_path"], r.run_dir, out_dir),
                            "pictures": _pictures(r.run_dir, row["id"])})
    samples.sort(key=lambda s: (bool(s["exec_success"]) and bool(s["spatial_pass"])))
    return samples


def _table_cells(rows: list[dict], cols: list[tuple[str, str]]) -> list[list[str]]:
    return [[str(r[k]) if k in ("run", "model", "lang") else render.fmt(r.get(k), render._kind(k)) for k, _ in cols]
            for r in rows]


def build_report(opts: ReportOptions) -> dict:
    """Compute and write the report; returns ``{"out_dir", "files", "result"}``."""
    if not opts.runs:
        raise ValueError("report.runs is empty and no run_dir was given")
    unknown = set(opts.formats) - set(FORMATS)
    if unknown:
        raise ValueError(f"unknown report format(s) {sorted(unknown)}; known: {FORMATS}")
    runs = load_runs(opts)
    res = compute(runs, opts)
    out = Path(opts.out_dir) if opts.out_dir else Path(opts.runs[0]) / "report"
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []

    def write(name: str, text: str) -> None:
        (out / name).write_text(text, encoding="utf-8")
        files.append(out / name)

    t1_md, t2_md, st_md = render.table1_markdown(res["table1"]), render.table2_markdown(res["table2"]), stats_markdown(res)
    write("stats.json", json.dumps(res, indent=1, sort_keys=True, ensure_ascii=False, default=str) + "\n")
    if "markdown" in opts.formats:
        write("table1.md", t1_md)
        write("table2.md", t2_md)
        write("stats.md", st_md)
    if "csv" in opts.formats:
        for name, rows in (("table1.csv", res["table1"]), ("table2.csv", res["table2"]),
                           ("per_task.csv", [dict(row) for r in runs for row in r.tasks.to_pylist()])):
            render.write_csv(out / name, rows)
            files.append(out / name)
    if "latex" in opts.formats:
        write("table1.tex", render.table1_latex(res["table1"]))
    plots: list[tuple[str, bytes]] = []
    if "png" in opts.formats or "html" in opts.formats:
        candidates = [("funnel.png", render.plot_funnel(res["table1"])),
                      ("padvc_deciles.png", render.plot_bins(res["padvc_deciles"], "PADVC_raw decile")),
                      ("td_deciles.png", render.plot_bins(res["td_deciles"], "TD_c decile")),
                      ("text_expand_quintiles.png", render.plot_bins(res["text_expand_quintiles"], "TextExpand quintile")),
                      ("failures.png", render.plot_failures(res["table2"]))]
        plots = [(n, png) for n, png in candidates if png is not None]
    if "png" in opts.formats:
        (out / "plots").mkdir(exist_ok=True)
        for name, png in plots:
            (out / "plots" / name).write_bytes(png)
            files.append(out / "plots" / name)
    if "html" in opts.formats:
        t1c = render._key_headers(res["table1"]) + list(render.TABLE1_COLUMNS)
        t2c = render.table2_columns(res["table2"])
        t2f = render._key_headers(res["table2"]) + render.TABLE2_TYPE_HEADERS
        samples = drilldown_samples(runs, out)
        sections = [
            ("Table 1", f'<p class="note">{render.html.escape(t1_md.split(chr(10))[0])}</p>'
             + render.html_table([h for _, h in t1c], _table_cells(res["table1"], t1c), 4 if len(runs) > 1 else 3, "table1")),
            ("Table 2", render.html_table([h for _, h in t2c], _table_cells(res["table2"], t2c), 4 if len(runs) > 1 else 3, "table2")
             + render.html_table([h for _, h in t2f], _table_cells(res["table2"], t2f), 4 if len(runs) > 1 else 3, "table2_types")),
            ("Statistics", render.markdown_html(st_md)),  # stats.md's tables as HTML tables
            ("Plots", "".join(render._img(png, "plot", name) for name, png in plots) or "<p>no plots</p>"),
            ("Samples", f'<p>filter: <input id="filter" placeholder="model, lang, id, error type"> '
             f'<span id="shown">{min(len(samples), opts.max_samples)}</span> shown</p>'
             + render.sample_drilldown(samples, opts.max_samples, opts.max_pictures)),
        ]
        write("report.html", render.html_page(opts.title, sections))
    log.info("report written to %s (%d files)", out, len(files))
    return {"out_dir": out, "files": files, "result": res}


def report_from_config(cfg) -> int:
    from omegaconf import OmegaConf

    built = build_report(OmegaConf.to_object(cfg.report).options(cfg.run_dir))  # typed: config_schema.ReportSchema
    print(render.table1_markdown(built["result"]["table1"]))  # this build's table, never a stale file
    print(f"report: {len(built['files'])} files in {built['out_dir']}")
    return 0
