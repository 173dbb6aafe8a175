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
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import shlex
import shutil
import statistics
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from prism_fast.dataset.loader import Task
from prism_fast.fsutil import atomic_write_text, sha256_text_or_none
from prism_fast.generate.client import (SDK_DEFAULT_TIMEOUT_S, CallResult, ChatClient, ChatEndpoint, RetryPolicy,
                                        call_cost)
from prism_fast.generate.selfdebug import (assistant_turn, build_feedback, exec_spatial_at_k, format_at_k,
                                           round_row_id, sample_of, spatial_passed, user_message)
from prism_fast.profile import Profile
from prism_fast.store import ResultsStore

if TYPE_CHECKING:  # typed fields of GenerateOptions (pipeline.run imports this module's callers lazily)
    from prism_fast.audit.config import AuditConfig
    from prism_fast.execute.render import RenderConfig
    from prism_fast.config_schema import DatasetSchema

log = logging.getLogger("prism_fast")

PAPER_TEMPERATURE = 0.7
# Call failures (the provider's fault) as opposed to a reply that cleans to nothing (the model's).
PROVIDER_ERROR_KINDS = ("rate_limited", "server_error", "timeout", "connection_error", "malformed_response",
                        "http_error", "no_choices", "empty_content")


@dataclass
class SelfDebugSettings:
    workers: int = 1  # concurrent renders/audits
    error_tail_chars: int = 2000
    max_findings: int = 20


@dataclass
class GenerateOptions:
    run_dir: Path
    model_name: str
    endpoint: ChatEndpoint
    retry: RetryPolicy
    timeout_s: float  # configured; applied when Q-GEN-3 is fixed (see effective_timeout)
    concurrency: int
    rounds: int
    languages: list[str]
    dataset: DatasetSchema
    profile: Profile
    render: RenderConfig | None = None  # rounds > 1
    audit_cfg: AuditConfig | None = None  # rounds > 1
    selfdebug: SelfDebugSettings = field(default_factory=SelfDebugSettings)
    retry_failed: bool = False
    flush_rows: int = 16
    config_snapshot: dict = field(default_factory=dict)
    eval_overrides: list[str] = field(default_factory=list)  # this invocation's overrides that `eval` needs too


def effective_timeout(opts: GenerateOptions) -> float:
    """Q-GEN-3: the toolkit stores its timeout but never passes it, so its requests run under the SDK default."""
    if opts.profile.fixes("Q-GEN-3"):  # improved: the configured timeout is applied
        return float(opts.timeout_s)
    return SDK_DEFAULT_TIMEOUT_S


# -- configuration → typed options ----------------------------------------------------------------------------
def endpoint_from_mapping(model: dict, generate: dict) -> ChatEndpoint:
    ep = model.get("endpoint")
    if not isinstance(ep, dict):
        raise SystemExit(f"model {model.get('name')!r} has no `endpoint` section, so it cannot be queried; use "
                         "model=local (any OpenAI-compatible base URL) or one of the provider configs in conf/model/")
    for key in ("base_url", "model_id"):
        if not ep.get(key) or ep.get(key) == "???":
            raise SystemExit(f"model.endpoint.{key} is not set (model {model.get('name')!r})")
    price = ep.get("price") or {}
    from prism_fast.secret_env import register_secret_names

    register_secret_names([ep.get("api_key_env")])  # kept out of every child process, whatever its name
    return ChatEndpoint(
        base_url=str(ep["base_url"]), model_id=str(ep["model_id"]), api_key_env=ep.get("api_key_env") or None,
        max_tokens=int(ep.get("max_tokens") or generate.get("max_tokens") or 8192),
        temperature=float(generate.get("temperature", PAPER_TEMPERATURE)),
        thinking=ep.get("thinking"), thinking_style=str(ep.get("thinking_style") or "none"),
        thinking_budget=ep.get("thinking_budget"), reasoning_effort=str(ep.get("reasoning_effort") or "medium"),
        extra_body=dict(ep.get("extra_body") or {}),
        price_prompt_per_mtok=price.get("prompt_per_mtok"), price_completion_per_mtok=price.get("completion_per_mtok"),
    )


