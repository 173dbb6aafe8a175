"""What decides a row, and what a resume does when it changed (issue #15, item 1).

A run directory is resumed: every stage skips the keys already in its table. Before fingerprints, a re-run with
``metrics.td.tau=5`` kept the τ=25 TD rows and printed the same summary while ``run.json`` said τ=5. Now every
eval row records

* ``settings_sha256``: the hash of its stage's *settings*, a flat ``{config key: value}`` dict of everything that
  decides the row (below); the dict itself is stored once per run in the ``settings`` stage under that hash, so
  a changed run can name the keys that changed;
* ``inputs_sha256``: the hash of the sample's own inputs (its script; its prompt where the stage reads it).

On resume a row whose pair differs from this run's is *stale*. ``on_settings_change=recompute`` (default)
recomputes stale rows (the render and audit caches are keyed by the same settings, so only what really changed
is executed again) with a warning naming the changed keys; ``on_settings_change=refuse`` stops before any work
with that message. The summary never uses a stale row (a stage that did not run this time, e.g. TD disabled,
keeps its old rows out of the table and says so).

What decides each stage (downstream stages include their upstream stages' settings, because their rows read
the upstream rows — TD's weight is the audit's rate, its video the render's):

* ``tasks``: profile and fixed quirks (cleaning), ``model.kind``; inputs: instruction, script, clean status;
* ``exec``: profile, quirks, environment fingerprint (manim, TeX, fonts, …), ``execute.*`` except execution
  strategy (``workers``, ``prefork``, ``cache``, ``tex_cache``, ``schedule``, ``head_start``: tested to give
  identical rows), with ``execute.text_boxes`` as resolved (null: whether PADVC reads them, pipeline/options.py);
* ``audit``: profile, quirks, environment, every audit threshold and execution setting that the audit cache
  keys on (``audit.*`` except ``enabled``, ``cache`` and the cache's own ``NOT_IN_KEY``);
* ``td``: exec + audit settings, ``metrics.td.tau``, ``metrics.decoder``, ``metrics.device``, the language's
  TD μ/σ/eps and their source;
* ``padvc``: exec + audit settings, ``metrics.padvc.*`` (OCR and PVD settings, models) except ``enabled``,
  ``workers`` and cache locations, decoder, device, the language's PADVC μ/σ/eps;
* ``text_expand``: profile and quirks; inputs: script and prompt.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field

from prism_fast import fsutil

log = logging.getLogger("prism_fast")

EVAL_STAGES = ("tasks", "exec", "audit", "padvc", "td", "text_expand")
ON_CHANGE = ("recompute", "refuse")

# Execution strategy: proven not to change a row (tests: prefork vs CLI, cache hits, TeX cache, one-pass).
_EXECUTE_STRATEGY = ("execute.workers", "execute.prefork", "execute.cache", "execute.tex_cache", "execute.schedule",
                     "execute.head_start")
_AUDIT_STRATEGY = ("audit.enabled", "audit.cache")
_PADVC_STRATEGY = ("metrics.padvc.enabled", "metrics.padvc.workers", "metrics.padvc.ocr_cache_dir",
                   "metrics.padvc.frame_cache_dir")


def canonical_json(value) -> str:
    return fsutil.canonical_json(value, default=str)


def sha256_json(value) -> str:
    return fsutil.sha256_json(value, default=str)


def _flat(prefix: str, value) -> dict:
    """``{"a": {"b": 1}}`` → ``{"prefix.a.b": 1}`` (lists stay values)."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            out.update(_flat(f"{prefix}.{k}" if prefix else str(k), v))
        return out
    return {prefix: value}


def _without(flat: dict, prefixes) -> dict:
    return {k: v for k, v in flat.items() if not any(k == p or k.startswith(p + ".") for p in prefixes)}


