"""``prism-fast generate``: query an OpenAI-compatible model for every selected task and write a predictions set.

Layout (inside the run directory the matching ``eval`` uses, ``<runs_root>/<model>-<lang>-<profile>``)::

    rows/generate/...            one store row per call: prompt and messages sent, raw reply, usage, latency
    rows/selfdebug/...           rounds > 1: each round's render + audit outcome
    generate/responses.jsonl     round-1 replies {id, language, response, ...}: what `eval model=<name>` reads
    generate/responses_final.jsonl   rounds > 1: the last round's reply per task
    generate/run.json            manifest (config without secrets, versions, profile)
    generate/summary.json        counts, tokens, latency, cost
    generate/selfdebug/round<k>/ videos and audit reports of the self-debugging rounds
    selfdebug.json               Exec@k / Spatial@k (rounds > 1)

Resume: the store is the authority. A task whose round already has a row is not requested again; rows whose
*call* failed (provider errors) are re-requested only with ``retry_failed=true``. The JSONL files are rewritten
from the store at the end, so they never hold duplicates. The prompt is the dataset instruction, stripped, sent as
one user message whose content is one text part (generation.md §1.1, §2.3).

The row schema, the rounds of a task and the outputs are ``prism_fast.generate`` (``rows``, ``rounds``,
``outputs``); this module wires them to the store, a thread pool and the render/audit cores.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from prism_fast.fsutil import atomic_write_text
from prism_fast.generate.client import ChatClient
from prism_fast.generate.outputs import format_generation_summary, summarize_generation, write_responses
from prism_fast.generate.rounds import RoundTools, TaskRunner, gen_dir
from prism_fast.generate.rows import (PAPER_TEMPERATURE, effective_timeout, got_answer, is_call_failure,
                                     stored_request_problems)
from prism_fast.generate.selfdebug import exec_spatial_at_k, format_at_k, sample_of
from prism_fast.pipeline.options import GenerateOptions, eval_command, generate_options_from_config
from prism_fast.store import ResultsStore

log = logging.getLogger("prism_fast")


def generate_from_config(cfg) -> dict:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return run_generate(generate_options_from_config(cfg))


class _LockedSink:
    """RowSink shared by worker threads."""

    def __init__(self, store: ResultsStore, stage: str, flush_rows: int):
        from prism_fast.pipeline.stages import RowSink

        self._sink = RowSink(store, stage, flush_rows=max(1, flush_rows))
        self._lock = threading.Lock()

    def add(self, row: dict) -> None:
        with self._lock:
            self._sink.add(row)

    def flush(self) -> None:
        with self._lock:
            self._sink.flush()


def round_tools(opts: GenerateOptions) -> RoundTools:
    """The render and audit cores (and the failure taxonomy) for self-debugging rounds."""
    from prism_fast.audit import audit_one
    from prism_fast.audit.stage import forget_reports
    from prism_fast.execute.render import render_one
    from prism_fast.execute.stage import video_path
    from prism_fast.execute.taxonomy import taxonomy_fields

    def forget(task_id: str, round_dir: Path) -> None:
        video_path(round_dir, task_id).unlink(missing_ok=True)
        forget_reports(round_dir / "audit", [task_id])

    return RoundTools(forget=forget,
                      render=lambda tid, code, out: render_one(tid, code, out, opts.render, opts.profile),
                      audit=lambda tid, code, out: audit_one(tid, code, out, opts.audit_cfg, opts.profile),
                      classify=taxonomy_fields, slots=threading.Semaphore(max(1, opts.selfdebug.workers)))


# -- driver -------------------------------------------------------------------------------------------------------
def run_generate(opts: GenerateOptions) -> dict:
    from prism_fast.pipeline.lifecycle import record_invocation
    from prism_fast.pipeline.manifest import write_generate_manifest
    from prism_fast.pipeline.progress import StageProgress
    from prism_fast.pipeline.run import select_run_tasks

    t_start = time.perf_counter()
    run_dir = Path(opts.run_dir)
    out_dir = gen_dir(run_dir)
    store = ResultsStore(run_dir)
    tasks = select_run_tasks(opts, run_dir)
    if not tasks:
        raise SystemExit("no tasks selected (check dataset.ids / lang / dataset.limit)")
    if opts.rounds < 1:
        raise SystemExit(f"generate.rounds must be >= 1, got {opts.rounds}")
    if opts.endpoint.temperature != PAPER_TEMPERATURE:
        log.warning("generate.temperature=%s differs from the paper's %s; recorded in every row",
                    opts.endpoint.temperature, PAPER_TEMPERATURE)
    timeout_s = effective_timeout(opts.profile, opts.timeout_s)
    if timeout_s != opts.timeout_s:
        log.warning("Q-GEN-3 (profile %s): generate.timeout_s=%gs is not applied; requests run under the OpenAI "
                    "SDK default of %gs as in the authors' toolkit (profile=improved applies it)",
                    opts.profile.name, opts.timeout_s, timeout_s)
    try:
        client = ChatClient(opts.endpoint, opts.retry, timeout_s)
    except (RuntimeError, ValueError) as exc:  # key variable unset, bad base_url / thinking_style: before any request
        raise SystemExit(str(exc)) from None
    gen_rows = {(r["lang"], r["sample_id"], r["round"]): r for r in store.rows("generate", opts.model_name)}
    problems = stored_request_problems(opts.endpoint, tasks, gen_rows)  # before the manifest: a refusal changes nothing
    if problems:
        raise SystemExit(f"generate: {len(problems)} stored repl(ies) in {opts.run_dir} were made with other "
                         f"settings than this run's, e.g. {problems[0]}; resume with the same settings, or use "
                         "another run_name (each model setting deserves its own run)")
    record_invocation(run_dir, opts.config_snapshot)
    out_dir.mkdir(parents=True, exist_ok=True)
    store.sweep_temporaries()
    write_generate_manifest(opts, out_dir, len(tasks), timeout_s)

    sd_rows = {(r["lang"], r["sample_id"], r["round"]): r for r in store.rows("selfdebug", opts.model_name)}
    if opts.rounds > 1 and (opts.render is None or opts.audit_cfg is None):
        raise SystemExit("generate.rounds > 1 needs the render and audit settings")
    gen_sink = _LockedSink(store, "generate", opts.flush_rows)
    sd_sink = _LockedSink(store, "selfdebug", opts.flush_rows)
    runner = TaskRunner(opts, client, gen_sink, sd_sink, gen_rows, sd_rows,
                        round_tools(opts) if opts.rounds > 1 else None, timeout_s)
    pending = [t for t in tasks if not runner.finished(t)]
    log.info("generate: %d task(s) selected, %d already done, %d to request (model %s, concurrency %d, rounds %d)",
             len(tasks), len(tasks) - len(pending), len(pending), opts.endpoint.model_id, opts.concurrency,
             opts.rounds)
    bar = StageProgress("gen", len(pending))
    task_errors: list[str] = []
    pool = ThreadPoolExecutor(max_workers=max(1, min(opts.concurrency, len(pending) or 1)))
    try:
        futures = {pool.submit(runner.run, t): t for t in pending}
        for fut in as_completed(futures):
            try:
                row = fut.result()
            except Exception:  # a bug, not a provider or script failure: report it, keep the other tasks going
                log.exception("generate: task %s crashed; it has no row for the failing round", futures[fut].id)
                task_errors.append(futures[fut].id)
                row = None
            bar.update(1, failed=row is None or row["status"] != "ok")
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        gen_sink.flush()
        sd_sink.flush()
        bar.close()
    pool.shutdown(wait=True)

    rows = store.rows("generate", opts.model_name)
    task_keys = {(t.language, t.id) for t in tasks}
    rows = [r for r in rows if (r["lang"], r["sample_id"]) in task_keys]
    paths = write_responses(rows, out_dir, opts.rounds)
    summary = summarize_generation(rows, opts.model_name, runner.requests, time.perf_counter() - t_start)
    summary["responses"] = {k: str(v) for k, v in paths.items()}
    summary["task_errors"] = sorted(task_errors)
    summary["answered_this_run"] = runner.answered
    summary["call_failures_this_run"] = dict(sorted(runner.call_failures.items()))
    # never answered = nothing this run asked got a reply and no stored call of these tasks ever did (a retry of
    # calls that still fail, against an endpoint that answered the others, is not a dead endpoint)
    summary["endpoint_never_answered"] = (runner.requests > 0 and runner.answered == 0
                                          and not any(got_answer(r) for r in rows))
    summary["eval_command"] = eval_command(opts)
    if opts.rounds > 1:
        sd = [r for r in store.rows("selfdebug", opts.model_name) if (r["lang"], sample_of(r)) in task_keys]
        curve = exec_spatial_at_k(sd, opts.rounds)
        summary["selfdebug"] = {str(k): v for k, v in curve.items()}
        atomic_write_text(run_dir / "selfdebug.json", json.dumps(
            {"model": opts.model_name, "profile": opts.profile.name, "rounds": opts.rounds,
             "at_k": {str(k): v for k, v in curve.items()}}, indent=2))
    atomic_write_text(out_dir / "summary.json", json.dumps(summary, ensure_ascii=False, indent=2))
    print(format_generation_summary(summary))
    if opts.rounds > 1:
        print("\nself-debugging (share of tasks passing within k rounds):")
        print(format_at_k(curve))
    print(f"\npredictions: {paths['responses']}")
    failures = sum(runner.call_failures.values())
    kinds = ", ".join(f"{k}={v}" for k, v in sorted(runner.call_failures.items()))
    if summary["endpoint_never_answered"]:
        last = next((r.get("provider_error") for r in rows if is_call_failure(r)), None)
        print(f"\ngenerate FAILED: the endpoint never answered. All {failures} request(s) of this run failed "
              f"({kinds}) at {opts.endpoint.base_url} (model_id {opts.endpoint.model_id}); e.g. {last}\n"
              "Check that the server is up and model.endpoint.base_url / model_id / api_key_env are right, then "
              "re-run the same command with retry_failed=true (the failed calls are stored as error rows).")
        raise SystemExit(1)
    if failures:
        print(f"\n{failures} of {runner.requests} request(s) of this run failed ({kinds}); they are stored as error "
              "rows and `eval` scores them as failures. Re-run with retry_failed=true to request them again.")
    print(f"evaluate with: {eval_command(opts)}")
    return summary
