"""The ``prism-fast`` command: a Hydra app with sub-commands.

``prism-fast [COMMAND] [overrides...]`` — the first word, when it names a command, becomes the ``command=``
override; ``inspect RUN ID`` turns its two positional words into ``inspect.run=`` / ``inspect.id=``. Config
objects are unpacked here, at the entry point; stage cores only see plain typed arguments.
"""

from __future__ import annotations

import sys

import hydra
from omegaconf import DictConfig

COMMANDS = ("eval", "generate", "fit-reference", "profile-render", "report", "inspect")
NOT_YET = {
    "generate": "issue 'Generation f_θ and self-debugging evaluation'",
    "fit-reference": "issue 'Video metrics on tensors' (reference μ/σ fits)",
    "report": "issue 'Reports'",
    "inspect": "issue 'Spatial audit' (violation pictures)",
}


class NotImplementedCommand(SystemExit):
    pass


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
    if command == "eval":
        from prism_fast.pipeline.run import run_eval_from_config

        run_eval_from_config(cfg)
        return
    if command == "profile-render":
        from prism_fast.pipeline.run import profile_render_from_config

        profile_render_from_config(cfg)
        return
    if command in NOT_YET:
        print(
            f"prism-fast {command}: not implemented yet in this version (tracked in the {NOT_YET[command]}).",
            file=sys.stderr,
        )
        raise NotImplementedCommand(2)
    raise SystemExit(f"unknown command {command!r}; expected one of {', '.join(COMMANDS)}")


def main() -> None:
    sys.argv = [sys.argv[0], *_rewrite_argv(sys.argv[1:])]
    _app()


if __name__ == "__main__":
    main()
