"""Centering parameters of TD and PADVC (per language): plain values, no torch, so the driver can read its
configuration without importing the video stack (a CPU run's driver never imports torch)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from prism_fast.profile import REFERENCE, Profile

# score_td.py CLI defaults = the zh fit (td.md §3); TOOLKIT_DEFAULT_EPS is the implicit eps of Q-TD-4.
TOOLKIT_DEFAULT_MU = -3.6128059890794395
TOOLKIT_DEFAULT_SIGMA = 0.5952279192727674
TOOLKIT_DEFAULT_EPS = 9.807249641469183e-05
# Switches that change TD_raw of the reference videos or the fit, so (μ, σ, eps) must come from a fit
# under the same switches (README §4).
TD_FIT_SENSITIVE = ("Q-TD-1", "Q-TD-3", "Q-EXEC-1")
PADVC_FIT_EPS = 1e-8


@dataclass(frozen=True)
class TDParams:
    """Centering parameters for one language. ``fit_quirks`` is None for the paper/toolkit constants, else
    the fit-sensitive switches that were on when they were fitted; ``source`` is recorded per row."""

    mu: float
    sigma: float
    eps: float
    source: str = "paper"
    fit_quirks: frozenset[str] | None = None


def td_params_from_json(payload: Mapping, *, profile: Profile = REFERENCE, source: str = "params_json",
                           fit_quirks: frozenset[str] | None = None) -> TDParams:
    """A params JSON (``mu``, ``sigma`` required). A missing ``eps`` is the CLI default 9.807e-5 in
    reference (Q-TD-4); improved requires it."""
    for key in ("mu", "sigma"):
        if key not in payload:
            raise KeyError(f"TD params: required key {key!r} missing (got keys {sorted(payload)})")
    if "eps" in payload:
        eps = float(payload["eps"])
    elif profile.fixes("Q-TD-4"):  # improved: eps must be explicit
        raise KeyError("TD params: 'eps' is required (Q-TD-4); the toolkit would silently use 9.807e-5")
    else:  # reference: the score_td CLI default, silently in the toolkit — recorded in params_source here
        eps = TOOLKIT_DEFAULT_EPS
        source = f"{source}+implicit_eps"
    return TDParams(float(payload["mu"]), float(payload["sigma"]), eps, source, fit_quirks)


def check_params_for_profile(params: TDParams, profile: Profile) -> None:
    """Raise when the params were fitted under other fit-sensitive switches than ``profile`` (README §4)."""
    wanted = frozenset(q for q in TD_FIT_SENSITIVE if profile.fixes(q))
    have = params.fit_quirks if params.fit_quirks is not None else frozenset()
    if wanted != have:
        raise ValueError(
            f"TD params {params.source!r} were fitted with switches {sorted(have)} but profile "
            f"{profile.name!r} has {sorted(wanted)} on; refit the reference answers under this profile")



@dataclass(frozen=True)
class PadvcParams:
    mu: float
    sigma: float
    eps: float = PADVC_FIT_EPS
    source: str = "paper"
