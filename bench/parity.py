"""Differential parity: prism_fast (profile ``reference``) against the authors' toolkit, on scripts nobody here
wrote (issue #14). The toolkit is the oracle.

    nice -n 10 .venv/bin/python bench/parity.py --scripts DIR --toolkit PATH --work DIR \
        [--workers 2] [--limit N] [--ids A B …] [--skip-padvc] [--recheck N] [--out parity.json]

``--toolkit`` is a checkout of github.com/positionprivacy/PRISM (its ``scripts/`` is copied into
``<work>/toolkit/code`` and run from there, so the toolkit's temp and result files never land in the checkout).
Both sides run in this venv with the same number of workers:

- toolkit: ``scripts/render_directory.py`` (``manim -ql``), ``scripts/audit_batch.py --no-images`` (its
  1080p60 auditor), and, per video, ``score_td.compute_td_raw`` and
  ``PADVCCalculator(ocr_backend="rapidocr").evaluate_single(..., return_details=True)`` (its default RapidOCR
  settings; the PVD embedders are stubbed: PVD is not a video piece and the models are not bundled);
- prism_fast: the ``eval`` pipeline (``model=reference lang=en``, the scripts as a dataset's reference answers,
  ``cluster.num_cpus=<workers>``: sandboxed prefork renders, one-pass audit, TD stage), then
  ``compute_padvc_details`` on its videos with the same OCR settings (``OcrSettings(provider="cpu")``).

Per script it compares Exec success, the error message (``error_message``) and taxonomy type, the video sha256, every audit row
field and the full per-segment report, TD_raw (bit for bit) and the PADVC video pieces (events,
frame_diff_series, per-event E_geo, the E_text series, S). It prints an agreement table and every difference
and writes the JSON record (``--out``). Every phase resumes from ``<work>`` (both toolkits skip finished ids;
the metric workers skip ids already written), so a long run can be continued; delete ``<work>`` to start over.
``--recheck N`` renders every script whose two videos differ N more times with the toolkit: when the toolkit's
own videos differ too, or one of them equals ours byte for byte, the difference is the script's (or the
encoder's) nondeterminism, not ours.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

AUDIT_ROW_FIELDS = ("audit_success", "segment_count", "visual_structure_rate", "visual_structure_pass",
                    "visual_issue_total", "visual_issue_breakdown", "error_msg")
PADVC_PIECES = ("events", "frame_diff_series", "e_geo", "e_text_series", "segments", "boundaries",
                "max_raw_text_energy", "video_frame_count")
TD_TAU = 25
PROMPT_STUB = "parity corpus script"  # PADVC's prompt: only PVD reads it, and PVD is not compared


# ---- small helpers --------------------------------------------------------------------------------------

def sha256_file(path) -> str | None:
    if not path or not Path(path).is_file():
        return None
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _json_loads(value, default=None):
    if value is None or isinstance(value, (dict, list)):
        return value if value is not None else default
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return default


def read_jsonl(path: Path) -> dict:
    out = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                out[rec["id"]] = rec
    return out


def normalize_paths(text: str | None, sample_id: str) -> str:
    """Error text without run-specific paths: the script's path and temp/media directories."""
    if not text:
        return ""
    text = re.sub(r"(?:[A-Za-z]:)?(?:/[^\s/\"':]+)*/" + re.escape(sample_id) + r"\.py", "<script>", text)
    text = re.sub(r"/(?:tmp|work|root|home|var)[^\s\"':]*", "<path>", text)
    return text


def last_line(text: str | None) -> str:
    for line in reversed((text or "").splitlines()):
        if line.strip():
            return line.strip()
    return ""


def squash(text: str) -> str:
    """Whitespace- and box-drawing-insensitive form (rich wraps tracebacks at the terminal width)."""
    return re.sub(r"[\s\u2500-\u257f]+", "", text)


_EXCEPTION_LINE = re.compile(r"^\w+(\.\w+)*(Error|Exception|Exit|Interrupt)\b")