def generate_options_from_config(cfg) -> GenerateOptions:
    from omegaconf import OmegaConf

    from prism_fast.pipeline.run import options_from_config

    base = options_from_config(cfg)  # dataset, languages, profile, render and audit settings as `eval` reads them
    g = OmegaConf.to_container(cfg.generate, resolve=True)
    model = OmegaConf.to_container(cfg.model, resolve=True)
    backoff = g.get("backoff") or {}
    sd = g.get("selfdebug") or {}
    workers = sd.get("workers") or os.cpu_count() or 1
    snapshot = dict(base.config_snapshot)
    return GenerateOptions(
        run_dir=base.run_dir, model_name=base.model_name, endpoint=endpoint_from_mapping(model, g),
        retry=RetryPolicy(max_attempts=int(g.get("max_attempts", 3)), base_s=float(backoff.get("base_s", 5.0)),
                          factor=float(backoff.get("factor", 2.0)), max_s=float(backoff.get("max_s", 60.0))),
        timeout_s=float(g.get("timeout_s", 1200)), concurrency=int(g.get("concurrency", 16)),
        rounds=int(g.get("rounds", 1)), languages=base.languages, dataset=base.dataset, profile=base.profile,
        render=base.render, audit_cfg=base.audit_cfg,
        selfdebug=SelfDebugSettings(workers=int(workers), error_tail_chars=int(sd.get("error_tail_chars", 2000)),
                                    max_findings=int(sd.get("max_findings", 20))),
        retry_failed=base.retry_failed, flush_rows=int(g.get("flush_rows", 16)), config_snapshot=snapshot,
        eval_overrides=eval_overrides(base.model_name),
    )


def _generate_only(override: str) -> bool:
    key = override.split("=", 1)[0].lstrip("+~")
    return key in ("command", "retry_failed", "generate") or key.startswith(("generate.", "hydra."))


def eval_overrides(model_name: str) -> list[str]:
    """The overrides of this ``generate`` call that its ``eval`` needs too (dataset, lang, runs_root, run_name,
    profile, model.*: they decide the run directory and the tasks), without the generation-only ones. The
    printed next step used to be ``prism-fast eval model=<name>`` alone, which evaluated another dataset in
    another run directory."""
    overrides: list[str] = []
    try:
        from hydra.core.hydra_config import HydraConfig

        if HydraConfig.initialized():
            overrides = [str(o) for o in HydraConfig.get().overrides.task]
    except Exception:  # noqa: BLE001 - library use: no Hydra, no overrides
        overrides = []
    keep = [o for o in overrides if not _generate_only(o)]
    if not any(o.split("=", 1)[0].lstrip("+~") == "model" for o in keep):
        keep.insert(0, f"model={model_name}")
    return keep


def eval_command(opts: "GenerateOptions") -> str:
    return " ".join(["prism-fast", "eval", *(shlex.quote(o) for o in opts.eval_overrides)])


def generate_from_config(cfg) -> dict:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return run_generate(generate_options_from_config(cfg))


# -- helpers ----------------------------------------------------------------------------------------------------
def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat()


def gen_dir(run_dir: Path) -> Path:
    return Path(run_dir) / "generate"


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


def _is_call_failure(row: dict) -> bool:
    return row.get("error_kind") in PROVIDER_ERROR_KINDS


NO_ANSWER_KINDS = ("timeout", "connection_error")  # the endpoint said nothing at all (an HTTP error is an answer)


def _got_answer(row: dict) -> bool:
    return row.get("error_kind") not in NO_ANSWER_KINDS


