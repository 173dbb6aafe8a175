"""The ``prism-fast`` command: a Hydra app with sub-commands.

``prism-fast [COMMAND] [overrides...]`` — the first word, when it names a command, becomes the ``command=``
override; ``inspect RUN ID`` turns its two positional words into ``inspect.run=`` / ``inspect.id=``. Config
objects are unpacked here, at the entry point; stage cores only see plain typed arguments.

Answered before Hydra starts (Hydra's own ``--version`` prints Hydra's version, and ``COMMAND --help`` printed
the global help): ``prism-fast --version`` (this package's version and git commit) and ``prism-fast COMMAND
--help`` (:data:`COMMAND_HELP`). Hydra writes no ``outputs/`` directory: a command records its config and log in
its run directory once its settings passed their checks (``pipeline/lifecycle.py::record_invocation``).
"""

from __future__ import annotations

import importlib
import os
import sys

import hydra
from omegaconf import DictConfig

COMMANDS = ("eval", "generate", "fit-reference", "profile-render", "report", "calibrate", "inspect", "doctor")

# command -> "module:function"; each function takes the composed config. Modules are imported lazily so that
# `prism-fast --help` stays fast and a command only pays for its own imports.
HANDLERS = {
    "eval": "prism_fast.pipeline.run:run_eval_from_config",
    "profile-render": "prism_fast.pipeline.run:profile_render_from_config",
    "generate": "prism_fast.pipeline.generate_run:generate_from_config",
    "fit-reference": "prism_fast.pipeline.fit_reference:fit_reference_from_config",
    "report": "prism_fast.report.cli:report_from_config",
    "calibrate": "prism_fast.report.calibrate:calibrate_from_config",
    "inspect": "prism_fast.pipeline.inspect:inspect_from_config",
    "doctor": "prism_fast.doctor:doctor_from_config",
}