def error_message(text: str | None, sample_id: str) -> str:
    """The error's message: from the last exception line (else the last non-empty line) to the end, with the
    line wrapping undone (rich wraps a long message, e.g. a TeX log path, at the terminal width, so where it
    breaks depends on the path's length) and every directory replaced by ``<dir>/``."""
    lines = (text or "").splitlines()
    start = next((i for i in range(len(lines) - 1, -1, -1) if _EXCEPTION_LINE.match(lines[i])), None)
    if start is None:
        start = next((i for i in range(len(lines) - 1, -1, -1) if lines[i].strip()), len(lines))
    msg = squash("".join(lines[start:])).replace(f"{sample_id}.py", "<script>")
    return re.sub(r"(?:/[^/\s\"':]+)+/", "<dir>/", msg)


def padvc_pieces(details: dict) -> dict:
    """The PADVC video pieces of a toolkit-format details payload (no PVD, no cache bookkeeping)."""
    return {
        "events": [[int(s), int(e)] for s, e in details["events"]],
        "frame_diff_series": [float(v) for v in details["frame_diff_series"]],
        "e_geo": [float(e["raw_geo_energy"]) for e in details["event_energy_details"]],
        "e_text_series": [[int(s["frame_index"]), float(s["raw_text_energy"]), int(s["box_count"])]
                          for s in details["sampled_text_energy_series"]],
        "segments": int(details["animation_segment_count"]),
        "boundaries": [[int(b["mid_frame_index"]), float(b["mid_raw_text_energy"]), bool(b["new_segment"])]
                       for b in details["segment_boundary_details"]],
        "max_raw_text_energy": float(details["max_raw_text_energy"]),
        "video_frame_count": int(details["video_frame_count"]),
    }


def _run(cmd: list[str], log: Path, cwd: Path | None = None, env: dict | None = None) -> int:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as fh:
        fh.write(f"\n$ {' '.join(cmd)}\n".encode())
        fh.flush()
        return subprocess.run(cmd, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT).returncode


# ---- phase 0: inputs ------------------------------------------------------------------------------------

def select_scripts(scripts: Path, limit: int | None, ids: list[str] | None) -> list[str]:
    manifest = scripts / "manifest.jsonl"
    if manifest.exists():  # bench/corpus.py order: sources interleaved, so a prefix is a mix
        order = [json.loads(line)["id"] for line in manifest.read_text(encoding="utf-8").splitlines() if line.strip()]
        order = [i for i in order if (scripts / f"{i}.py").exists()]
    else:
        order = sorted(p.stem for p in scripts.glob("*.py"))
    if ids:
        wanted = set(ids)
        order = [i for i in order if i in wanted]
    return order[:limit] if limit else order


def stage_inputs(scripts: Path, chosen: list[str], work: Path) -> Path:
    inp = work / "input"
    inp.mkdir(parents=True, exist_ok=True)
    for sid in chosen:
        src = (scripts / f"{sid}.py").read_bytes()
        dst = inp / f"{sid}.py"
        if not dst.exists() or dst.read_bytes() != src:
            dst.write_bytes(src)
    for extra in inp.glob("*.py"):  # the toolkit's drivers take the whole directory
        if extra.stem not in set(chosen):
            extra.unlink()
    return inp


# ---- phase 1-2: the toolkit's render and audit ----------------------------------------------------------

def toolkit_code(toolkit: Path, work: Path) -> Path:
    src = toolkit / "scripts"
    if not (src / "audit_single.py").exists():
        raise SystemExit(f"{toolkit} is not a checkout of positionprivacy/PRISM (no scripts/audit_single.py)")
    code = work / "toolkit" / "code"
    if code.exists():
        shutil.rmtree(code)
    shutil.copytree(src, code / "scripts")
    return code / "scripts"


def toolkit_env(work: Path) -> dict:
    env = dict(os.environ)
    env["MANIM_BENCH_TMP_DIR"] = str(work / "toolkit" / "tmp")
    env["MANIM_BENCH_PYTHON"] = sys.executable
    env["MANIM_BIN"] = str(Path(sys.executable).parent / "manim")
    return env