def _generation_row(opts: GenerateOptions, task: Task, round_no: int, prompt: str, messages: list[dict],
                    call: CallResult, started: str, timeout_s: float) -> dict:
    from prism_fast.generate.cleaning import clean_model_output

    ep = opts.endpoint
    raw = call.content if call.ok else None
    cleaned = clean_model_output(raw or "", task.language, opts.profile)
    if call.ok:
        gen_status = cleaned.status
        status = "ok" if gen_status == "success" else "error"
        error_kind = None if status == "ok" else "empty_after_cleanup"
        error_detail = None if status == "ok" else cleaned.empty_reason
    else:
        # Q-GEN-4: the toolkit turns a provider failure into the busy sentinel, which cleans to nothing.
        gen_status = "provider_error" if opts.profile.fixes("Q-GEN-4") else "empty_after_cleanup"
        status, error_kind, error_detail = "error", call.error_kind, call.error
    usage = call.usage or {}
    params = {"temperature": ep.temperature, "max_tokens": ep.max_tokens, "thinking": ep.thinking,
              "thinking_style": ep.thinking_style, "extra_body": ep.extra_body}
    return {
        "model": opts.model_name, "lang": task.language, "id": round_row_id(task.id, round_no),
        "status": status, "error_kind": error_kind, "error_detail": error_detail, "profile": opts.profile.name,
        "sample_id": task.id, "round": round_no, "gen_status": gen_status, "request_model": ep.model_id,
        "base_url": ep.base_url, "prompt": prompt, "prompt_sha256": sha256_text_or_none(prompt),
        "messages": json.dumps(messages, ensure_ascii=False), "request_params": params,
        "raw_response": raw if raw is not None else call.content, "raw_chars": len(raw or ""),
        "reasoning_chars": len(call.reasoning_content or ""), "finish_reason": call.finish_reason,
        "clean_status": cleaned.status, "cleaned_chars": len(cleaned.code),
        "format_pollution": cleaned.pollution.kinds(),
        "provider_error": None if call.ok else f"{call.error_kind}: {call.error}",
        "http_status": call.http_status, "attempts": call.attempts, "retries": call.retries, "timeout_s": timeout_s,
        "llm_time": call.wall_s, "latency_s": call.latency_s,
        "prompt_tokens": usage.get("prompt_tokens"), "completion_tokens": usage.get("completion_tokens"),
        "total_tokens": usage.get("total_tokens"), "reasoning_tokens": usage.get("reasoning_tokens"),
        "cached_tokens": usage.get("cached_tokens"), "cost_usd": call_cost(ep, call.usage),
        "started_at": started, "finished_at": _now(),
    }


def _last_only_by_round_limit(outcome: dict, round_no: int, rounds: int) -> bool:
    """A stored self-debugging outcome that ended the loop only because that run allowed fewer rounds."""
    return bool(outcome["last_round"]) and round_no < rounds and outcome["status"] != "ok" and \
        outcome["error_kind"] != "provider_error"


def _check_stored_requests(opts: GenerateOptions, tasks: list[Task], gen_rows: dict) -> None:
    """Stored replies are reused on resume only if they answer the same request: same endpoint model,
    base URL, request parameters and (round 1) prompt. Anything else is an error, not a silent mix."""
    ep = opts.endpoint
    want_params = json.loads(json.dumps({"temperature": ep.temperature, "max_tokens": ep.max_tokens,
                                         "thinking": ep.thinking, "thinking_style": ep.thinking_style,
                                         "extra_body": ep.extra_body}))
    prompts = {(t.language, t.id): sha256_text_or_none(t.instruction.strip()) for t in tasks}
    problems = []
    for (lang, sid, rnd), row in sorted(gen_rows.items()):
        stored = row.get("request_params")
        stored = json.loads(stored) if isinstance(stored, str) else stored
        if row.get("request_model") != ep.model_id:
            problems.append(f"{sid} round {rnd}: model_id {row.get('request_model')!r}, now {ep.model_id!r}")
        elif row.get("base_url") != ep.base_url:
            problems.append(f"{sid} round {rnd}: base_url {row.get('base_url')!r}, now {ep.base_url!r}")
        elif stored != want_params:
            problems.append(f"{sid} round {rnd}: request parameters {stored}, now {want_params}")
        elif rnd == 1 and (lang, sid) in prompts and row.get("prompt_sha256") != prompts[(lang, sid)]:
            problems.append(f"{sid}: the dataset's prompt changed since its reply was stored")
    if problems:
        raise SystemExit(f"generate: {len(problems)} stored repl(ies) in {opts.run_dir} were made with other "
                         f"settings than this run's, e.g. {problems[0]}; resume with the same settings, or use "
                         "another run_name (each model setting deserves its own run)")


