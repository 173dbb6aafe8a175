"""Writers of the report: Markdown, CSV, LaTeX, PNG plots and one self-contained HTML file.

Numbers are formatted in one place (:func:`fmt`): percentages with 1 decimal, other floats with 4 (the
authors' table formatter's convention, text_expand.md §8), a missing value as "—". CSV files keep full
precision and leave missing values empty.
"""

from __future__ import annotations

import base64
import csv
import html
import io
import json
import os
import re
from pathlib import Path

import numpy as np

from prism_fast.report.tables import (
    DENOMINATOR_TEXT,
    TABLE1_COLUMNS,
    TABLE2_CATEGORY_HEADERS,
    TABLE2_TYPE_HEADERS,
)

DASH = "—"


def fmt(value, kind: str = "float") -> str:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return DASH
    if kind == "pct":
        return f"{value:.1f}"
    if kind == "int":
        return str(int(value))
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value))
    return f"{value:.4f}"


def _kind(key: str) -> str:
    if key.endswith("_pct"):
        return "pct"
    if key.endswith("_n") or key in ("tasks", "failures"):
        return "int"
    return "float"


def markdown_table(headers: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def _key_headers(rows: list[dict]) -> list[tuple[str, str]]:
    multi_run = len({r["run"] for r in rows}) > 1
    return ([("run", "run")] if multi_run else []) + [("model", "model"), ("lang", "lang"), ("tasks", "tasks")]


def table1_markdown(rows: list[dict]) -> str:
    cols = _key_headers(rows) + [(k, h) for k, h in TABLE1_COLUMNS]
    body = [[fmt(r.get(k), _kind(k)) if k not in ("run", "model", "lang") else str(r[k]) for k, _ in cols] for r in rows]
    den = rows[0]["denominator"] if rows else "all_tasks"
    note = (f"Exec % over all tasks; Spatial / Overlap / Leak / OOB % over {DENOMINATOR_TEXT[den]} "
            f"(`report.denominator={den}`). PADVC_c and TD_c: mean over tasks that rendered and were scored. "
            f"{DASH} = the stage is absent from the run.{_nondeterminism_note(rows)}\n\n")
    return note + markdown_table([h for _, h in cols], body)


def _nondeterminism_note(rows: list[dict]) -> str:
    """Table 1's note on samples whose videos may not reproduce (execute/determinism.py); empty when none."""
    out = ""
    marked = sum(r.get("nondeterminism_marked_n") or 0 for r in rows)
    if marked:
        out += (f" {marked} samples with nondeterminism marks (unseeded randomness, clock reads: their videos, TD_c "
                f"and PADVC_c may not reproduce).")
    checked = sum(r.get("determinism_checked_n") or 0 for r in rows)
    if checked:
        differ = sum(r.get("determinism_differ_n") or 0 for r in rows)
        out += f" Rendered twice: {differ} of {checked} samples gave different videos."
    mismatched = sum(r.get("audit_video_mismatch_n") or 0 for r in rows)
    unchecked = sum(r.get("video_not_checked_n") or 0 for r in rows)
    if mismatched or unchecked:
        out += (f" Video witness: {mismatched} samples fail Spatial as audit_video_mismatch (their audited checkpoints "
                f"are not what their video shows); {unchecked} audited samples could not be checked (no video, or no "
                "audited segment).")
    return out


def table2_columns(rows: list[dict]) -> list[tuple[str, str]]:
    return (_key_headers(rows) + [("failures", "failures"), ("failure_pct", "Failure %")] + TABLE2_CATEGORY_HEADERS
            + [("render_mean_s", "render mean s"), ("render_median_s", "render median s"),
               ("render_p95_s", "render p95 s")])


def table2_markdown(rows: list[dict]) -> str:
    cols = table2_columns(rows)
    body = [[fmt(r.get(k), _kind(k)) if k not in ("run", "model", "lang") else str(r[k]) for k, _ in cols] for r in rows]
    den = rows[0]["category_denominator"] if rows else "failures"
    out = (f"Failure % over all tasks; category columns as % of the {'failures' if den == 'failures' else 'tasks'} "
           f"(`report.table2.category_denominator={den}`); render time over successful, not-skipped renders.\n\n")
    out += markdown_table([h for _, h in cols], body)
    fine = _key_headers(rows) + TABLE2_TYPE_HEADERS
    out += "\nFine error types (counts):\n\n"
    out += markdown_table([h for _, h in fine],
                          [[fmt(r.get(k), _kind(k)) if k not in ("run", "model", "lang") else str(r[k]) for k, _ in fine]
                           for r in rows])
    return out


def write_csv(path: Path, rows: list[dict]) -> None:
    keys: list[str] = []
    for r in rows:
        keys += [k for k in r if k not in keys]
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        for r in rows:
            w.writerow({k: (json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else ("" if v is None else v))
                        for k, v in r.items()})


def _tex_escape(text: str) -> str:
    out = str(text)
    for a, b in (("\\", r"\textbackslash{}"), ("&", r"\&"), ("%", r"\%"), ("$", r"\$"), ("#", r"\#"),
                 ("_", r"\_"), ("{", r"\{"), ("}", r"\}")):
        out = out.replace(a, b) if a != "\\" else out.replace(a, "\x00")
    return out.replace("\x00", r"\textbackslash{}")


LATEX_HEADERS = ["Model", "Lang", r"Exec (\%)", r"Spatial (\%)", r"PADVC$_c$", r"TD$_c$", r"Overlap (\%)",
                 r"Leak (\%)", r"OOB (\%)"]


def table1_latex(rows: list[dict]) -> str:
    """Table 1 in the paper's column order: Model, Lang, Exec, Spatial, PADVC_c, TD_c, Overlap, Leak, OOB."""
    lines = [r"\begin{tabular}{ll" + "r" * 7 + "}", r"\toprule", " & ".join(LATEX_HEADERS) + r" \\", r"\midrule"]
    multi_run = len({r["run"] for r in rows}) > 1
    for r in rows:
        name = f"{r['model']} ({r['run']})" if multi_run else r["model"]
        cells = [_tex_escape(name), _tex_escape(r["lang"])]
        cells += [fmt(r.get(k), _kind(k)).replace(DASH, "--") for k, _ in TABLE1_COLUMNS]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------------------------
# plots
# ---------------------------------------------------------------------------------------------------------------

def _figure():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"svg.hashsalt": "prism_fast", "font.size": 9})
    return plt