def run_toolkit(code: Path, inp: Path, work: Path, workers: int, render_timeout: int, audit_timeout: int,
                videos: Path | None = None, results: Path | None = None, audit: bool = True) -> None:
    tk = work / "toolkit"
    env = toolkit_env(work)
    videos = videos or tk / "videos"
    results = results or tk / "render_results.json"
    _run([sys.executable, str(code / "render_directory.py"), "--input-dir", str(inp), "--output-dir", str(videos),
          "--results-json", str(results), "--workers", str(workers), "--timeout-sec", str(render_timeout),
          "--manim-bin", env["MANIM_BIN"]], tk / "render.log", cwd=code, env=env)
    if audit:
        _run([sys.executable, str(code / "audit_batch.py"), "--input-dir", str(inp), "--output-dir",
              str(tk / "audit"), "--workers", str(workers), "--timeout-sec", str(audit_timeout), "--no-images"],
             tk / "audit.log", cwd=code, env=env)


# ---- phase 3: prism_fast's eval pipeline ----------------------------------------------------------------

def run_ours(inp: Path, chosen: list[str], work: Path, workers: int) -> None:
    ours = work / "ours"
    ours.mkdir(parents=True, exist_ok=True)
    dataset = ours / "dataset.jsonl"
    with dataset.open("w", encoding="utf-8") as fh:
        for sid in chosen:
            fh.write(json.dumps({"id": sid, "language": "en", "instruction": PROMPT_STUB,
                                 "reference_answer": (inp / f"{sid}.py").read_text(encoding="utf-8")}) + "\n")
    _run([sys.executable, str(Path(__file__).resolve()), "_ours-eval", "--work", str(work), "--workers",
          str(workers)], ours / "eval.log", cwd=ROOT)


def _ours_eval(work: Path, workers: int) -> int:
    """Subprocess entry: run the pipeline and export its exec/audit/td rows to ``<work>/ours/rows.json``."""
    from hydra import compose, initialize_config_module

    from prism_fast.pipeline.run import options_from_config, run_eval
    from prism_fast.store import ResultsStore

    ours = work / "ours"
    overrides = [f"dataset.path={ours / 'dataset.jsonl'}", "model=reference", "lang=en",
                 f"runs_root={ours / 'runs'}", f"cluster.num_cpus={workers}", "metrics.padvc.enabled=false",
                 "metrics.text_expand.enabled=false"]
    with initialize_config_module(config_module="prism_fast.conf", version_base=None):
        cfg = compose(config_name="config", overrides=overrides)
    opts = options_from_config(cfg)
    run_eval(opts)
    store = ResultsStore(opts.run_dir)
    rows = {}
    for stage in ("exec", "audit", "td"):
        try:
            rows[stage] = {r["id"]: r for r in store.read(stage).to_pylist()}
        except Exception as exc:  # a stage that wrote nothing
            rows[stage] = {}
            print(f"stage {stage}: {exc}", file=sys.stderr)
    (ours / "rows.json").write_text(json.dumps({"run_dir": str(opts.run_dir), **rows}, default=str),
                                    encoding="utf-8")
    return 0


# ---- phase 4: video metrics (TD and PADVC pieces) -------------------------------------------------------

def run_metrics(side: str, videos: dict[str, str], work: Path, workers: int, skip_padvc: bool,
                code: Path | None) -> dict:
    """TD (toolkit side only; ours comes from the pipeline's td rows) and PADVC pieces, sharded over
    ``workers`` subprocesses; resumes from the shard files."""
    out_dir = work / side / "metrics"
    out_dir.mkdir(parents=True, exist_ok=True)
    done = {}
    for f in out_dir.glob("shard_*.jsonl"):
        done.update(read_jsonl(f))
    todo = sorted(sid for sid, v in videos.items() if v and (sid not in done or
                  (not skip_padvc and done[sid].get("padvc") is None and done[sid].get("padvc_error") is None)))
    if todo:
        jobs = []
        for k in range(max(1, workers)):
            part = todo[k::max(1, workers)]
            if not part:
                continue
            spec = out_dir / f"todo_{k}.json"
            spec.write_text(json.dumps({sid: videos[sid] for sid in part}), encoding="utf-8")
            cmd = [sys.executable, str(Path(__file__).resolve()), "_metrics", "--side", side, "--spec", str(spec),
                   "--out", str(out_dir / f"shard_{k}_{int(time.time())}.jsonl")]
            if skip_padvc:
                cmd.append("--skip-padvc")
            if code is not None:
                cmd += ["--toolkit-scripts", str(code)]
            log = open(out_dir / f"worker_{k}.log", "ab")
            jobs.append((subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT), log))
        for proc, log in jobs:
            proc.wait()
            log.close()
        for f in out_dir.glob("shard_*.jsonl"):
            done.update(read_jsonl(f))
    return done