# -- one task: rounds of generate (→ render → audit → feedback) ----------------------------------------------------
class _TaskRunner:
    def __init__(self, opts: GenerateOptions, client: ChatClient, gen_sink: _LockedSink, sd_sink: _LockedSink,
                 gen_rows: dict, sd_rows: dict, render_slots: threading.Semaphore, timeout_s: float):
        self.opts, self.client, self.gen_sink, self.sd_sink = opts, client, gen_sink, sd_sink
        self.gen_rows, self.sd_rows, self.render_slots, self.timeout_s = gen_rows, sd_rows, render_slots, timeout_s
        self.requests = 0
        self.answered = 0  # requests of this run that got any reply from the endpoint (an HTTP error included)
        self.call_failures: dict[str, int] = {}  # error kind -> requests of this run that got no reply
        self._lock = threading.Lock()

    def _reuse(self, row: dict | None) -> bool:
        return row is not None and not (self.opts.retry_failed and _is_call_failure(row))

    def run(self, task: Task) -> dict:
        """All rounds of one task; returns the last generation row."""
        opts = self.opts
        prompt = task.instruction.strip()  # sent verbatim (generation.md §1.1)
        messages = [user_message(prompt)]
        row = None
        for round_no in range(1, opts.rounds + 1):
            row = self.gen_rows.get((task.language, task.id, round_no))
            if not self._reuse(row):
                started = _now()
                call = self.client.complete(messages, label=f"{task.id} round {round_no}")
                row = _generation_row(opts, task, round_no, prompt, messages, call, started, self.timeout_s)
                with self._lock:
                    self.requests += 1
                    if _is_call_failure(row):
                        kind = str(row.get("error_kind"))
                        self.call_failures[kind] = self.call_failures.get(kind, 0) + 1
                    if _got_answer(row):
                        self.answered += 1
                self.gen_sink.add(row)
                self.sd_rows.pop((task.language, task.id, round_no), None)  # a new reply invalidates its outcome
            if opts.rounds == 1:
                break
            outcome = self.sd_rows.get((task.language, task.id, round_no))
            if outcome is not None and _last_only_by_round_limit(outcome, round_no, opts.rounds):
                outcome = None  # stored as last only because an earlier run had fewer rounds: evaluate again
            if outcome is None:
                outcome = self._evaluate_round(task, round_no, row)
                self.sd_sink.add(outcome)
            if outcome["last_round"]:
                break
            messages = json.loads(row["messages"]) + [
                {"role": "assistant", "content": assistant_turn(row.get("raw_response") or "")},
                user_message(outcome["feedback"]),
            ]
        return row

    def _evaluate_round(self, task: Task, round_no: int, gen_row: dict) -> dict:
        from prism_fast.audit import audit_one
        from prism_fast.execute.render import render_one
        from prism_fast.execute.taxonomy import taxonomy_fields
        from prism_fast.generate.cleaning import clean_model_output

        opts = self.opts
        raw = gen_row.get("raw_response") if not _is_call_failure(gen_row) else None
        code = clean_model_output(raw or "", task.language, opts.profile).code or None
        round_dir = gen_dir(opts.run_dir) / "selfdebug" / f"round{round_no}"
        render_row = audit_row = None
        exec_success = False
        if code is not None:
            # A video or report without a row was left by an interrupted run: never trust it (Q-FUNNEL-2 and
            # Q-SPATIAL-19 would), so a resumed run gives the rows a clean one does.
            (round_dir / "videos" / f"{task.id}.mp4").unlink(missing_ok=True)
            shutil.rmtree(round_dir / "audit" / "audits" / task.id, ignore_errors=True)
            with self.render_slots:
                render_row = render_one(task.id, code, round_dir, opts.render, opts.profile)
                exec_success = bool(render_row.get("success"))
                requires_exec = opts.profile.fixes("Q-FUNNEL-1")
                if exec_success or not requires_exec:  # improved: a failed render cannot pass Spatial anyway
                    audit_row = audit_one(task.id, code, round_dir / "audit", opts.audit_cfg, opts.profile)
        requires_exec = opts.profile.fixes("Q-FUNNEL-1")  # improved: Spatial pass needs the Exec success too
        spatial = spatial_passed(exec_success, audit_row, requires_exec)
        provider_failed = _is_call_failure(gen_row)
        tax = taxonomy_fields(code=code, render_row=render_row, generation_status=gen_row.get("gen_status") or "success",
                              provider_error=gen_row.get("provider_error"), script_id=task.id)
        kind, feedback = build_feedback(task.language, has_script=code is not None, render_row=render_row,
                                        audit_row=audit_row, exec_success=exec_success, spatial_pass=spatial,
                                        error_tail_chars=opts.selfdebug.error_tail_chars,
                                        max_findings=opts.selfdebug.max_findings)
        passed = exec_success and spatial
        last = passed or provider_failed or round_no >= opts.rounds
        audit_row = audit_row or {}
        return {
            "model": opts.model_name, "lang": task.language, "id": round_row_id(task.id, round_no),
            "status": "ok" if passed else "error",
            "error_kind": None if passed else ("provider_error" if provider_failed else
                                               "no_script" if code is None else
                                               "exec_failed" if not exec_success else "spatial_failed"),
            "error_detail": None if passed else (tax.get("error_msg") or audit_row.get("error_msg")),
            "profile": opts.profile.name, "sample_id": task.id, "round": round_no, "rounds": opts.rounds,
            "exec_success": exec_success, "spatial_pass": spatial,
            "error_type": None if exec_success else tax.get("error_type"),
            "error_category": None if exec_success else tax.get("error_category"),
            "error_msg": None if exec_success else tax.get("error_msg"),
            "gen_status": gen_row.get("gen_status"), "script_sha256": sha256_text_or_none(code),
            "audit_success": audit_row.get("audit_success"),
            "visual_structure_pass": audit_row.get("visual_structure_pass"),
            "visual_structure_rate": audit_row.get("visual_structure_rate"),
            "visual_issue_total": audit_row.get("visual_issue_total"),
            "render_wall_s": (render_row or {}).get("wall_s"), "audit_runtime_sec": audit_row.get("runtime_sec"),
            "feedback_kind": kind, "feedback": None if last else feedback, "last_round": last,
        }