def _png(fig, plt) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def plot_funnel(t1: list[dict]) -> bytes:
    plt = _figure()
    multi = len({x["run"] for x in t1}) > 1
    fig, ax = plt.subplots(figsize=(max(4.5, (1.9 if multi else 1.0) * len(t1) + 1.5), 3.2))
    labels = [f"{r['model']}\n{r['lang']}" + (f"\n{r['run']}" if multi else "") for r in t1]
    x = np.arange(len(t1))
    ax.bar(x - 0.2, [r["exec_pct"] or 0 for r in t1], 0.4, label="Exec %")
    ax.bar(x + 0.2, [r.get("spatial_pct") or 0 for r in t1], 0.4, label="Spatial %")
    ax.set_xticks(x, labels, fontsize=7)
    ax.set_ylim(0, 118)
    ax.set_yticks([0, 20, 40, 60, 80, 100])
    ax.set_ylabel("% of tasks")
    ax.legend(loc="upper center", ncol=2, fontsize=8)
    ax.set_title("Exec → Spatial funnel")
    fig.tight_layout()
    return _png(fig, plt)


def plot_bins(analysis: dict, xlabel: str) -> bytes | None:
    runs = [r for r in analysis["runs"] if "bins" in r]
    if not runs:
        return None
    plt = _figure()
    fig, ax = plt.subplots(figsize=(5, 3))
    for r in runs:
        ax.plot([b["bin"] for b in r["bins"]], [100 * b["outcome_mean"] for b in r["bins"]], marker="o", label=r["run"])
    ax.set_xlabel(xlabel)
    ax.set_ylabel("Spatial pass %")
    ax.set_ylim(-2, 102)
    ax.set_title(f"{analysis['metric']} bins vs Spatial pass")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return _png(fig, plt)