def stage_settings(opts, env_hash: str | None) -> dict[str, dict[str, dict]]:
    """stage → lang → the flat settings dict that decides the stage's rows in that language."""
    from prism_fast.audit.cache import NOT_IN_KEY

    snap = opts.config_snapshot or {}
    profile = {"profile": opts.profile.name, "quirks_fixed": sorted(opts.profile.fixed)}
    base = {**profile, "environment": env_hash}
    execute = _without(_flat("execute", snap.get("execute") or {}), _EXECUTE_STRATEGY)
    render = getattr(opts, "render", None)
    if render is not None and "execute.text_boxes" in execute:
        # the resolved value (null = where PADVC reads them): rows rendered without the boxes are stale for a run
        # that reads them (pipeline/options.py wants_text_boxes)
        execute["execute.text_boxes"] = bool(render.text_boxes)
    audit = _without(_flat("audit", snap.get("audit") or {}),
                     (*_AUDIT_STRATEGY, *(f"audit.{k}" for k in NOT_IN_KEY)))
    metrics = snap.get("metrics") or {}
    video = {"metrics.decoder": metrics.get("decoder", opts.decoder), "metrics.device": metrics.get("device", opts.metrics_device)}
    padvc = _without(_flat("metrics.padvc", metrics.get("padvc") or {}), _PADVC_STRATEGY)
    params = ((snap.get("lang") or {}).get("params")) or {}
    exec_ = {**base, **execute}
    audit_ = {**base, **audit}
    out: dict[str, dict[str, dict]] = {s: {} for s in EVAL_STAGES}
    for lang in opts.languages:
        p = params.get(lang) or {}
        source = {f"lang.params.{lang}.source": p.get("source")}
        out["tasks"][lang] = {**profile, "model.kind": opts.model_kind}
        out["exec"][lang] = exec_
        out["audit"][lang] = audit_
        out["td"][lang] = {**exec_, **audit_, **video, "metrics.td.tau": opts.td_tau, **source,
                           **_flat(f"lang.params.{lang}.td", p.get("td") or {})}
        out["padvc"][lang] = {**exec_, **audit_, **video, **padvc, **source,
                              **_flat(f"lang.params.{lang}.padvc", p.get("padvc") or {})}
        out["text_expand"][lang] = dict(profile)
    return out


def stage_inputs(stage: str, script: str | None, instruction: str | None, clean_status: str | None) -> dict:
    """The sample's own inputs that decide its row in ``stage``."""
    if stage == "tasks":
        return {"instruction": fsutil.sha256_text_or_none(instruction), "script": fsutil.sha256_text_or_none(script), "clean_status": clean_status}
    if stage in ("padvc", "text_expand"):
        return {"script": fsutil.sha256_text_or_none(script), "instruction": fsutil.sha256_text_or_none(instruction)}
    return {"script": fsutil.sha256_text_or_none(script)}


@dataclass
class Stale:
    """Stored rows of one stage made with other settings or inputs than this run's."""

    stage: str
    keys: list[tuple[str, str]] = field(default_factory=list)  # (lang, id)
    changed: dict[str, tuple] = field(default_factory=dict)  # config key -> (stored value, this run's value)
    inputs_changed: int = 0
    unknown: int = 0  # rows without a fingerprint (older runs) or whose settings are not in the registry

    def describe(self) -> str:
        parts = [f"{k}: {_short(old)} → {_short(new)}" for k, (old, new) in sorted(self.changed.items())]
        if self.inputs_changed:
            parts.append(f"the sample's script or prompt ({self.inputs_changed} row(s))")
        if self.unknown:
            parts.append(f"unknown settings ({self.unknown} row(s) written before settings fingerprints)")
        return f"{self.stage}: {len(self.keys)} row(s) ({'; '.join(parts[:12])}{'; …' if len(parts) > 12 else ''})"


def _short(value) -> str:
    text = "(absent)" if value is _ABSENT else canonical_json(value)
    return text if len(text) <= 60 else text[:57] + "…"


_ABSENT = object()