class _NoEmbedder:
    """Stands in for sentence-transformers in the toolkit's PADVCCalculator: PVD is not compared."""

    def __init__(self, *args, **kwargs):
        pass

    def encode(self, texts, **kwargs):
        import numpy as np

        n = len(texts) if isinstance(texts, (list, tuple)) else 1
        return np.zeros((n, 8), dtype=np.float32)


def _metrics(side: str, spec: Path, out: Path, skip_padvc: bool, toolkit_scripts: Path | None) -> int:
    """Subprocess entry: one shard of videos → one JSONL line each: {id, td_raw?, padvc?, padvc_error?}."""
    videos = json.loads(spec.read_text(encoding="utf-8"))
    if side == "toolkit":
        sys.path.insert(0, str(toolkit_scripts))
        import score_td  # the toolkit's module

        calc = None
        if not skip_padvc:
            import sentence_transformers

            sentence_transformers.SentenceTransformer = _NoEmbedder
            import padvc  # the toolkit's module

            with contextlib.redirect_stdout(io.StringIO()):
                calc = padvc.PADVCCalculator(ocr_backend="rapidocr")

        def measure(sid, video):
            rec = {"id": sid, "td_raw": score_td.compute_td_raw(video, TD_TAU)}
            if calc is not None:
                with contextlib.redirect_stdout(io.StringIO()):
                    details = calc.evaluate_single(PROMPT_STUB, video, return_details=True)
                rec["padvc"] = padvc_pieces(details) if isinstance(details, dict) else None
            return rec
    else:
        from prism_fast.metrics.padvc import compute_padvc_details
        from prism_fast.video.ocr import OcrSettings, TextMasker, make_ocr_engine

        settings = OcrSettings(provider="cpu")
        engine = None if skip_padvc else make_ocr_engine(settings)

        class _Pvd:
            pvd_raw = 0

        def measure(sid, video):
            rec = {"id": sid}
            if engine is not None:
                details = compute_padvc_details(video, _Pvd, TextMasker(engine, settings))
                rec["padvc"] = padvc_pieces(details)
            return rec

    with out.open("a", encoding="utf-8") as fh:
        for sid, video in videos.items():
            t0 = time.perf_counter()
            try:
                rec = measure(sid, video)
            except Exception as exc:  # recorded, never dropped
                rec = {"id": sid, "padvc": None, "padvc_error": f"{type(exc).__name__}: {exc}"}
            rec["metrics_sec"] = round(time.perf_counter() - t0, 2)
            fh.write(json.dumps(rec) + "\n")
            fh.flush()
    return 0


# ---- phase 5: comparison --------------------------------------------------------------------------------

def _toolkit_error_type(script: str, error: str | None) -> str | None:
    from prism_fast.execute.taxonomy import taxonomy_fields

    return taxonomy_fields(code=script, render_row={"success": False, "error": error,
                                                    "stderr_tail": error})["error_type"]


def _first_diff(a, b) -> str:
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"length {len(a)} vs {len(b)}"
        for k, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return f"first difference at [{k}]: {x!r} vs {y!r}"
    return f"{a!r} vs {b!r}"


