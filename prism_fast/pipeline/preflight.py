"""Checks of the composed config that stop a command before any work, each naming the fix.

Run by the entry point (``cli.py``) after Hydra composed and type-checked the config and before the command's
handler: nothing is written (no run directory, no log), no Ray instance and no render is started. Hydra already
refuses a value of the wrong type; these catch a value of the right type that no code path accepts (a choice
outside its list, a negative timeout), which would otherwise end in a traceback or in a run that fails late.

* :func:`config_problems`: every value that can be judged from the config alone (choices, signs, ranges).
* :func:`sandbox_problem`: a command that runs untrusted scripts at this config's sandbox level (the renders and
  audits of ``eval``, ``profile-render``, ``generate.rounds`` > 1) on a host where the sandbox probe finds no usable level would only record
  ``sandbox_error`` rows; it is refused with the three ways out instead.
* :func:`preflight`: both, raised as one ``SystemExit``.
"""

from __future__ import annotations

import re

from omegaconf import OmegaConf

NOTHING_WRITTEN = "Nothing was written."
SANDBOX_CHOICES = ("auto", "unsafe")
MANIM_QUALITIES = ("ql", "qm", "qh", "qp", "qk")  # manim's -q{l,m,h,p,k}


def _choices() -> dict[str, tuple]:
    """Config key -> the values the code accepts (taken from the modules that accept them)."""
    from prism_fast.metrics.pvd import EMBEDDING_BACKENDS
    from prism_fast.report.cli import FORMATS
    from prism_fast.report.tables import DENOMINATORS, TABLE2_CATEGORY_DENOMINATORS
    from prism_fast.video.decode import DECODERS
    from prism_fast.video.ocr import OCR_BACKENDS, OCR_PROVIDERS, REUSE_MODES, SCENE_MASKS

    return {
        "profile": ("reference", "improved"), "on_settings_change": ("recompute", "refuse"),
        "execute.quality": MANIM_QUALITIES, "execute.sandbox": SANDBOX_CHOICES,
        "execute.schedule": ("longest_first", "input"), "audit.sandbox": SANDBOX_CHOICES,
        "metrics.decoder": DECODERS, "metrics.padvc.ocr_backend": OCR_BACKENDS,
        "metrics.padvc.embedding_backend": EMBEDDING_BACKENDS, "metrics.padvc.ocr.provider": OCR_PROVIDERS,
        "metrics.padvc.ocr.scene_masks": SCENE_MASKS, "metrics.padvc.ocr.reuse": REUSE_MODES,
        "report.formats": FORMATS, "report.denominator": DENOMINATORS,
        "report.table2.category_denominator": TABLE2_CATEGORY_DENOMINATORS,
        "report.spatial_requires_exec": ("auto", True, False),
    }


# Config key -> (lowest allowed value, whether the lowest value itself is allowed); null always passes
# (it means "the default": one worker per CPU, no limit, ...).
BOUNDS = {
    "execute.timeout_s": (0, False), "execute.workers": (1, True), "dataset.limit": (1, True),
    **{f"execute.limits.{k}": (0, False) for k in ("address_space_gb", "memory_gb", "scratch_mb", "tmp_mb",
                                                  "cpu_seconds", "file_size_mb", "processes", "open_files",
                                                  "output_bytes")},
    "metrics.chunk_frames": (1, True), "metrics.td.tau": (0, True), "metrics.padvc.workers": (1, True),
    "metrics.padvc.text_stride": (1, True), "metrics.padvc.text_dilate": (0, True),
    "cluster.num_cpus": (0, True), "cluster.num_gpus": (0, True),
    "report.bootstrap.resamples": (1, True), "report.html.max_samples": (0, True),
    "report.html.max_pictures": (0, True),
    "generate.concurrency": (1, True), "generate.max_attempts": (1, True), "generate.timeout_s": (0, False),
    "generate.rounds": (1, True), "generate.max_tokens": (1, True), "generate.temperature": (0, True),
    "generate.flush_rows": (1, True), "generate.selfdebug.workers": (1, True),
    **{f"generate.backoff.{k}": (0, True) for k in ("base_s", "factor", "max_s")},
    "profile_render.repeats": (1, True), "profile_render.warmup": (0, True),
}
# Config key -> the interval (low, high] a fraction must lie in.
FRACTIONS = {"dataset.subset.fraction": (0.0, 1.0), "report.bootstrap.confidence": (0.0, 1.0),
             "report.joint.fraction": (0.0, 1.0)}


def _get(cfg, key: str):
    """The value at ``key``; None where it is null, missing (``???``, the handlers name those) or absent."""
    return OmegaConf.select(cfg, key, default=None, throw_on_missing=False)