# -- outputs ------------------------------------------------------------------------------------------------------
def _model_rows(store: ResultsStore, stage: str, model: str) -> list[dict]:
    return [r for r in store.read(stage).to_pylist() if r["model"] == model]


def _response_record(row: dict) -> dict:
    failed = _is_call_failure(row)
    return {"id": row["sample_id"], "language": row["lang"], "response": "" if failed else (row["raw_response"] or ""),
            "round": row["round"], "gen_status": row["gen_status"], "model": row["request_model"],
            "provider_error": row["provider_error"] if failed else None}


def write_responses(rows: list[dict], out_dir: Path, rounds: int) -> dict[str, Path]:
    """responses.jsonl (round 1) and, for rounds > 1, responses_final.jsonl (each task's last round)."""
    first = sorted((r for r in rows if r["round"] == 1), key=lambda r: (r["lang"], r["sample_id"]))
    paths = {"responses": out_dir / "responses.jsonl"}
    atomic_write_text(paths["responses"], "".join(json.dumps(_response_record(r), ensure_ascii=False) + "\n" for r in first))
    if rounds > 1:
        last: dict[tuple, dict] = {}
        for r in rows:
            key = (r["lang"], r["sample_id"])
            if key not in last or r["round"] > last[key]["round"]:
                last[key] = r
        paths["responses_final"] = out_dir / "responses_final.jsonl"
        atomic_write_text(paths["responses_final"], "".join(json.dumps(_response_record(last[k]), ensure_ascii=False) + "\n"
                                                        for k in sorted(last)))
    return paths