def compare_one(sid: str, script: str, tk: dict, ours: dict) -> dict:
    from prism_fast.execute.determinism import static_marks

    rec = {"id": sid, "differences": []}
    diffs = rec["differences"]
    marks = static_marks(script)
    rec["nondeterminism_marks"] = [f"{m.kind}:{m.name}@{m.line}" for m in marks]

    # Exec
    t_r, o_r = tk.get("render") or {}, ours.get("exec") or {}
    rec["exec_tk"], rec["exec_ours"] = bool(t_r.get("success")), bool(o_r.get("success"))
    rec["exec_agree"] = rec["exec_tk"] == rec["exec_ours"] and bool(t_r) and bool(o_r)
    if not rec["exec_agree"]:
        diffs.append(f"Exec success: toolkit {rec['exec_tk'] if t_r else 'missing'} vs ours "
                     f"{rec['exec_ours'] if o_r else 'missing'}; ours error: {last_line(o_r.get('error'))[:200]}")
    if t_r and o_r and not rec["exec_tk"] and not rec["exec_ours"]:
        te, oe = normalize_paths(t_r.get("error"), sid), normalize_paths(o_r.get("error"), sid)
        rec["error_last_line_agree"] = error_message(t_r.get("error"), sid) == error_message(o_r.get("error"), sid)
        rec["error_text_agree"] = squash(te) == squash(oe)
        rec["error_type_tk"] = _toolkit_error_type(script, t_r.get("error"))
        rec["error_type_ours"] = o_r.get("error_type")
        rec["error_type_agree"] = rec["error_type_tk"] == rec["error_type_ours"]
        if not rec["error_last_line_agree"]:
            diffs.append(f"error message: toolkit {error_message(t_r.get('error'), sid)[:200]!r} vs ours "
                         f"{error_message(o_r.get('error'), sid)[:200]!r}")
        if not rec["error_type_agree"]:
            diffs.append(f"error type: toolkit {rec['error_type_tk']} vs ours {rec['error_type_ours']}")
    t_vid, o_vid = tk.get("video_sha256"), sha256_file(o_r.get("video_path")) if rec["exec_ours"] else None
    rec["video_tk"], rec["video_ours"] = t_vid, o_vid
    rec["both_rendered"] = bool(t_vid and o_vid)
    rec["video_identical"] = rec["both_rendered"] and t_vid == o_vid
    if rec["both_rendered"] and not rec["video_identical"]:
        diffs.append("video sha256 differs")

    # Audit
    t_a, o_a = tk.get("audit") or {}, ours.get("audit") or {}
    rec["audit_present"] = bool(t_a) and bool(o_a)
    if rec["audit_present"]:
        t_fields = {k: t_a.get(k) for k in AUDIT_ROW_FIELDS}
        o_fields = {k: o_a.get(k) for k in AUDIT_ROW_FIELDS}
        o_fields["visual_issue_breakdown"] = _json_loads(o_fields["visual_issue_breakdown"], {})
        for k in AUDIT_ROW_FIELDS:
            if t_fields[k] != o_fields[k]:
                diffs.append(f"audit {k}: toolkit {str(t_fields[k])[:200]!r} vs ours {str(o_fields[k])[:200]!r}")
        rec["audit_success_agree"] = t_fields["audit_success"] == o_fields["audit_success"]
        rec["spatial_agree"] = t_fields["visual_structure_pass"] == o_fields["visual_structure_pass"]
        rec["audit_row_agree"] = t_fields == o_fields
        rec["audit_success_tk"] = t_fields["audit_success"]
        rec["audit_pass_ours"] = o_a.get("audit_pass")
        t_rep, o_rep = t_a.get("visual_audit_report"), _json_loads(o_a.get("visual_audit_report"))
        rec["audited"] = t_fields["audit_success"] == 1 and o_fields["audit_success"] == 1
        rec["report_identical"] = t_rep == o_rep
        if not rec["report_identical"]:
            diffs.append("per-segment report differs")
            rec["report_tk"], rec["report_ours"] = t_rep, o_rep
    else:
        diffs.append(f"audit row missing: toolkit {bool(t_a)} ours {bool(o_a)}")

    # TD
    o_td = ours.get("td") or {}
    rec["td_tk"], rec["td_ours"] = tk.get("td_raw"), o_td.get("td_raw") if rec["exec_ours"] else None
    if rec["both_rendered"] and rec["td_tk"] is not None and rec["td_ours"] is not None:
        rec["td_identical"] = float(rec["td_tk"]) == float(rec["td_ours"])
        if not rec["td_identical"]:
            diffs.append(f"TD_raw: toolkit {rec['td_tk']!r} vs ours {rec['td_ours']!r}")

    # PADVC pieces
    t_p, o_p = tk.get("padvc"), ours.get("padvc")
    if rec["both_rendered"] and (t_p is not None or o_p is not None or tk.get("padvc_error") or ours.get("padvc_error")):
        rec["padvc_errors"] = [e for e in (tk.get("padvc_error"), ours.get("padvc_error")) if e]
        rec["padvc_pieces"] = {}
        for piece in PADVC_PIECES:
            same = t_p is not None and o_p is not None and t_p.get(piece) == o_p.get(piece)
            rec["padvc_pieces"][piece] = same
            if not same:
                detail = _first_diff((t_p or {}).get(piece), (o_p or {}).get(piece)) if t_p and o_p else "missing"
                diffs.append(f"PADVC {piece}: {detail[:200]}")
        rec["padvc_identical"] = all(rec["padvc_pieces"].values())
    return rec


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({100.0 * n / d:.1f} %)" if d else "0/0 (—)"


