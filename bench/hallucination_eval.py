"""Precision and recall of the static API-hallucination checker (``prism_fast.execute.hallucination``).

    .venv/bin/python -m bench.hallucination_eval [--json out.json]

Labelled set, all bundled with the package:

* positives: the bundled raw responses (``prism_fast/fixtures/responses.jsonl``) whose ``intent.fine_type`` is
  ``api_hallucination``, cleaned with ``clean_model_output(..., profile=REFERENCE)``;
* negatives: every other bundled response that still has a script after that cleaning, plus every bundled
  reference answer (``prism_fast/dataset/data/prism_sample.jsonl``, 48 scripts written to render correctly).

A script counts as flagged when ``check_code(code).findings`` is non-empty (the static findings of §9.3; keyword
findings and lower-case ``unresolved_names`` are diagnosis-only and do not count). A positive whose cleaning
leaves no code cannot be flagged and counts as a false negative.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import prism_fast
from prism_fast.dataset.bundled import bundled_dataset_path
from prism_fast.dataset.loader import load_dataset
from prism_fast.execute.hallucination import check_code
from prism_fast.generate.cleaning import clean_model_output
from prism_fast.profile import REFERENCE

RESPONSES = Path(prism_fast.__file__).resolve().parent / "fixtures" / "responses.jsonl"
POSITIVE_TYPE = "api_hallucination"


def labelled_items() -> list[dict]:
    """``{source, id, label, code, note}`` for every labelled script (label True = positive)."""
    items = []
    with RESPONSES.open(encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            rec = json.loads(line)
            intent = rec.get("intent") or {}
            positive = intent.get("fine_type") == POSITIVE_TYPE
            cleaned = clean_model_output(rec.get("response"), rec["language"], REFERENCE)
            if not cleaned.code and not positive:
                continue  # a negative with no script: nothing to check
            items.append({"source": "response", "id": rec["id"], "label": positive, "code": cleaned.code,
                          "note": intent.get("note", "")})
    for task in load_dataset(bundled_dataset_path()).tasks:
        items.append({"source": "reference", "id": task.id, "label": False, "code": task.reference_answer,
                      "note": "bundled reference answer"})
    return items


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--json", default=None, help="write the per-script results here")
    args = ap.parse_args(argv)

    rows = []
    counts = {"TP": 0, "FP": 0, "FN": 0, "TN": 0}
    for item in labelled_items():
        report = check_code(item["code"])
        flagged = bool(report.findings)
        cell = ("TP" if flagged else "FN") if item["label"] else ("FP" if flagged else "TN")
        counts[cell] += 1
        rows.append({**{k: item[k] for k in ("source", "id", "label", "note")}, "cell": cell,
                     "parsed": report.parsed, "empty_code": not item["code"],
                     "findings": [f.to_dict() for f in report.findings],
                     "keyword_findings": [f.to_dict() for f in report.keyword_findings],
                     "unresolved_names": report.unresolved_names, "notes": report.notes})

    tp, fp, fn, tn = (counts[k] for k in ("TP", "FP", "FN", "TN"))
    precision = tp / (tp + fp) if tp + fp else float("nan")
    recall = tp / (tp + fn) if tp + fn else float("nan")
    n_pos = tp + fn
    n_resp_neg = sum(1 for r in rows if r["source"] == "response" and not r["label"])
    n_ref = sum(1 for r in rows if r["source"] == "reference")
    print(f"positives: {n_pos} responses with intent.fine_type == {POSITIVE_TYPE!r}")
    print(f"negatives: {n_resp_neg} other responses with a script + {n_ref} reference answers = {n_resp_neg + n_ref}")
    print(f"TP {tp}  FP {fp}  FN {fn}  TN {tn}")
    print(f"precision {precision:.3f}  recall {recall:.3f}")
    print()
    print("flagged scripts (every static finding):")
    for r in rows:
        if r["findings"]:
            idents = ", ".join(f"{f['kind']}:{f['identifier']} (line {f['line']})" for f in r["findings"])
            print(f"  {r['cell']} {r['source']:<9} {r['id']:<18} {idents}")
    misses = [r for r in rows if r["cell"] == "FN"]
    if misses:
        print("missed positives:")
        for r in misses:
            why = "no code after cleaning" if r["empty_code"] else ("not parsed" if not r["parsed"] else "no finding")
            print(f"  FN {r['id']:<18} {why}; {r['note']}")
    diag = [r for r in rows if not r["findings"] and (r["keyword_findings"] or r["unresolved_names"])]
    if diag:
        print("not flagged, diagnosis-only fields set (do not count):")
        for r in diag:
            kw = ", ".join(f["identifier"] for f in r["keyword_findings"])
            print(f"  {r['cell']} {r['source']:<9} {r['id']:<18} keyword_findings=[{kw}] "
                  f"unresolved_names={r['unresolved_names']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"counts": counts, "precision": precision, "recall": recall,
                                               "rows": rows}, indent=1, ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