def _choice_problem(key: str, value, allowed: tuple) -> str | None:
    values = list(value) if OmegaConf.is_list(value) or isinstance(value, (list, tuple)) else [value]
    bad = [v for v in values if v not in allowed]
    if not bad:
        return None
    shown = ", ".join(str(a).lower() if isinstance(a, bool) else str(a) for a in allowed)
    return f"{key}: {', '.join(map(repr, bad))} is not one of the valid values: {shown}"


def _bound_problem(key: str, value, low: float, inclusive: bool) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None  # Hydra checked the type; a string here is an interpolation the handler resolves
    if value > low or (inclusive and value == low):
        return None
    return f"{key}={value}: must be {'at least' if inclusive else 'greater than'} {low}"


def _fraction_problem(key: str, value, low: float, high: float) -> str | None:
    if not isinstance(value, (int, float)) or low < value <= high:
        return None
    return f"{key}={value}: must be in ({low}, {high}]"


def _device_problem(value) -> str | None:
    if value is None or re.fullmatch(r"cpu|cuda(:\d+)?", str(value)):
        return None
    return f"metrics.device={value!r}: expected cpu, cuda or cuda:N"


def _quirk_problem(cfg) -> str | None:
    from prism_fast.profile import QUIRK_IDS

    unknown = sorted(set(_get(cfg, "quirks") or {}) - set(QUIRK_IDS))
    return f"quirks: unknown quirk id(s) {', '.join(unknown)} (the spec's register: docs/parity.md)" if unknown else None


def config_problems(cfg) -> list[str]:
    """One line per value that no code path accepts, each saying what would be accepted."""
    found = [_choice_problem(k, v, allowed) for k, allowed in _choices().items()
             if (v := _get(cfg, k)) is not None]
    found += [_bound_problem(k, v, *b) for k, b in BOUNDS.items() if (v := _get(cfg, k)) is not None]
    found += [_fraction_problem(k, v, *f) for k, f in FRACTIONS.items() if (v := _get(cfg, k)) is not None]
    compare = _get(cfg, "report.compare")
    if compare is not None and len(compare) not in (0, 2):
        found.append(f"report.compare has {len(compare)} entries: it takes two run directories [A,B] (or none)")
    found += [_device_problem(_get(cfg, "metrics.device")), _quirk_problem(cfg)]
    return [p for p in found if p]


# -- the sandbox -------------------------------------------------------------------------------------------------
def runs_scripts(cfg, command: str) -> bool:
    """Whether ``command`` executes untrusted scripts with this config (renders, audits)."""
    rounds = _get(cfg, "generate.rounds") or 1
    return command in ("eval", "profile-render", "inspect") or (command == "generate" and rounds > 1)


def sandbox_keys(cfg, command: str) -> list[str]:
    """The sandbox settings of this config (``execute.sandbox``, ``audit.sandbox``) whose level ``command`` runs
    scripts at; empty for a command that runs none, and for ``inspect``, which re-audits at the level the run
    recorded (its settings, not this config's)."""
    if command == "inspect" or not runs_scripts(cfg, command):
        return []
    audit = ["audit.sandbox"] if command != "profile-render" and _get(cfg, "audit.enabled") is not False else []
    return ["execute.sandbox", *audit]


def sandbox_problem(cfg, command: str, level_of=None) -> str | None:
    """Why ``command`` cannot run its scripts here, with the fixes; None where every sandbox setting it uses gets
    a usable level. ``level_of(requested)`` is the sandbox's own probe (``execute.sandbox.effective_level``)."""
    if level_of is None:
        from prism_fast.execute.sandbox import effective_level as level_of
    refused = [k for k in sandbox_keys(cfg, command) if level_of(str(_get(cfg, k) or "auto")) == "none"]
    if not refused:
        return None
    return (f"prism-fast {command}: no usable sandbox on this host (not root with mount + PID namespaces, no working "
            "bubblewrap), so every script would be refused (sandbox_error rows); stopped before Ray or any render. "
            "Fix one of: run the container as root with `--cap-add SYS_ADMIN` (or --privileged); install "
            "bubblewrap (apt-get install bubblewrap; needs unprivileged user namespaces); or run the scripts "
            f"uncontained with {' '.join(k + '=unsafe' for k in refused)} (recorded per row; docs/security.md). "
            f"{NOTHING_WRITTEN}")


def preflight(cfg, command: str) -> None:
    """Stop (``SystemExit`` with every problem and its fix) before the handler of ``command`` runs."""
    problems = config_problems(cfg)
    if problems:
        raise SystemExit("prism-fast: invalid setting(s):\n  " + "\n  ".join(problems) + f"\n{NOTHING_WRITTEN}")
    refusal = sandbox_problem(cfg, command)
    if refusal:
        raise SystemExit(refusal)