def agreement_table(recs: list[dict]) -> list[tuple[str, int, int]]:
    def count(pred, within):
        pool = [r for r in recs if within(r)]
        return sum(1 for r in pool if pred(r)), len(pool)

    rows = [
        ("Exec success", *count(lambda r: r["exec_agree"], lambda r: True)),
        ("Exec error message (both failed)", *count(lambda r: r.get("error_last_line_agree"),
                                                      lambda r: "error_last_line_agree" in r)),
        ("Exec error, taxonomy type (both failed)", *count(lambda r: r.get("error_type_agree"),
                                                          lambda r: "error_type_agree" in r)),
        ("Exec error, full text modulo paths/wrapping", *count(lambda r: r.get("error_text_agree"),
                                                              lambda r: "error_text_agree" in r)),
        ("Video sha256 (both rendered)", *count(lambda r: r["video_identical"], lambda r: r["both_rendered"])),
        ("audit_success", *count(lambda r: r.get("audit_success_agree"), lambda r: r["audit_present"])),
        ("Spatial verdict (visual_structure_pass)", *count(lambda r: r.get("spatial_agree"),
                                                          lambda r: r["audit_present"])),
        ("Audit row fields", *count(lambda r: r.get("audit_row_agree"), lambda r: r["audit_present"])),
        ("Per-segment report (audited by both)", *count(lambda r: r.get("report_identical"),
                                                       lambda r: r.get("audited"))),
        ("TD_raw bit-identical (identical videos)", *count(lambda r: r.get("td_identical"),
                                                          lambda r: r["video_identical"] and "td_identical" in r)),
        ("TD_raw bit-identical (both rendered)", *count(lambda r: r.get("td_identical"),
                                                       lambda r: "td_identical" in r)),
        ("PADVC video pieces (both rendered)", *count(lambda r: r.get("padvc_identical"),
                                                     lambda r: "padvc_identical" in r)),
    ]
    for piece in PADVC_PIECES:
        rows.append((f"  PADVC {piece}", *count(lambda r, p=piece: r["padvc_pieces"][p],
                                               lambda r: "padvc_pieces" in r)))
    rows.append(("Scripts with static nondeterminism marks", sum(1 for r in recs if r["nondeterminism_marks"]),
                 len(recs)))
    return rows


def gather_toolkit(work: Path, chosen: list[str], metrics: dict) -> dict:
    tk = work / "toolkit"
    render = _json_loads((tk / "render_results.json").read_text(encoding="utf-8"), {}) \
        if (tk / "render_results.json").exists() else {}
    render_rows = {r["id"]: r for r in render.get("details", [])}
    audit = _json_loads((tk / "audit" / "results.json").read_text(encoding="utf-8"), {}) \
        if (tk / "audit" / "results.json").exists() else {}
    audit_rows = {r["id"]: r for r in audit.get("details", [])}
    out = {}
    for sid in chosen:
        r = render_rows.get(sid)
        video = tk / "videos" / f"{sid}.mp4"
        m = metrics.get(sid, {})
        out[sid] = {"render": r, "audit": audit_rows.get(sid),
                    "video_sha256": sha256_file(video) if r and r.get("success") else None,
                    "td_raw": m.get("td_raw"), "padvc": m.get("padvc"), "padvc_error": m.get("padvc_error")}
    return out


