"""Scaling benchmark (issues "Ray pipeline" and #19): render workers 1 vs 2, and end to end against the authors'
toolkit at equal workers, side by side in one run.

    .venv/bin/python -m bench.scaling [--toolkit PATH] [--scripts DIR] [--workers N]
                                      [--ids ID,ID,... | --limit N | --per-lang N] [--a-limit N] [--skip-a]
                                      [--skip-baseline] [--json out.json]

Part A -- render stage throughput with 1 and 2 render workers: ``prism-fast eval`` restricted to the Exec stage
(audit / TD / TextExpand off, render cache and TeX cache off, fresh run dir), ``cluster.num_cpus=N``,
``execute.workers=N``, after one untimed warm-up pass over the same samples (first renders fill the OS page cache
and font/TeX caches; without it the second timed run profits). Throughput = samples / Exec stage wall time.
Target: 2 workers >= 1.8x of 1 worker. Bundled samples, or the ``--scripts`` set with ``--a-scripts``;
``--a-only`` runs no part B. ``--a-order 1,2,2,1`` interleaves the timed passes (each count's mean), so that the
host's drift in speed during the benchmark does not land on one worker count. ``--a-pin`` confines each timed pass
(the whole run: driver, Ray, actors, renders) to as many cores as it has workers (``sched_setaffinity``, inherited
by every process the pass starts): N workers on an N-core machine. Unpinned, a lone render on a host with spare
cores also uses them (manim's writer thread, x264's threads: 1.08 cores on the 2-core machine), so the plain
comparison is capped below 2x by the host, not the harness; the pinned one gives every worker count one core per
worker. The warm-up pass is never pinned; each pass's cores are printed and in the JSON.

Part B -- end to end, the same scripts on both sides, ``--workers N`` on each side:
  scripts   ``--scripts DIR``: every ``<id>.py`` of DIR (``manifest.jsonl`` order when present, e.g. the open corpus
            of ``bench/corpus.py``, see docs/parity.md); default: the bundled reference answers (``--ids`` /
            ``--limit`` / ``--per-lang``). ``--limit`` also applies to a directory.
  toolkit   ``--toolkit PATH``: a checkout of github.com/positionprivacy/PRISM, run as its user runs it
            (``scripts/run_evaluation_pipeline.sh`` without PADVC) in this venv, from a copy of its ``scripts/``
            in the work dir: ``render_directory.py --workers N`` (``manim -ql`` per file), ``audit_batch.py
            --workers N --no-images`` (its 1080p60 auditor per file), ``score_td.py --workers N`` on the rendered
            videos (its TD parameters' defaults; TD_raw does not depend on them). Each stage is timed (wall) and its
            CPU-seconds are taken from ``getrusage(RUSAGE_CHILDREN)`` around the stage (every process is reaped).
  ours      ``python -m prism_fast.cli eval`` (Exec -> Spatial -> TD -> TextExpand; ``model=reference``, the
            scripts as a dataset's reference answers, ``cluster.num_cpus=N``, fresh ``runs_root``: empty caches),
            wall time of the whole command (Python and Ray start-up included), and the run's per-stage wall times.
            Manim executions per sample come from the rows: a render (``manim_executions``, else 1 when the
            script was executed) plus a separate audit (``audit_pass == "separate"``, not from the cache).
  Without ``--toolkit`` the baseline is a RE-CREATION of the authors' sequence from the spec, one process
  (a bare ``manim -ql`` per file, ``AuditConfig(full_fidelity=True, geometry_backend="matplotlib")``, per-frame
  NumPy TD), and every line of its output says so.
PADVC is left out of both sides (OCR-bound, not in the default config). The script checks that both sides agree
on every sample's Exec success and Spatial pass, and on TD_raw, and prints any disagreement as a PROBLEM (exit
status 1). A TD_raw difference where the two renders made different videos (a script that does not render the
same twice) is a NOTE instead, but only when our TD call on the baseline's own video gives the baseline's TD_raw.
Target (issue #19): ours >= 10x the toolkit end to end on the open corpus, >= 8x on the bundled set.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DEFAULT_IDS = ("SAMPLE-EN-000001", "SAMPLE-EN-000002", "SAMPLE-ZH-000001", "SAMPLE-ZH-000002")
PROMPT_STUB = "scaling benchmark script"
RECREATION = "SPEC RE-CREATION (no --toolkit given; not the authors' code)"


def _compose(*overrides: str):
    from hydra import compose, initialize_config_module

    with initialize_config_module(config_module="prism_fast.conf", version_base=None):
        return compose(config_name="config", overrides=list(overrides))


def _ids_override(ids) -> str:
    return "dataset.ids=[" + ",".join(ids) + "]"


def _eval(runs_root: Path, ids, *overrides: str) -> dict:
    import ray

    from prism_fast.pipeline.run import options_from_config, run_eval

    if ray.is_initialized():
        ray.shutdown()
    cfg = _compose(f"runs_root={runs_root}", *([_ids_override(ids)] if ids is not None else []), *overrides)
    opts = options_from_config(cfg)
    t0 = time.perf_counter()
    summary = run_eval(opts)
    wall = time.perf_counter() - t0
    ray.shutdown()
    return {"summary": summary, "wall_s": wall, "run_dir": str(opts.run_dir)}


def pinned_cores(n: int, pin: bool) -> list[int] | None:
    """The cores a pass of ``n`` workers is confined to: the first ``n`` of this process's allowed CPUs with
    ``pin``, else None (unconfined). Fewer allowed CPUs than ``n``: ValueError."""
    if not pin:
        return None
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < n:
        raise ValueError(f"--a-pin: a pass of {n} workers needs {n} cores, this process may use {len(allowed)}")
    return allowed[:n]


@contextlib.contextmanager
def confined_to(cores: list[int] | None):
    """This thread (and every process or thread it starts meanwhile) on ``cores`` while the block runs."""
    if cores is None:
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cores)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def part_a(ids, work: Path, warmup: bool = True, dataset: Path | None = None,
           order: tuple[int, ...] = (1, 2), pin: bool = False) -> dict:
    """``ids`` of the bundled set, or None with ``dataset`` (a directory's scripts as reference answers).

    ``order``: the timed passes by worker count, e.g. ``(1, 2, 2, 1)``: interleaved, a host whose speed drifts
    during the benchmark (this machine's varies by 10-20 % within an hour) slows both counts alike; each count's
    figures are the mean of its passes, and every pass is reported. ``pin``: each timed pass confined to as many
    cores as it has workers (:func:`pinned_cores`)."""
    exec_only = ("audit.enabled=false", "metrics.td.enabled=false", "metrics.text_expand.enabled=false",
                 "execute.cache.enabled=false", "execute.tex_cache.enabled=false",
                 *((f"dataset.path={dataset}", "model=reference") if dataset is not None else ()))
    n_samples = len(ids) if ids is not None else sum(1 for _ in open(dataset, encoding="utf-8"))
    if warmup:  # untimed: OS page cache, font and TeX caches warm for both timed runs, not only the second
        _eval(work / "a_warmup", ids, "cluster.num_cpus=2", "execute.workers=2", *exec_only)
        print(f"[A] warm-up pass over {n_samples} samples done", file=sys.stderr, flush=True)
    if sorted(set(order)) != [1, 2]:
        raise ValueError(f"part A order {order}: passes of 1 and of 2 workers")
    passes: list[dict] = []
    cores_of = {n: pinned_cores(n, pin) for n in (1, 2)}  # before any pass: too few cores fail at once
    for k, n in enumerate(order):
        with confined_to(cores_of[n]):
            res = _eval(work / (f"a{n}" if len(order) == 2 else f"a{k}_{n}"), ids, f"cluster.num_cpus={n}",
                        f"execute.workers={n}", *exec_only)
        exec_s = res["summary"]["stage_seconds"]["exec"]
        rows = _rows(res["run_dir"], "exec").values()
        # cores one render keeps busy (CPU of its process tree / its wall time): above 1, a lone render
        # also uses the idle core (manim's writer thread, x264 threads)
        cores = sum(r["cpu_s"] for r in rows) / max(sum(r["wall_s"] for r in rows), 1e-9)
        passes.append({"workers": n, "exec_s": exec_s, "render_cores": cores, "pinned_to": cores_of[n]})
        where = f" on cores {cores_of[n]}" if cores_of[n] is not None else ""
        print(f"[A] pass {k + 1}/{len(order)}, {n} worker(s){where}: Exec stage {exec_s:.1f} s for {n_samples} "
              f"samples; a render keeps {cores:.2f} cores busy", file=sys.stderr, flush=True)
    out: dict = {"order": list(order), "passes": passes, "pinned": pin}
    for n in (1, 2):
        mine = [p for p in passes if p["workers"] == n]
        exec_s = sum(p["exec_s"] for p in mine) / len(mine)
        out[n] = {"exec_s": exec_s, "samples_per_hour": 3600.0 * n_samples / exec_s,
                  "render_cores": sum(p["render_cores"] for p in mine) / len(mine)}
    out["ratio"] = out[2]["samples_per_hour"] / out[1]["samples_per_hour"]
    return out


def _rows(run_dir: str, stage: str) -> dict:
    from prism_fast.store import ResultsStore

    try:
        return {r["id"]: r for r in ResultsStore(run_dir).read(stage).to_pylist()}
    except Exception as exc:  # a stage that wrote nothing
        print(f"[rows] {stage}: none ({exc})", file=sys.stderr)
        return {}


def _children_cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _timed(cmd: list[str], log: Path, cwd: Path | None = None, env: dict | None = None) -> dict:
    """Run one command to the end; its wall time and the CPU-seconds of its (reaped) process tree."""
    log.parent.mkdir(parents=True, exist_ok=True)
    cpu0, t0 = _children_cpu(), time.perf_counter()
    with open(log, "ab") as fh:
        fh.write(f"\n$ {' '.join(cmd)}\n".encode())
        fh.flush()
        rc = subprocess.run(cmd, cwd=cwd, env=env, stdout=fh, stderr=subprocess.STDOUT).returncode
    return {"wall_s": time.perf_counter() - t0, "cpu_s": _children_cpu() - cpu0, "returncode": rc}


# ---- inputs ---------------------------------------------------------------------------------------------

def select_inputs(args) -> list[dict]:
    """[{id, language, script}] in run order: a directory of scripts or the bundled reference answers."""
    if args.scripts:
        from bench.parity import select_scripts

        ids = select_scripts(args.scripts, args.limit, args.ids.split(",") if args.ids_given else None)
        return [{"id": i, "language": "en", "script": (args.scripts / f"{i}.py").read_text(encoding="utf-8")}
                for i in ids]
    from prism_fast.dataset.bundled import bundled_dataset_path
    from prism_fast.dataset.loader import load_dataset

    tasks = load_dataset(bundled_dataset_path()).tasks
    if args.per_lang:
        tasks = [t for lang in ("en", "zh") for t in [t for t in tasks if t.language == lang][:args.per_lang]]
    elif args.limit:
        tasks = tasks[:args.limit]
    else:
        wanted = args.ids.split(",")
        tasks = [t for t in tasks if t.id in wanted]
    return [{"id": t.id, "language": t.language, "script": t.reference_answer} for t in tasks]


def stage_inputs(inputs: list[dict], work: Path) -> tuple[Path, Path]:
    """The scripts as ``<work>/input/<id>.py`` (the toolkit's input directory) and as a dataset JSONL (ours)."""
    inp = work / "input"
    inp.mkdir(parents=True, exist_ok=True)
    dataset = work / "dataset.jsonl"
    with dataset.open("w", encoding="utf-8") as fh:
        for rec in inputs:
            (inp / f"{rec['id']}.py").write_text(rec["script"], encoding="utf-8")
            fh.write(json.dumps({"id": rec["id"], "language": rec["language"], "instruction": PROMPT_STUB,
                                 "reference_answer": rec["script"]}, ensure_ascii=False) + "\n")
    return inp, dataset


# ---- part B: ours ---------------------------------------------------------------------------------------

def manim_executions(ex: dict | None, au: dict | None) -> int | None:
    """Manim executions one sample cost: its render (the row's ``manim_executions``, else 1 when it ran, 0 on a
    cache hit) + 1 for a separate audit (``audit_pass == "separate"``, not served from the audit cache)."""
    if not ex or ex.get("error_kind") == "no_script":
        return None
    n = ex.get("manim_executions")
    if n is None:
        n = 0 if (ex.get("cache_hit") or ex.get("skipped") or not ex.get("scene_class")) else 1
    if au and au.get("audit_pass") != "shared" and not au.get("audit_cache_hit") \
            and au.get("error_kind") != "no_script":
        n += 1
    return int(n)


def run_ours(dataset: Path, work: Path, workers: int) -> dict:
    runs_root = work / "ours_runs"
    cmd = [sys.executable, "-m", "prism_fast.cli", "eval", f"dataset.path={dataset}", "model=reference",
           f"runs_root={runs_root}", "run_name=scaling", f"cluster.num_cpus={workers}",
           "metrics.padvc.enabled=false"]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    res = _timed(cmd, work / "ours.log", cwd=ROOT, env=env)
    run_dir = runs_root / "scaling"
    summary_path = run_dir / "summary.json"
    summary = json.loads(summary_path.read_text(encoding="utf-8")) if summary_path.exists() else {}
    rows = {stage: _rows(str(run_dir), stage) for stage in ("exec", "audit", "td")}
    execs = {sid: manim_executions(r, rows["audit"].get(sid)) for sid, r in rows["exec"].items()}
    passes = [r.get("audit_pass") for r in rows["audit"].values()]
    out = {**res, "run_dir": str(run_dir), "stage_seconds": summary.get("stage_seconds", {}), "rows": rows,
           "manim_executions": execs, "audit_shared": passes.count("shared"),
           "audit_separate": passes.count("separate"),
           "render_worker_s": sum(r.get("wall_s") or 0.0 for r in rows["exec"].values()),
           "render_cpu_s": sum(r.get("cpu_s") or 0.0 for r in rows["exec"].values()),
           "separate_audit_worker_s": sum(r.get("runtime_sec") or 0.0 for r in rows["audit"].values()
                                          if r.get("audit_pass") == "separate" and not r.get("audit_cache_hit"))}
    if res["returncode"] != 0:
        print(f"[B ours] prism-fast exited {res['returncode']} (see {work / 'ours.log'})", file=sys.stderr)
    return out


# ---- part B: the authors' toolkit -----------------------------------------------------------------------

def run_toolkit(toolkit: Path, inp: Path, work: Path, workers: int, render_timeout: int,
                audit_timeout: int) -> dict:
    """The toolkit's own drivers, as run_evaluation_pipeline.sh runs them (PADVC left out), N workers each."""
    from bench.parity import toolkit_code, toolkit_env

    code = toolkit_code(toolkit, work)  # <work>/toolkit/code/scripts: its temp files never touch the checkout
    env = toolkit_env(work)
    tk = work / "toolkit"
    videos, render_json, audit_dir, td_dir = tk / "videos", tk / "render_results.json", tk / "audit", tk / "td"
    py = sys.executable
    stages = {}
    stages["render"] = _timed([py, "-u", str(code / "render_directory.py"), "--input-dir", str(inp),
                               "--output-dir", str(videos), "--results-json", str(render_json),
                               "--workers", str(workers), "--timeout-sec", str(render_timeout),
                               "--manim-bin", env["MANIM_BIN"]], tk / "render.log", cwd=code, env=env)
    print(f"[B toolkit] render {stages['render']['wall_s']:.1f} s", file=sys.stderr, flush=True)
    stages["audit"] = _timed([py, "-u", str(code / "audit_batch.py"), "--input-dir", str(inp),
                              "--output-dir", str(audit_dir), "--workers", str(workers),
                              "--timeout-sec", str(audit_timeout), "--no-images"], tk / "audit.log", cwd=code, env=env)
    print(f"[B toolkit] audit {stages['audit']['wall_s']:.1f} s", file=sys.stderr, flush=True)
    render = json.loads(render_json.read_text(encoding="utf-8")) if render_json.exists() else {}
    render_rows = {r["id"]: r for r in render.get("details", [])}
    audit = json.loads((audit_dir / "results.json").read_text(encoding="utf-8")) \
        if (audit_dir / "results.json").exists() else {}
    audit_rows = {r["id"]: r for r in audit.get("details", [])}
    # score_td's input: the rows its pipeline hands it (id, render_success, video_path, spatial fields)
    td_in = tk / "td_input.jsonl"
    with td_in.open("w", encoding="utf-8") as fh:
        for sid in sorted(render_rows):
            r, a = render_rows[sid], audit_rows.get(sid) or {}
            fh.write(json.dumps({"id": sid, "render_success": bool(r.get("success")),
                                 "video_path": r.get("video_path"),
                                 "visual_structure_pass": a.get("visual_structure_pass", 0),
                                 "visual_structure_rate": a.get("visual_structure_rate", 0.0)}) + "\n")
    stages["td"] = _timed([py, "-u", str(code / "score_td.py"), "--input-jsonl", str(td_in), "--output-dir",
                           str(td_dir), "--workers", str(workers)], tk / "td.log", cwd=code, env=env)
    print(f"[B toolkit] TD {stages['td']['wall_s']:.1f} s", file=sys.stderr, flush=True)
    td_file = td_dir / "td_center_scores.jsonl"
    td_rows = {}
    if td_file.exists():
        for line in td_file.read_text(encoding="utf-8").splitlines():
            if line.strip():
                rec = json.loads(line)
                td_rows[rec["id"]] = rec
    per = {}
    for sid, r in render_rows.items():
        a = audit_rows.get(sid) or {}
        per[sid] = {"exec_success": bool(r.get("success")), "render_s": r.get("runtime_sec"),
                    "audit_s": a.get("runtime_sec"), "spatial_pass": int(a.get("visual_structure_pass", 0) or 0),
                    "td_raw": td_rows.get(sid, {}).get("td_raw") if r.get("success") else None,
                    "video_path": r.get("video_path")}
    failed = [k for k, v in stages.items() if v["returncode"] != 0]
    if failed:
        print(f"[B toolkit] stage(s) {failed} exited non-zero (logs in {tk})", file=sys.stderr)
    return {"kind": "toolkit", "stages": stages, "samples": per,
            "wall_s": sum(v["wall_s"] for v in stages.values()),
            "cpu_s": sum(v["cpu_s"] for v in stages.values()),
            "render_worker_s": sum(v["render_s"] or 0.0 for v in per.values()),
            "audit_worker_s": sum(v["audit_s"] or 0.0 for v in per.values())}


def baseline_recreation(inputs: list[dict], work: Path) -> dict:
    """FALLBACK (no --toolkit): the authors' sequence re-created from the spec, one sample after another."""
    from bench.oracle import td_raw_video
    from bench.render_bench import run_baseline
    from prism_fast.audit.config import AuditConfig
    from prism_fast.audit.runner import audit_one
    from prism_fast.execute.scene_select import select_scene
    from prism_fast.profile import REFERENCE

    manim_bin = str(Path(sys.executable).with_name("manim"))
    full = AuditConfig(full_fidelity=True, geometry_backend="matplotlib")
    work.mkdir(parents=True, exist_ok=True)
    per = {}
    stages = {k: {"wall_s": 0.0, "cpu_s": 0.0} for k in ("render", "audit", "td")}
    for rec_in in inputs:
        sid, script = rec_in["id"], rec_in["script"]
        rec = {}
        cpu0, t0 = _children_cpu(), time.perf_counter()
        scene = select_scene(script, REFERENCE).name
        r = run_baseline(manim_bin, sid, script, scene, work, 600)
        rec["render_s"] = time.perf_counter() - t0
        stages["render"]["wall_s"] += rec["render_s"]
        stages["render"]["cpu_s"] += _children_cpu() - cpu0
        rec["exec_success"] = bool(r["success"])
        cpu0, t0 = _children_cpu(), time.perf_counter()
        a = audit_one(sid, script, work / "audit", full)
        rec["audit_s"] = time.perf_counter() - t0
        stages["audit"]["wall_s"] += rec["audit_s"]
        stages["audit"]["cpu_s"] += _children_cpu() - cpu0
        rec["spatial_pass"] = int(a["visual_structure_pass"])
        t0 = time.perf_counter()
        video = work / "baseline_videos" / f"{sid}.mp4"
        rec["td_raw"] = td_raw_video(str(video)) if r["success"] else None
        rec["video_path"] = str(video)
        rec["td_s"] = time.perf_counter() - t0
        stages["td"]["wall_s"] += rec["td_s"]
        per[sid] = rec
        print(f"[B {RECREATION}] {sid}: render {rec['render_s']:.1f}s audit {rec['audit_s']:.1f}s "
              f"td {rec['td_s']:.1f}s", file=sys.stderr, flush=True)
    return {"kind": "recreation", "stages": stages, "samples": per,
            "wall_s": sum(v["wall_s"] for v in stages.values()), "cpu_s": sum(v["cpu_s"] for v in stages.values()),
            "render_worker_s": sum(v["render_s"] for v in per.values()),
            "audit_worker_s": sum(v["audit_s"] for v in per.values())}


def _td_difference_explained(rec: dict, our_exec_row: dict) -> str | None:
    """Why a sample's TD_raw may differ without either side being wrong: the two renders made different videos
    (a script that does not render the same twice, e.g. unseeded randomness). Then our TD call on the baseline's
    own video must give the baseline's TD_raw. None: not explained (a real disagreement)."""
    from prism_fast.fsutil import sha256_file

    theirs, mine = rec.get("video_path"), our_exec_row.get("video_path")
    if not theirs or not mine or not Path(theirs).is_file() or not Path(mine).is_file():
        return None
    if sha256_file(theirs) == sha256_file(mine):
        return None   # the same video and another TD_raw: a real disagreement
    from prism_fast.metrics.td import compute_td_raw

    again = compute_td_raw(theirs).td_raw
    if again != rec["td_raw"]:
        return None
    return "the two renders made different videos; our TD on the baseline's video gives its TD_raw exactly"


def compare(base: dict, ours: dict) -> tuple[list[str], list[str]]:
    """(problems, notes): disagreements between the two sides, and TD_raw differences explained by two different
    videos (:func:`_td_difference_explained`)."""
    problems, notes = [], []
    ex, au, td = (ours["rows"][s] for s in ("exec", "audit", "td"))
    for sid, rec in base["samples"].items():
        if sid not in ex:
            problems.append(f"{sid}: no Exec row on our side")
            continue
        if bool(ex[sid]["success"]) != rec["exec_success"]:
            problems.append(f"{sid}: Exec success differs (toolkit {rec['exec_success']}, ours "
                            f"{bool(ex[sid]['success'])})")
        if int((au.get(sid) or {}).get("visual_structure_pass") or 0) != rec["spatial_pass"]:
            problems.append(f"{sid}: Spatial pass differs")
        if rec["td_raw"] is not None and (td.get(sid) or {}).get("td_raw") != rec["td_raw"]:
            line = f"{sid}: TD_raw differs (ours {(td.get(sid) or {}).get('td_raw')}, baseline {rec['td_raw']})"
            why = _td_difference_explained(rec, ex[sid])
            if why is None:
                problems.append(line)
            else:
                notes.append(f"{line}: {why}")
    return problems, notes


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.1f}x" if a and b else "-"


def format_b(base: dict, ours: dict, n: int, workers: int) -> list[str]:
    """The side-by-side table of part B (stages, end to end, worker-seconds) and the executions line."""
    label = "authors' toolkit" if base["kind"] == "toolkit" else RECREATION
    st, os_ = base["stages"], ours["stage_seconds"]
    w = f"{workers} worker(s)" if base["kind"] == "toolkit" else "1 process"
    lines = [f"B  {n} samples; baseline = {label}, {w}; ours = prism-fast eval, {workers} worker(s)", "",
             "| stage | baseline wall s | baseline CPU s | ours wall s | ratio (wall) |",
             "|---|---|---|---|---|"]
    ours_exec, ours_audit, ours_td = os_.get("exec"), os_.get("audit"), os_.get("td")
    rows = [("render (ours: Exec stage, incl. one-pass and separate audits)", st["render"], ours_exec),
            ("audit (ours: Spatial stage)", st["audit"], ours_audit),
            ("TD", st["td"], ours_td)]
    for name, b, o in rows:
        lines.append(f"| {name} | {b['wall_s']:.1f} | {b['cpu_s']:.1f} | {'-' if o is None else f'{o:.1f}'} | "
                     f"{_ratio(b['wall_s'], o)} |")
    lines.append(f"| render + audit | {st['render']['wall_s'] + st['audit']['wall_s']:.1f} | "
                 f"{st['render']['cpu_s'] + st['audit']['cpu_s']:.1f} | "
                 f"{(ours_exec or 0) + (ours_audit or 0):.1f} | "
                 f"{_ratio(st['render']['wall_s'] + st['audit']['wall_s'], (ours_exec or 0) + (ours_audit or 0))} |")
    lines.append(f"| **end to end** (ours: the whole command, start-up included) | {base['wall_s']:.1f} | "
                 f"{base['cpu_s']:.1f} | {ours['wall_s']:.1f} | **{_ratio(base['wall_s'], ours['wall_s'])}** |")
    lines += ["", f"worker-seconds (sum over samples): baseline render {base['render_worker_s']:.1f}, "
                  f"audit {base['audit_worker_s']:.1f}; ours render {ours['render_worker_s']:.1f} "
                  f"(CPU {ours['render_cpu_s']:.1f}), separate audits {ours['separate_audit_worker_s']:.1f}",
              f"ours: CPU-s of the reaped process tree {ours['cpu_s']:.1f} (Ray workers reaped by Ray may be missing); "
              f"stages " + ", ".join(f"{k}={v}" for k, v in os_.items())]
    execs = [v for v in ours["manim_executions"].values() if v is not None]
    per = sum(execs) / len(execs) if execs else float("nan")
    lines.append(f"Manim executions per sample: ours {per:.2f} ({ours['audit_shared']} one-pass shared audits, "
                 f"{ours['audit_separate']} separate audits, {len(execs)} samples); baseline 2")
    if base["kind"] != "toolkit":
        lines.append(f"NOTE: the baseline is a {RECREATION}; pass --toolkit PATH for the real one.")
    return lines


class _SkipB(Exception):
    """--a-only: part B is not run."""


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ids", default=None, help="comma-separated ids (bundled default: " + ",".join(DEFAULT_IDS) + ")")
    ap.add_argument("--limit", type=int, default=None, help="the first N samples (bundled set or --scripts order)")
    ap.add_argument("--per-lang", type=int, default=None,
                    help="the first N bundled samples of each language (parts A and B) instead of --ids")
    ap.add_argument("--scripts", type=Path, default=None,
                    help="part B on this directory of <id>.py (+ optional manifest.jsonl) instead of the bundled set")
    ap.add_argument("--toolkit", type=Path, default=None,
                    help="checkout of positionprivacy/PRISM: the real baseline (else a spec re-creation)")
    ap.add_argument("--workers", type=int, default=2, help="part B: workers on each side (equal)")
    ap.add_argument("--render-timeout", type=int, default=600, help="toolkit render timeout per script")
    ap.add_argument("--audit-timeout", type=int, default=900, help="toolkit audit timeout per script")
    ap.add_argument("--work", type=Path, default=None, help="keep the work dir here (default: a temp dir, removed)")
    ap.add_argument("--skip-a", action="store_true")
    ap.add_argument("--a-scripts", action="store_true", help="part A on the --scripts set (default: bundled)")
    ap.add_argument("--a-only", action="store_true", help="part A only (no part B)")
    ap.add_argument("--a-limit", type=int, default=None,
                    help="part A on the first N bundled samples instead of the part B ids "
                         "(more samples, less imbalance)")
    ap.add_argument("--skip-baseline", action="store_true")
    ap.add_argument("--no-a-warmup", action="store_true", help="part A without its untimed warm-up pass")
    ap.add_argument("--a-order", default="1,2",
                    help="part A's timed passes by worker count, e.g. 1,2,2,1 (interleaved: host drift cancels)")
    ap.add_argument("--a-pin", action="store_true",
                    help="part A: each timed pass on as many cores as it has workers (N workers on N cores)")
    ap.add_argument("--json", default=None)
    args = ap.parse_args(argv)
    try:
        a_order = tuple(int(n) for n in args.a_order.split(","))
    except ValueError:
        a_order = ()
    if sorted(set(a_order)) != [1, 2]:
        ap.error(f"--a-order {args.a_order}: worker counts 1 and 2, comma-separated (e.g. 1,2,2,1)")
    if args.a_pin:
        try:
            pinned_cores(max(a_order), True)
        except ValueError as exc:
            ap.error(str(exc))
    args.ids_given = args.ids is not None
    if args.ids is None:
        args.ids = ",".join(DEFAULT_IDS)
    if args.toolkit is not None and not (args.toolkit / "scripts" / "audit_single.py").exists():
        ap.error(f"--toolkit {args.toolkit}: not a checkout of positionprivacy/PRISM (no scripts/audit_single.py)")
    if args.scripts is not None and not args.scripts.is_dir():
        ap.error(f"--scripts {args.scripts}: not a directory")
    if args.scripts is not None and not args.skip_a and not args.a_limit and not args.a_scripts:
        args.skip_a = True  # part A is defined on the bundled set unless --a-scripts
        print("[A] skipped: --scripts given (part A runs on the bundled set; use --a-limit N, or --a-scripts for "
              "these scripts)", file=sys.stderr)
    inputs = select_inputs(args)
    if not inputs:
        ap.error("no scripts selected")
    ids = [r["id"] for r in inputs]
    load_before = os.getloadavg()
    work = args.work.resolve() if args.work else Path(tempfile.mkdtemp(prefix="scaling_bench_"))
    work.mkdir(parents=True, exist_ok=True)
    report: dict = {"ids": ids, "cpus": os.cpu_count(), "workers": args.workers,
                    "scripts": str(args.scripts) if args.scripts else "bundled",
                    "baseline_kind": None if args.skip_baseline else ("toolkit" if args.toolkit else "recreation")}
    problems: list[str] = []
    notes: list[str] = []
    try:
        if not args.skip_a:
            from prism_fast.dataset.bundled import bundled_dataset_path
            from prism_fast.dataset.loader import load_dataset

            if args.a_scripts and args.scripts is not None:  # the directory's scripts (e.g. the open corpus)
                _inp, a_dataset = stage_inputs(inputs, work / "a_input")
                report["A"] = part_a(None, work, warmup=not args.no_a_warmup, dataset=a_dataset, order=a_order,
                                      pin=args.a_pin)
                report["A_ids"] = ids
            else:
                a_ids = ([t.id for t in load_dataset(bundled_dataset_path()).tasks[:args.a_limit]] if args.a_limit
                         else ids)
                report["A"] = part_a(a_ids, work, warmup=not args.no_a_warmup, order=a_order, pin=args.a_pin)
                report["A_ids"] = a_ids
        base = ours = None
        if args.a_only:
            raise _SkipB
        inp, dataset = stage_inputs(inputs, work)
        if not args.skip_baseline:
            if args.toolkit:
                base = run_toolkit(args.toolkit.resolve(), inp, work, args.workers, args.render_timeout,
                                   args.audit_timeout)
            else:
                print(f"[B] WARNING: no --toolkit: the baseline is a {RECREATION}", file=sys.stderr, flush=True)
                base = baseline_recreation(inputs, work / "baseline")
            report["B_baseline"] = base
        ours = run_ours(dataset, work, args.workers)
        report["B_ours"] = {k: v for k, v in ours.items() if k != "rows"}
        print(f"[B ours] {ours['wall_s']:.1f} s end to end", file=sys.stderr, flush=True)
        if base is not None:
            problems, notes = compare(base, ours)
    except _SkipB:
        pass
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    report.update(load_before=load_before, load_after=load_after, problems=problems, notes=notes)
    print(f"samples: {len(ids)} ({', '.join(ids[:8])}{', ...' if len(ids) > 8 else ''}); {os.cpu_count()} CPUs")
    if "A" in report:
        a = report["A"]
        print(f"A  samples: {len(report['A_ids'])}")
        if a.get("pinned"):
            print("A  PINNED: each timed pass on as many cores as it has workers (--a-pin: N workers on N cores)")
        if len(a["order"]) > 2:
            print(f"A  passes ({','.join(map(str, a['order']))} workers): "
                  + ", ".join(f"{p['exec_s']:.1f} s" for p in a["passes"]) + " (means below)")
        print(f"A  render stage, 1 worker : {a[1]['exec_s']:.1f} s  ({a[1]['samples_per_hour']:.0f} samples/h)")
        print(f"A  render stage, 2 workers: {a[2]['exec_s']:.1f} s  ({a[2]['samples_per_hour']:.0f} samples/h)")
        pinned = " (pinned: N workers on N cores)" if a.get("pinned") else ""
        print(f"A  ratio 2 vs 1 workers   : {a['ratio']:.2f}x{pinned} "
              f"(target >= 1.8x: {'met' if a['ratio'] >= 1.8 else 'NOT met'})")
        print(f"A  cores per render       : {a[1]['render_cores']:.2f} alone, "
              f"{a[2]['render_cores']:.2f} with 2 workers")
    if base is not None:
        for line in format_b(base, ours, len(ids), args.workers):
            print(line)
        ratio = base["wall_s"] / ours["wall_s"] if ours["wall_s"] else float("nan")
        report["B_ratio"] = ratio
        target = 10 if args.scripts else 8
        print(f"B  ratio ours vs {'toolkit' if base['kind'] == 'toolkit' else RECREATION}: {ratio:.1f}x "
              f"(issue #19 target >= {target}x: {'met' if ratio >= target else 'NOT met'})")
    elif ours is not None:
        print(f"B  ours end to end: {ours['wall_s']:.1f} s; stages "
              + ", ".join(f"{k}={v}" for k, v in ours["stage_seconds"].items()))
    print(f"load average before {load_before[0]:.1f}, after {load_after[0]:.1f}")
    for n in notes:
        print(f"NOTE {n}")
    for p in problems:
        print(f"PROBLEM {p}")
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1, default=str))
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