def plot_failures(t2: list[dict]) -> bytes | None:
    if not any(r["failures"] for r in t2):
        return None
    plt = _figure()
    fig, ax = plt.subplots(figsize=(max(4, 0.9 * len(t2) + 3), 3))
    x = np.arange(len(t2))
    bottom = np.zeros(len(t2))
    for key, label in TABLE2_CATEGORY_HEADERS:
        counts = np.array([r[key.replace("_pct", "_n")] for r in t2], dtype=float)
        ax.bar(x, counts, 0.6, bottom=bottom, label=label)
        bottom += counts
    ax.set_xticks(x, [f"{r['model']}\n{r['lang']}" for r in t2])
    ax.set_ylabel("failed tasks")
    ax.set_title("Exec failures by paper category")
    ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1, 0.5))
    fig.tight_layout()
    return _png(fig, plt)


# ---------------------------------------------------------------------------------------------------------------
# HTML
# ---------------------------------------------------------------------------------------------------------------

CSS = """
body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:1.5em auto;max-width:1200px;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}
th,td{border:1px solid #ccc;padding:.25em .5em;text-align:right}th{background:#f0f0f0}
td.k,th.k{text-align:left}.note{color:#555;font-size:.88em}
img.plot{max-width:100%;border:1px solid #ddd;margin:.3em}
details{border:1px solid #ddd;margin:.25em 0;padding:.3em .6em}summary{cursor:pointer}
.fail{color:#b00}.pass{color:#070}pre{background:#f7f7f7;padding:.5em;overflow-x:auto;white-space:pre-wrap}
div.wrap{overflow-x:auto}img.inspect{max-width:420px;border:1px solid #aaa;margin:.2em}#filter{width:20em;padding:.2em}
"""

FILTER_JS = """
(function(){
  var box=document.getElementById('filter');
  if(!box){return;}
  box.addEventListener('input',function(){
    var q=box.value.toLowerCase();
    var items=document.querySelectorAll('details.sample');
    var shown=0;
    for(var i=0;i<items.length;i++){
      var hit=items[i].getAttribute('data-key').indexOf(q)>=0;
      items[i].style.display=hit?'':'none';
      if(hit){shown++;}
    }
    document.getElementById('shown').textContent=String(shown);
  });
})();
"""


def html_table(headers: list[str], rows: list[list[str]], key_cols: int = 0, table_id: str | None = None) -> str:
    tid = f' id="{html.escape(table_id)}"' if table_id else ""
    head = "".join(f'<th class="k">{html.escape(h)}</th>' if i < key_cols else f"<th>{html.escape(h)}</th>"
                   for i, h in enumerate(headers))
    body = ""
    for r in rows:
        body += "<tr>" + "".join(f'<td class="k">{html.escape(c)}</td>' if i < key_cols else f"<td>{html.escape(c)}</td>"
                                 for i, c in enumerate(r)) + "</tr>"
    return f'<div class="wrap"><table{tid}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></div>'


# -- the Markdown this package writes (stats.md) as HTML: headings, pipe tables, "- " lists, paragraphs, `code` --
_TABLE_RULE = re.compile(r"^\|(\s*:?-+:?\s*\|)+\s*$")


def _md_inline(text: str) -> str:
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", html.escape(text))


def _md_kind(line: str) -> str | None:
    if not line.strip():
        return None
    if line.startswith("|"):
        return "table"
    if line.startswith("#"):
        return "heading"
    return "list" if line.startswith("- ") else "text"


def _md_blocks(text: str) -> list[tuple[str, list[str]]]:
    """Consecutive lines of one kind (a heading is a block of its own); blank lines end a block."""
    blocks: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        kind = _md_kind(line)
        if kind is None:
            blocks.append(("", []))
        elif blocks and blocks[-1][0] == kind and kind != "heading":
            blocks[-1][1].append(line)
        else:
            blocks.append((kind, [line]))
    return [b for b in blocks if b[0]]


def _md_table(lines: list[str]) -> str:
    rows = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines if not _TABLE_RULE.match(line)]
    return html_table(rows[0], rows[1:], key_cols=1) if rows else ""


def _md_block(kind: str, lines: list[str]) -> str:
    if kind == "table":
        return _md_table(lines)
    if kind == "heading":
        level = len(lines[0]) - len(lines[0].lstrip("#"))
        # level 1 is the page section's own heading (h2); ## -> h3, ### -> h4
        return "" if level == 1 else f"<h{min(level + 1, 6)}>{_md_inline(lines[0].lstrip('#').strip())}</h{min(level + 1, 6)}>"
    if kind == "list":
        return "<ul>" + "".join(f"<li>{_md_inline(line[2:])}</li>" for line in lines) + "</ul>"
    return "<p>" + "<br>".join(_md_inline(line) for line in lines) + "</p>"