def recheck(code: Path, inp: Path, work: Path, recs: list[dict], workers: int, render_timeout: int,
            times: int) -> None:
    """Render every script whose two videos differ ``times`` more times with the toolkit. The toolkit's own
    videos of a script then either all equal its first one (``toolkit_self_identical``) or not; when one of them
    is byte-identical to ours (``ours_among_toolkit_videos``), our video is one of the toolkit's own outputs:
    the script (or its encode) is nondeterministic, not our render."""
    diverging = [r["id"] for r in recs if r["both_rendered"] and not r["video_identical"]]
    if not diverging or times < 1:
        return
    rin = work / "recheck" / "input"
    if rin.exists():
        shutil.rmtree(rin)
    rin.mkdir(parents=True)
    for sid in diverging:
        shutil.copy(inp / f"{sid}.py", rin / f"{sid}.py")
    seen: dict[str, list[str]] = {sid: [] for sid in diverging}
    for k in range(times):
        run_dir = work / "recheck" / f"run_{k}"
        run_toolkit(code, rin, work, workers, render_timeout, 0, videos=run_dir / "videos",
                    results=run_dir / "render_results.json", audit=False)
        for sid in diverging:
            sha = sha256_file(run_dir / "videos" / f"{sid}.mp4")
            if sha:
                seen[sid].append(sha)
    for r in recs:
        if r["id"] in seen:
            shas = seen[r["id"]]
            r["toolkit_rerender_videos"] = shas
            r["toolkit_self_identical"] = all(x == r["video_tk"] for x in shas) if shas else None
            r["ours_among_toolkit_videos"] = r["video_ours"] in shas