def _stats(values: list[float]) -> dict:
    if not values:
        return {"mean": None, "p50": None, "p95": None, "max": None}
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(round(0.95 * (len(ordered) - 1))))]
    return {"mean": statistics.fmean(ordered), "p50": statistics.median(ordered), "p95": p95, "max": ordered[-1]}


def summarize_generation(rows: list[dict], model: str, requested: int, wall_s: float) -> dict:
    """Counts, tokens, latency and cost over every generation row of the model (resumed ones included)."""
    def count(key):
        out: dict[str, int] = {}
        for r in rows:
            out[str(r.get(key))] = out.get(str(r.get(key)), 0) + 1
        return dict(sorted(out.items()))

    tokens = {}
    for name in ("prompt_tokens", "completion_tokens", "total_tokens", "reasoning_tokens", "cached_tokens"):
        vals = [r[name] for r in rows if r.get(name) is not None]
        tokens[name] = {"sum": sum(vals), "avg": statistics.fmean(vals) if vals else None}
    costs = [r["cost_usd"] for r in rows if r.get("cost_usd") is not None]
    return {
        "model": model, "calls": len(rows), "tasks": len({(r["lang"], r["sample_id"]) for r in rows}),
        "requested_this_run": requested, "wall_s": wall_s,
        "by_gen_status": count("gen_status"), "by_error_kind": count("error_kind"),
        "attempts_total": sum(int(r.get("attempts") or 0) for r in rows),
        "retries_total": sum(len(json.loads(r["retries"] or "[]")) for r in rows),
        "tokens": tokens,
        "latency_s": _stats([r["latency_s"] for r in rows if r.get("latency_s") is not None]),
        "llm_time_s": _stats([r["llm_time"] for r in rows if r.get("llm_time") is not None]),
        "cost_usd": sum(costs) if costs else None, "cost_priced_calls": len(costs),
    }


def format_generation_summary(s: dict) -> str:
    lat, tok = s["latency_s"], s["tokens"]

    def f(x, fmt=".2f"):
        return "-" if x is None else format(x, fmt)

    cost = "n/a (set model.endpoint.price)" if s["cost_usd"] is None else f"${s['cost_usd']:.4f}"
    return "\n".join([
        f"generate: model={s['model']} tasks={s['tasks']} calls={s['calls']} requested now={s['requested_this_run']} "
        f"wall={s['wall_s']:.1f}s",
        f"  status: {s['by_gen_status']}  errors: {s['by_error_kind']}",
        f"  attempts={s['attempts_total']} retries={s['retries_total']}",
        f"  latency s: mean={f(lat['mean'])} p50={f(lat['p50'])} p95={f(lat['p95'])} max={f(lat['max'])}",
        f"  tokens: prompt={tok['prompt_tokens']['sum']} completion={tok['completion_tokens']['sum']} "
        f"reasoning={tok['reasoning_tokens']['sum']} cached={tok['cached_tokens']['sum']} total={tok['total_tokens']['sum']}",
        f"  cost: {cost}",
    ])