class RunFingerprints:
    """Every (stage, lang, id) → (settings_sha256, inputs_sha256) this run expects; see the module docstring."""

    def __init__(self, opts, tasks, inputs, env_hash: str | None = None):
        if env_hash is None:
            from prism_fast.execute.fingerprint import fingerprint_hash

            env_hash = fingerprint_hash(opts.render.manim_bin)
        self.model = opts.model_name
        self.settings = stage_settings(opts, env_hash)
        self.settings_sha = {stage: {lang: sha256_json(s) for lang, s in by_lang.items()}
                             for stage, by_lang in self.settings.items()}
        by_id = {t.id: t for t in tasks}
        self.inputs_sha: dict[str, dict[tuple[str, str], str]] = {s: {} for s in EVAL_STAGES}
        for i in inputs:
            task = by_id.get(i.id)
            for stage in EVAL_STAGES:
                self.inputs_sha[stage][(i.language, i.id)] = sha256_json(
                    stage_inputs(stage, i.script, task.instruction if task else None, i.clean_status))

    def expected(self, stage: str) -> dict[tuple[str, str], tuple[str, str]]:
        """(lang, id) → (settings_sha256, inputs_sha256) for every selected sample."""
        return {(lang, sid): (self.settings_sha[stage].get(lang), isha)
                for (lang, sid), isha in self.inputs_sha[stage].items()}

    def tag(self, stage: str, lang: str, sample_id: str) -> dict:
        return {"settings_sha256": self.settings_sha[stage].get(lang),
                "inputs_sha256": self.inputs_sha[stage].get((lang, sample_id))}

    def register(self, store, stages=EVAL_STAGES) -> None:
        """Store each settings dict once (``settings`` stage, id = its hash), so later runs can name changes."""
        have = set(store.rows_by_key("settings", self.model))
        rows = [{"model": self.model, "lang": lang, "id": sha, "status": "ok", "stage": stage,
                 "settings": canonical_json(self.settings[stage][lang])}
                for stage in stages for lang, sha in self.settings_sha[stage].items() if (lang, sha) not in have]
        if rows:
            store.append("settings", rows, invalid="error_row")

    def stale(self, store, stage: str) -> Stale:
        """Stored rows of the selected samples whose fingerprint differs from this run's."""
        out = Stale(stage)
        expected = self.expected(stage)
        table = store.read(stage)
        if table.num_rows == 0:
            return out
        registry = None
        cols = ("model", "lang", "id", "settings_sha256", "inputs_sha256")
        for model, lang, sid, ssha, isha in zip(*(table.column(c).to_pylist() for c in cols)):
            if model != self.model or (lang, sid) not in expected:
                continue
            want_s, want_i = expected[(lang, sid)]
            if (ssha, isha) == (want_s, want_i):
                continue
            out.keys.append((lang, sid))
            if ssha is None:
                out.unknown += 1
                continue
            if ssha != want_s:
                if registry is None:
                    registry = {k: r["settings"] for k, r in store.rows_by_key("settings", self.model).items()}
                stored = registry.get((lang, ssha))
                if stored is None:
                    out.unknown += 1
                    continue
                old, new = json.loads(stored), json.loads(canonical_json(self.settings[stage][lang]))
                for key in set(old) | set(new):
                    a, b = old.get(key, _ABSENT), new.get(key, _ABSENT)
                    if a != b:
                        out.changed.setdefault(key, (a, b))
            if isha != want_i:
                out.inputs_changed += 1
        return out


def check_resume(fps: RunFingerprints, store, stages, on_change: str, run_dir) -> dict[str, Stale]:
    """Find the stored rows this run would have to recompute; ``refuse``: stop (before any work) naming the
    changed keys; ``recompute``: return them (the stages recompute them; :func:`announce_recompute` warns)."""
    if on_change not in ON_CHANGE:
        raise SystemExit(f"on_settings_change={on_change!r}: expected one of {', '.join(ON_CHANGE)}")
    stale = {s: st for s in stages if (st := fps.stale(store, s)).keys}
    if not stale:
        return {}
    lines = "\n  ".join(st.describe() for st in stale.values())
    if on_change == "refuse":
        raise SystemExit(f"eval: {run_dir} holds rows made with other settings than this run's:\n  {lines}\n"
                         "Nothing was changed. Re-run with on_settings_change=recompute to recompute those rows "
                         "(the render and audit caches make unchanged work cheap), restore the settings, or use "
                         "another run_name.")
    return stale


def announce_recompute(stale: dict[str, Stale]) -> None:
    """The warning of ``on_settings_change=recompute`` (logged once the run's log file is open)."""
    if stale:
        log.warning("rows made with other settings than this run's are recomputed (on_settings_change=recompute):"
                    "\n  %s", "\n  ".join(st.describe() for st in stale.values()))
