"""The ``prism-fast`` command: a Hydra app with sub-commands.

``prism-fast [COMMAND] [overrides...]`` — the first word, when it names a command, becomes the ``command=``
override; ``inspect RUN ID`` turns its two positional words into ``inspect.run=`` / ``inspect.id=``. Config
objects are unpacked here, at the entry point; stage cores only see plain typed arguments.
"""

from __future__ import annotations

import importlib
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


def _rewrite_argv(argv: list[str]) -> list[str]:
    """Turn ``[COMMAND] [positional...] overrides`` into pure Hydra overrides."""
    if not argv or argv[0] not in COMMANDS:
        return argv
    command, rest = argv[0], argv[1:]
    out = [f"command={command}"]
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
    module_name, func_name = HANDLERS[command].split(":")
    module = importlib.import_module(module_name)
    rc = getattr(module, func_name)(cfg)
    if isinstance(rc, int) and rc:
        raise SystemExit(rc)


def main() -> None:
    from prism_fast.pipeline.lifecycle import driver_process

    sys.argv = [sys.argv[0], *_rewrite_argv(sys.argv[1:])]
    with driver_process():  # nothing the command started outlives it, however it ends (signals included)
        _app()


if __name__ == "__main__":
    main()