# command -> (usage, what it does, settings that matter, examples): `prism-fast COMMAND --help`.
COMMAND_HELP = {
    "eval": (
        "prism-fast [eval] [KEY=VALUE ...]",
        "Dataset + model outputs -> Exec (sandboxed manim -ql renders in Ray actors, error taxonomy) -> Spatial "
        "audit -> PADVC (optional) -> TD -> TextExpand -> rows in <run_dir>/rows -> summary table. Resumes an "
        "existing run directory; rows made with other settings are recomputed (or refused).",
        ["dataset=sample|prism  dataset.path=FILE  dataset.ids=[ID,...]  dataset.limit=N",
         "model=reference|fixture|predictions|local|openai|...  model.name=...  model.predictions=PATH",
         "lang=all|en|zh  profile=reference|improved  quirks={Q-...: true}",
         "metrics.td.tau=25  metrics.td.enabled  metrics.padvc.enabled  metrics.text_expand.enabled  audit.enabled",
         "execute.workers=N  execute.timeout_s=600  cluster=local|ray  cluster.address=HOST:6379  cluster.num_cpus=N",
         "runs_root=runs  run_name=...  retry_failed=true  on_settings_change=recompute|refuse"],
        ["prism-fast lang=zh dataset.limit=5", "prism-fast dataset=prism dataset.path=prism_dataset.jsonl",
         "prism-fast -m metrics.td.tau=20,25,30    # sweep under <runs_root>/multirun/"]),
    "generate": (
        "prism-fast generate model=NAME [KEY=VALUE ...]",
        "Query an OpenAI-compatible endpoint for every selected task and write the predictions `eval` reads "
        "(<run_dir>/generate/responses.jsonl). Exits 1 when the endpoint never answered; prints the matching "
        "`prism-fast eval ...` command.",
        ["model=local|openai|anthropic|gemini|deepseek|qwen|kimi|glm  model.endpoint.base_url=URL  "
         "model.endpoint.model_id=ID  model.endpoint.api_key_env=VAR",
         "generate.concurrency=16  generate.max_attempts=3  generate.timeout_s  generate.rounds=K (self-debugging)",
         "dataset=...  lang=...  runs_root=...  retry_failed=true (request failed calls again)"],
        ["prism-fast generate model=local model.endpoint.base_url=http://127.0.0.1:8000/v1 "
         "model.endpoint.model_id=Qwen/Qwen3-8B"]),
    "fit-reference": (
        "prism-fast fit-reference [KEY=VALUE ...]",
        "Fit the per-language PADVC (mu, sigma) and TD (mu, sigma, eps) from a reference run's videos; writes "
        "<run>/fit_reference/fitted_params.yaml. Checks first that the run has videos and that PADVC's OCR "
        "engine and embedding models load.",
        ["fit_reference.run=RUN_DIR (default: the run_dir of eval model=reference)  fit_reference.out=DIR",
         "fit_reference.padvc=true|false  fit_reference.td=true|false",
         "metrics.padvc.models.zh=DIR  metrics.padvc.models.en=DIR  metrics.padvc.models.hf_cache=DIR"],
        ["prism-fast fit-reference lang=en fit_reference.padvc=false"]),
    "profile-render": (
        "prism-fast profile-render [KEY=VALUE ...]",
        "Repeated, one-at-a-time renders of the selected tasks: mean/median/p95 wall and CPU time per sample and "
        "per model; writes <run_dir>/profile_render.json.",
        ["profile_render.repeats=3  profile_render.warmup=1  profile_render.pin_cpu=N",
         "profile_render.tex_cache=false  profile_render.play_hashing=true  profile_render.fast_paths=false",
         "dataset.*  lang=...  model=..."],
        ["prism-fast profile-render lang=en dataset.limit=3 profile_render.repeats=5"]),
    "report": (
        "prism-fast report [KEY=VALUE ...]",
        "Tables (Markdown, CSV, LaTeX), statistics with bootstrap CIs, plots and one HTML file over one or many "
        "run directories.",
        ["report.runs=[RUN,...] (default: the current run_dir)  report.out_dir=DIR  report.labels=[...]",
         "report.formats=[markdown,csv,latex,png,html]  report.denominator=all_tasks|rendered|audited",
         "report.compare=[A,B]  report.bootstrap.resamples=10000"],
        ["prism-fast report report.runs=[runs/a,runs/b] report.out_dir=reports/ab"]),
    "calibrate": (
        "prism-fast calibrate [KEY=VALUE ...]",
        "The spatial auditor vs gold labels: confusion matrix overall and per kind, precision/recall, false "
        "positives with their pictures, the threshold trade-off across runs.",
        ["calibrate.gold=FILE (default: the bundled gold labels)  calibrate.run=RUN|[RUN,...]|MULTIRUN_DIR",
         "calibrate.model=NAME  calibrate.out_dir=DIR  calibrate.max_pictures=6"],
        ["prism-fast calibrate calibrate.run=runs/fixture-sample-all-reference"]),
    "inspect": (
        "prism-fast inspect RUN ID [KEY=VALUE ...]",
        "Pictures of one sample's violating atoms per segment: <run_dir>/inspect/<id>/segment_<k>.png and "
        "findings.json (re-audits with the run's profile and audit settings).",
        ["RUN: a run directory or a run name under runs_root;  ID: a sample id", "model=NAME (several models)"],
        ["prism-fast inspect runs/fixture-sample-all-reference SAMPLE-EN-000003"]),
    "doctor": (
        "prism-fast doctor [COMMAND] [KEY=VALUE ...]",
        "What this machine will get for COMMAND (default eval) with these settings, one line per capability: ok / "
        "degraded (with the consequence for the numbers) / optional (not there, but this command and config do not "
        "use it) / missing (with the fix). Exit status 1 only when something the command uses is missing.",
        ["COMMAND: eval|generate|fit-reference|profile-render|report|calibrate|inspect (= +doctor.command=...)",
         "+doctor.render=false (skip the two sandboxed renders)  +doctor.json=FILE",
         "metrics.padvc.enabled=true (embedding models, OCR engine)  metrics.padvc.ocr_backend=paddleocr  "
         "metrics.decoder=decord|nvdec",
         "cluster=ray cluster.address=... (the cluster it would join; nothing is started)"],
        ["prism-fast doctor +doctor.render=false", "prism-fast doctor metrics.padvc.enabled=true",
         "prism-fast doctor generate model=openai    # the key variable is set, the endpoint answers"]),
}


def version_text() -> str:
    from prism_fast.buildinfo import git_commit, version

    commit = git_commit()
    return f"prism-fast {version()} (git {commit or 'commit unknown'})"