def _write_manifest(opts: GenerateOptions, out_dir: Path, n_tasks: int, timeout_s: float) -> None:
    from prism_fast.pipeline import manifest

    ep = opts.endpoint
    manifest.write(out_dir, {
        **manifest.header(opts.profile, opts.model_name), "tasks": n_tasks, "rounds": opts.rounds,
        "endpoint": {"base_url": ep.base_url, "model_id": ep.model_id, "api_key_env": ep.api_key_env,
                     "thinking": ep.thinking, "thinking_style": ep.thinking_style, "max_tokens": ep.max_tokens,
                     "temperature": ep.temperature},
        "timeout_s_applied": timeout_s, "timeout_s_configured": opts.timeout_s,
        "retry": {"max_attempts": opts.retry.max_attempts, "base_s": opts.retry.base_s, "factor": opts.retry.factor,
                  "max_s": opts.retry.max_s},
        "config": opts.config_snapshot,  # names the key's environment variable, never its value
    })


# -- driver -------------------------------------------------------------------------------------------------------
def run_generate(opts: GenerateOptions) -> dict:
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
    timeout_s = effective_timeout(opts)
    if timeout_s != opts.timeout_s:
        log.warning("Q-GEN-3 (profile %s): generate.timeout_s=%gs is not applied; requests run under the OpenAI "
                    "SDK default of %gs as in the authors' toolkit (profile=improved applies it)",
                    opts.profile.name, opts.timeout_s, timeout_s)
    try:
        client = ChatClient(opts.endpoint, opts.retry, timeout_s)
    except (RuntimeError, ValueError) as exc:  # key variable unset, bad base_url / thinking_style: before any request
        raise SystemExit(str(exc)) from None
    gen_rows = {(r["lang"], r["sample_id"], r["round"]): r for r in _model_rows(store, "generate", opts.model_name)}
    _check_stored_requests(opts, tasks, gen_rows)  # before the manifest: a refused run changes nothing
    from prism_fast.pipeline.lifecycle import record_invocation

    record_invocation(run_dir, opts.config_snapshot)
    out_dir.mkdir(parents=True, exist_ok=True)
    store.sweep_temporaries()
    _write_manifest(opts, out_dir, len(tasks), timeout_s)

    sd_rows = {(r["lang"], r["sample_id"], r["round"]): r for r in _model_rows(store, "selfdebug", opts.model_name)}
    if opts.rounds > 1 and (opts.render is None or opts.audit_cfg is None):
        raise SystemExit("generate.rounds > 1 needs the render and audit settings")
    gen_sink = _LockedSink(store, "generate", opts.flush_rows)
    sd_sink = _LockedSink(store, "selfdebug", opts.flush_rows)
    runner = _TaskRunner(opts, client, gen_sink, sd_sink, gen_rows, sd_rows,
                         threading.Semaphore(max(1, opts.selfdebug.workers)), timeout_s)

    def finished(task: Task) -> bool:  # every round this task needs already has its rows
        for k in range(1, opts.rounds + 1):
            g = gen_rows.get((task.language, task.id, k))
            if g is None or not runner._reuse(g):
                return False
            if opts.rounds == 1:
                return True
            s = sd_rows.get((task.language, task.id, k))
            if s is None:
                return False
            if s["last_round"]:
                return not _last_only_by_round_limit(s, k, opts.rounds)
        return True

    pending = [t for t in tasks if not finished(t)]
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

    rows = _model_rows(store, "generate", opts.model_name)
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
                                          and not any(_got_answer(r) for r in rows))
    summary["eval_command"] = eval_command(opts)
    if opts.rounds > 1:
        sd = [r for r in _model_rows(store, "selfdebug", opts.model_name) if (r["lang"], sample_of(r)) in task_keys]
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
        last = next((r.get("provider_error") for r in rows if _is_call_failure(r)), None)
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