def markdown_html(text: str) -> str:
    """HTML of the Markdown this package writes (``stats.md``): its pipe tables become real tables
    (:func:`html_table`, first column left-aligned), not a ``<pre>`` of Markdown source."""
    return "\n".join(_md_block(kind, lines) for kind, lines in _md_blocks(text))


def _img(png: bytes, cls: str, alt: str) -> str:
    return f'<img class="{cls}" alt="{html.escape(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def _findings(report_json: str | None, limit: int = 40) -> list[str]:
    try:
        report = json.loads(report_json) if report_json else {}
    except ValueError:
        return ["(unreadable audit report)"]
    out = []
    for scene, segments in (report or {}).items():
        if not isinstance(segments, dict):
            continue
        for seg, found in segments.items():
            for key in ("overlaps", "out_of_bounds", "leaks"):
                for item in (found or {}).get(key, []) or []:
                    out.append(f"{scene}/{seg} {key}: {json.dumps(item, ensure_ascii=False, sort_keys=True)}")
    if len(out) > limit:
        out = out[:limit] + [f"… {len(out) - limit} more"]
    return out


def _video_link(video_path: str | None, run_dir: Path, out_dir: Path) -> str | None:
    if not video_path:
        return None
    p = Path(video_path)
    if not p.is_absolute():  # relative paths in rows are relative to the run directory
        p = run_dir / p
    try:
        rel = os.path.relpath(p.resolve(), out_dir.resolve())
    except ValueError:
        rel = str(p)
    return rel


def sample_drilldown(samples: list[dict], max_samples: int, max_pictures: int = 6) -> str:
    """``samples``: dicts with run, model, lang, id, exec_success, spatial_pass, error_type, error_text,
    audit_error, audit_report, video_rel, pictures (list of (name, png bytes))."""
    parts = []
    for s in samples[:max_samples]:
        e = '<span class="pass">Exec ✓</span>' if s["exec_success"] else '<span class="fail">Exec ✗</span>'
        sp = '<span class="pass">Spatial ✓</span>' if s["spatial_pass"] else '<span class="fail">Spatial ✗</span>'
        key = f"{s['run']} {s['model']} {s['lang']} {s['id']} {s.get('error_type') or ''}".lower()
        body = []
        if s.get("error_type"):
            body.append(f"<p>error type: <b>{html.escape(str(s['error_type']))}</b></p>")
        if s.get("error_text"):
            body.append(f"<pre>{html.escape(str(s['error_text'])[-3000:])}</pre>")
        if s.get("audit_error"):
            body.append(f"<p>audit error: {html.escape(str(s['audit_error']))}</p>")
        findings = _findings(s.get("audit_report"))
        if findings:
            body.append("<p>audit findings:</p><pre>" + html.escape("\n".join(findings)) + "</pre>")
        for name, png in (s.get("pictures") or [])[:max_pictures]:
            body.append(_img(png, "inspect", name))
        if s.get("video_rel"):
            body.append(f'<p><a href="{html.escape(s["video_rel"])}">video</a></p>')
        if not body:
            body.append("<p>no error, no finding</p>")
        title = html.escape(f"{s['model']} / {s['lang']} / {s['id']}" + (f" [{s['run']}]" if s.get("show_run") else ""))
        parts.append(f'<details class="sample" data-key="{html.escape(key)}"><summary>{title} — {e} {sp}'
                     f"{' — ' + html.escape(str(s['error_type'])) if s.get('error_type') else ''}</summary>"
                     + "".join(body) + "</details>")
    more = len(samples) - max_samples
    if more > 0:
        parts.append(f'<p class="note">{more} more samples not shown (report.html.max_samples={max_samples}).</p>')
    return "\n".join(parts)


def html_page(title: str, sections: list[tuple[str, str]]) -> str:
    body = "".join(f"<h2>{html.escape(h)}</h2>\n{content}\n" for h, content in sections)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
            f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1>\n{body}"
            f"<script>{FILTER_JS}</script></body></html>\n")