def command_help(command: str) -> str:
    usage, what, settings, examples = COMMAND_HELP.get(
        command, (f"prism-fast {command} [KEY=VALUE ...]", "(no description)", [], []))
    lines = [f"Usage: {usage}", "", what, ""]
    if settings:
        lines += ["Settings (Hydra overrides KEY=VALUE; full list: prism-fast " + command + " --cfg job):"]
        lines += [f"  {s}" for s in settings] + [""]
    if examples:
        lines += ["Examples:"] + [f"  {e}" for e in examples] + [""]
    lines.append("All commands and config groups: prism-fast --help. Docs: README.md.")
    return "\n".join(lines)


def _early_answer(argv: list[str]) -> str | None:
    """``--version`` and ``COMMAND --help``: answered without composing a config."""
    if "--version" in argv or argv[:1] == ["-V"]:  # Hydra's own --version would print Hydra's version
        return version_text()
    if argv and argv[0] in COMMANDS and any(a in ("--help", "-h") for a in argv[1:]):
        return command_help(argv[0])
    return None


def _is_word(arg: str) -> bool:
    """A bare word: neither a Hydra override (KEY=VALUE, +KEY=VALUE, ~KEY) nor a flag."""
    return "=" not in arg and not arg.startswith(("-", "+", "~"))


def unknown_command_text(word: str) -> str:
    """One line for a first word that is no command: the closest command (difflib), or the list of them."""
    import difflib

    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.5)
    hint = f"did you mean `prism-fast {close[0]}`?" if close else "settings are KEY=VALUE;"
    return (f"prism-fast: unknown command {word!r}: {hint} Commands: {', '.join(COMMANDS)} "
            "(prism-fast --help). Nothing was written.")


def _rewrite_argv(argv: list[str]) -> list[str]:
    """Turn ``[COMMAND] [positional...] overrides`` into pure Hydra overrides."""
    renamed = [a for a in argv if a.lstrip("+~").startswith(("render.", "render="))]
    if renamed:  # the group configures package `execute` and carries its name (issue #16)
        raise SystemExit(f"{renamed[0]}: the config group `render` is now `execute` "
                         f"(e.g. {renamed[0].lstrip('+~').replace('render', 'execute', 1)}). Nothing was written.")
    if argv and _is_word(argv[0]) and argv[0] not in COMMANDS:
        raise SystemExit(unknown_command_text(argv[0]))
    if not argv or argv[0] not in COMMANDS:
        return argv
    command, rest = argv[0], argv[1:]
    out = [f"command={command}"]
    if command == "doctor" and rest and rest[0] in COMMANDS:  # `doctor generate ...`: judge that command's needs
        out.append(f"+doctor.command={rest.pop(0)}")
    if command == "inspect":
        positional = []
        while rest and "=" not in rest[0] and not rest[0].startswith("-") and len(positional) < 2:
            positional.append(rest.pop(0))
        for key, value in zip(("inspect.run", "inspect.id"), positional):
            out.append(f"{key}={value}")
    return out + rest


@hydra.main(version_base=None, config_path="pkg://prism_fast.conf", config_name="config")
def _app(cfg: DictConfig) -> None:
    command = cfg.command
    if command not in HANDLERS:
        raise SystemExit(f"unknown command {command!r}; expected one of {', '.join(COMMANDS)}")
    # No process this command starts (Ray's, the sandbox's) inherits an API key, token or password; the
    # generation client reads its key through secret_env.get_secret (docs/security.md).
    from prism_fast.secret_env import withhold_secrets

    withhold_secrets([(cfg.get("model") or {}).get("endpoint", {}).get("api_key_env")])
    # values no code path accepts, and a host without a usable sandbox: stopped here, before any file or Ray
    from prism_fast.pipeline.preflight import preflight

    preflight(cfg, command)
    module_name, func_name = HANDLERS[command].split(":")
    module = importlib.import_module(module_name)
    rc = getattr(module, func_name)(cfg)
    if isinstance(rc, int) and rc:
        raise SystemExit(rc)


def main() -> None:
    from prism_fast.pipeline.lifecycle import driver_process

    early = _early_answer(sys.argv[1:])
    if early is not None:
        print(early)
        return
    args = sys.argv[1:]
    if args and args[0] in ("-q", "--quiet"):  # logs only: no progress bars (pipeline/progress.py)
        from prism_fast.pipeline.progress import QUIET_ENV

        os.environ[QUIET_ENV] = "1"
        args = args[1:]
    sys.argv = [sys.argv[0], *_rewrite_argv(args)]
    with driver_process():  # nothing the command started outlives it, however it ends (signals included)
        _app()


if __name__ == "__main__":
    main()
