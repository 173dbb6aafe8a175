"""Profiles and quirk switches.

Every quirk of the authors' toolkit (spec README §5) is a switch named by its id. ``reference`` turns every
switch off (reproduce the toolkit, quirks included); ``improved`` turns every switch on; any other mix is
profile ``custom`` and records the switches that are on. Code tests a switch at the branch point and cites the
quirk id in a comment there::

    if profile.fixes("Q-EXEC-1"):   # improved: AST scene resolution
        ...
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

QUIRK_IDS: tuple[str, ...] = (
    "Q-FUNNEL-1", "Q-FUNNEL-2",
    "Q-EXEC-1", "Q-EXEC-2",
    *(f"Q-SPATIAL-{i}" for i in range(1, 21)),
    *(f"Q-PADVC-{i}" for i in range(1, 17)),
    "Q-TD-1", "Q-TD-2", "Q-TD-3", "Q-TD-4",
    *(f"Q-TEXT-{i}" for i in range(1, 9)),
    "Q-GEN-1", "Q-GEN-2", "Q-GEN-3", "Q-GEN-4", "Q-GEN-5",
)

PROFILE_NAMES = ("reference", "improved", "custom")


@dataclass(frozen=True)
class Profile:
    """A resolved profile: its name and the set of quirk switches that are on (= fixed)."""

    name: str = "reference"
    fixed: frozenset[str] = field(default_factory=frozenset)

    def fixes(self, quirk_id: str) -> bool:
        """True when quirk ``quirk_id`` is fixed (improved behaviour), False when reproduced."""
        if quirk_id not in QUIRK_IDS:
            raise KeyError(f"unknown quirk id {quirk_id!r}")
        return quirk_id in self.fixed

    def describe(self) -> dict:
        """What an output file records about the profile."""
        return {"profile": self.name, "quirks_fixed": sorted(self.fixed)}


REFERENCE = Profile("reference", frozenset())
IMPROVED = Profile("improved", frozenset(QUIRK_IDS))


def resolve_profile(name: str = "reference", switches: dict[str, bool] | None = None) -> Profile:
    """Build a Profile from a name plus optional per-quirk overrides.

    Overrides that leave the set equal to a named profile keep that name; any other mix is ``custom``.
    """
    if name not in ("reference", "improved"):
        raise ValueError(f"unknown profile {name!r}; expected 'reference' or 'improved'")
    fixed = set(IMPROVED.fixed if name == "improved" else ())
    for qid, on in (switches or {}).items():
        if qid not in QUIRK_IDS:
            raise KeyError(f"unknown quirk id {qid!r} in profile switches")
        (fixed.add if on else fixed.discard)(qid)
    frozen = frozenset(fixed)
    if frozen == REFERENCE.fixed:
        return REFERENCE
    if frozen == IMPROVED.fixed:
        return IMPROVED
    return Profile("custom", frozen)


def quirks_in_area(area: str) -> Iterable[str]:
    """The quirk ids of one area, e.g. ``quirks_in_area("SPATIAL")``."""
    prefix = f"Q-{area.upper()}-"
    return (q for q in QUIRK_IDS if q.startswith(prefix))
