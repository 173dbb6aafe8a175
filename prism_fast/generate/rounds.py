"""The rounds of one task in ``prism-fast generate``: request (→ render → audit → feedback) until a round passes,
the provider fails or the rounds run out (self-debugging, ``selfdebug.py``), reusing what the store already has.

Rendering and auditing are stages below this package in the funnel, so the driver hands them in as
:class:`RoundTools`; the loop, the round's outcome row and the quirk branches are here. The driver is
``prism_fast.pipeline.generate_run``.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from prism_fast.fsutil import sha256_text_or_none
from prism_fast.generate.client import ChatClient
from prism_fast.generate.rows import generation_row, got_answer, is_call_failure, now
from prism_fast.generate.selfdebug import (assistant_turn, build_feedback, round_row_id, spatial_passed,
                                           user_message)


@dataclass
class SelfDebugSettings:
    workers: int = 1  # concurrent renders/audits
    error_tail_chars: int = 2000
    max_findings: int = 20


@dataclass
class RoundTools:
    """What a self-debugging round needs from the later stages, handed in by the driver.

    ``forget(task_id, round_dir)``: drop a video or audit report an interrupted run left (never trusted);
    ``render(task_id, code, round_dir) -> render row``; ``audit(task_id, code, round_dir) -> audit row``;
    ``classify(code=, render_row=, generation_status=, provider_error=, script_id=) -> taxonomy fields``.
    ``slots`` bounds the concurrent renders and audits."""

    forget: Callable[[str, Path], None]
    render: Callable[[str, str, Path], dict]
    audit: Callable[[str, str, Path], dict]
    classify: Callable[..., dict]
    slots: Any = field(default_factory=lambda: threading.Semaphore(1))


def gen_dir(run_dir: str | Path) -> Path:
    return Path(run_dir) / "generate"


def last_only_by_round_limit(outcome: dict, round_no: int, rounds: int) -> bool:
    """A stored self-debugging outcome that ended the loop only because that run allowed fewer rounds."""
    return bool(outcome["last_round"]) and round_no < rounds and outcome["status"] != "ok" and \
        outcome["error_kind"] != "provider_error"


class TaskRunner:
    """Runs the rounds of tasks (thread-safe counters; one call of :meth:`run` per task).

    ``opts`` needs ``model_name, endpoint, profile, rounds, retry_failed, run_dir, selfdebug``; ``gen_sink`` and
    ``sd_sink`` take the ``generate`` and ``selfdebug`` rows; ``gen_rows``/``sd_rows`` are the stored ones,
    keyed by (lang, sample id, round)."""

    def __init__(self, opts, client: ChatClient | None, gen_sink, sd_sink, gen_rows: dict, sd_rows: dict,
                 tools: RoundTools | None, timeout_s: float):
        # tools: None when rounds == 1 (no round is evaluated)
        self.opts, self.client, self.gen_sink, self.sd_sink = opts, client, gen_sink, sd_sink
        self.gen_rows, self.sd_rows, self.tools, self.timeout_s = gen_rows, sd_rows, tools, timeout_s
        self.requests = 0
        self.answered = 0  # requests of this run that got any reply from the endpoint (an HTTP error included)
        self.call_failures: dict[str, int] = {}  # error kind -> requests of this run that got no reply
        self._lock = threading.Lock()

    def reuse(self, row: dict | None) -> bool:
        return row is not None and not (self.opts.retry_failed and is_call_failure(row))

    def finished(self, task) -> bool:
        """Every round this task needs already has its rows."""
        rounds = self.opts.rounds
        for k in range(1, rounds + 1):
            g = self.gen_rows.get((task.language, task.id, k))
            if g is None or not self.reuse(g):
                return False
            if rounds == 1:
                return True
            s = self.sd_rows.get((task.language, task.id, k))
            if s is None:
                return False
            if s["last_round"]:
                return not last_only_by_round_limit(s, k, rounds)
        return True

    def run(self, task) -> dict:
        """All rounds of one task; returns the last generation row."""
        opts = self.opts
        prompt = task.instruction.strip()  # sent verbatim (generation.md §1.1)
        messages = [user_message(prompt)]
        row = None
        for round_no in range(1, opts.rounds + 1):
            row = self.gen_rows.get((task.language, task.id, round_no))
            if not self.reuse(row):
                started = now()
                call = self.client.complete(messages, label=f"{task.id} round {round_no}")
                row = generation_row(opts.model_name, opts.endpoint, opts.profile, task, round_no, prompt, messages,
                                     call, started, self.timeout_s)
                with self._lock:
                    self.requests += 1
                    if is_call_failure(row):
                        kind = str(row.get("error_kind"))
                        self.call_failures[kind] = self.call_failures.get(kind, 0) + 1
                    if got_answer(row):
                        self.answered += 1
                self.gen_sink.add(row)
                self.sd_rows.pop((task.language, task.id, round_no), None)  # a new reply invalidates its outcome
            if opts.rounds == 1:
                break
            outcome = self.sd_rows.get((task.language, task.id, round_no))
            if outcome is not None and last_only_by_round_limit(outcome, round_no, opts.rounds):
                outcome = None  # stored as last only because an earlier run had fewer rounds: evaluate again
            if outcome is None:
                outcome = self.evaluate_round(task, round_no, row)
                self.sd_sink.add(outcome)
            if outcome["last_round"]:
                break
            messages = json.loads(row["messages"]) + [
                {"role": "assistant", "content": assistant_turn(row.get("raw_response") or "")},
                user_message(outcome["feedback"]),
            ]
        return row

    def evaluate_round(self, task, round_no: int, gen_row: dict) -> dict:
        """The ``selfdebug`` row of one round: render and audit its cleaned script, and the feedback."""
        from prism_fast.generate.cleaning import clean_model_output

        opts, tools = self.opts, self.tools
        raw = gen_row.get("raw_response") if not is_call_failure(gen_row) else None
        code = clean_model_output(raw or "", task.language, opts.profile).code or None
        round_dir = gen_dir(opts.run_dir) / "selfdebug" / f"round{round_no}"
        render_row = audit_row = None
        exec_success = False
        requires_exec = opts.profile.fixes("Q-FUNNEL-1")  # improved: Spatial pass needs the Exec success too
        if code is not None:
            # A video or report without a row was left by an interrupted run: never trust it (Q-FUNNEL-2 and
            # Q-SPATIAL-19 would), so a resumed run gives the rows a clean one does.
            tools.forget(task.id, round_dir)
            with tools.slots:
                render_row = tools.render(task.id, code, round_dir)
                exec_success = bool(render_row.get("success"))
                if exec_success or not requires_exec:  # improved: a failed render cannot pass Spatial anyway
                    audit_row = tools.audit(task.id, code, round_dir / "audit")
        spatial = spatial_passed(exec_success, audit_row, requires_exec)
        provider_failed = is_call_failure(gen_row)
        tax = tools.classify(code=code, render_row=render_row, generation_status=gen_row.get("gen_status") or "success",
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