def main(argv: list[str] | None = None) -> int:
    if argv is None:
        argv = sys.argv[1:]
    if argv and argv[0] == "_ours-eval":
        ap = argparse.ArgumentParser()
        ap.add_argument("--work", type=Path, required=True)
        ap.add_argument("--workers", type=int, default=2)
        a = ap.parse_args(argv[1:])
        return _ours_eval(a.work, a.workers)
    if argv and argv[0] == "_metrics":
        ap = argparse.ArgumentParser()
        ap.add_argument("--side", choices=["toolkit", "ours"], required=True)
        ap.add_argument("--spec", type=Path, required=True)
        ap.add_argument("--out", type=Path, required=True)
        ap.add_argument("--skip-padvc", action="store_true")
        ap.add_argument("--toolkit-scripts", type=Path, default=None)
        a = ap.parse_args(argv[1:])
        return _metrics(a.side, a.spec, a.out, a.skip_padvc, a.toolkit_scripts)

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--scripts", type=Path, required=True, help="directory of <id>.py (+ optional manifest.jsonl)")
    ap.add_argument("--toolkit", type=Path, required=True, help="checkout of positionprivacy/PRISM")
    ap.add_argument("--work", type=Path, required=True, help="work directory (kept: every phase resumes)")
    ap.add_argument("--workers", type=int, default=2, help="workers on each side (equal)")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--ids", nargs="*", default=None)
    ap.add_argument("--skip-padvc", action="store_true", help="no PADVC pieces (OCR is the slowest metric)")
    ap.add_argument("--skip-run", action="store_true", help="only compare what <work> already holds")
    ap.add_argument("--recheck", type=int, default=0, metavar="N",
                    help="render every script whose videos differ N more times with the toolkit")
    ap.add_argument("--render-timeout", type=int, default=600)
    ap.add_argument("--audit-timeout", type=int, default=900)
    ap.add_argument("--out", type=Path, default=None, help="JSON record (default <work>/parity.json)")
    args = ap.parse_args(argv)

    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    chosen = select_scripts(args.scripts, args.limit, args.ids)
    if not chosen:
        raise SystemExit(f"no scripts selected in {args.scripts}")
    inp = stage_inputs(args.scripts, chosen, work)
    code = toolkit_code(args.toolkit.resolve(), work)
    timings = {}
    if not args.skip_run:
        t0 = time.perf_counter()
        run_toolkit(code, inp, work, args.workers, args.render_timeout, args.audit_timeout)
        timings["toolkit_render_audit_s"] = round(time.perf_counter() - t0, 1)
        t0 = time.perf_counter()
        run_ours(inp, chosen, work, args.workers)
        timings["ours_eval_s"] = round(time.perf_counter() - t0, 1)
    ours_rows = _json_loads((work / "ours" / "rows.json").read_text(encoding="utf-8"), {}) \
        if (work / "ours" / "rows.json").exists() else {}
    tk_videos = {sid: str(work / "toolkit" / "videos" / f"{sid}.mp4") for sid in chosen
                 if (work / "toolkit" / "videos" / f"{sid}.mp4").exists()}
    our_videos = {sid: r.get("video_path") for sid, r in (ours_rows.get("exec") or {}).items()
                  if sid in set(chosen) and r.get("success") and r.get("video_path")}
    t0 = time.perf_counter()
    tk_metrics = run_metrics("toolkit", tk_videos, work, args.workers, args.skip_padvc, code) \
        if not args.skip_run else {}
    our_metrics = run_metrics("ours", our_videos, work, args.workers, args.skip_padvc, None) \
        if not (args.skip_run or args.skip_padvc) else {}
    if args.skip_run:
        for side, target in (("toolkit", tk_metrics), ("ours", our_metrics)):
            for f in (work / side / "metrics").glob("shard_*.jsonl"):
                target.update(read_jsonl(f))
    timings["metrics_s"] = round(time.perf_counter() - t0, 1)
    toolkit = gather_toolkit(work, chosen, tk_metrics)
    recs = []
    for sid in chosen:
        ours = {"exec": (ours_rows.get("exec") or {}).get(sid), "audit": (ours_rows.get("audit") or {}).get(sid),
                "td": (ours_rows.get("td") or {}).get(sid), **{k: v for k, v in our_metrics.get(sid, {}).items()
                                                              if k in ("padvc", "padvc_error")}}
        recs.append(compare_one(sid, (inp / f"{sid}.py").read_text(encoding="utf-8"), toolkit[sid], ours))
    if args.recheck:
        recheck(code, inp, work, recs, args.workers, args.render_timeout, args.recheck)

    table = agreement_table(recs)
    print(f"\nparity: {len(recs)} scripts, {args.workers} worker(s) per side, work dir {work}\n")
    print("| check | agree | of | % |\n|---|---|---|---|")
    for name, n, d in table:
        print(f"| {name} | {n} | {d} | {100.0 * n / d:.1f} |" if d else f"| {name} | {n} | {d} | — |")
    print("\nDifferences:")
    for r in recs:
        if r["differences"]:
            extra = ""
            if r["nondeterminism_marks"]:
                extra += f" [static marks: {', '.join(r['nondeterminism_marks'][:3])}]"
            if "toolkit_self_identical" in r:
                n = len(r["toolkit_rerender_videos"])
                extra += (f" [toolkit re-rendered {n}x: {'always its first video' if r['toolkit_self_identical'] else 'DIFFERENT videos'}"
                          f"{'; one of them is ours byte for byte' if r['ours_among_toolkit_videos'] else ''}]")
            print(f"- {r['id']}{extra}")
            for d in r["differences"]:
                print(f"    {d}")
    doc = {"scripts": len(recs), "workers": args.workers, "skip_padvc": args.skip_padvc, "timings": timings,
           "table": [{"check": n, "agree": a, "of": d} for n, a, d in table], "records": recs}
    out = args.out or work / "parity.json"
    out.write_text(json.dumps(doc, indent=1, default=str), encoding="utf-8")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
