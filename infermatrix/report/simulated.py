"""The one way every page and figure says that numbers shown were simulated.

A result is simulated when the simulated engine produced it instead of hardware. It ran in
virtual time when the loop played it on the simulator's clock with no server (launcher
"virtual", ``launch/virtual.py``); otherwise a simulated server answered in real time (possibly
sped up by ``--time-scale``). Pages show ``badge`` in their header and ``banner`` under it,
figures ``words`` in their stamp: the same words everywhere.
"""

from __future__ import annotations

import html
from collections.abc import Iterable
from dataclasses import dataclass

VIRTUAL_LAUNCHER = "virtual"  # launch.virtual.LAUNCHER (report does not import launch)


@dataclass(frozen=True)
class SimMark:
    simulated: int  # results from the simulated engine
    total: int  # results shown
    virtual: int  # of the simulated, those played in virtual time

    @property
    def every(self) -> bool:
        return self.simulated == self.total

    @property
    def clock(self) -> str:
        """How the simulated results were timed, in words."""
        if self.virtual == self.simulated:
            return "in virtual time"
        if not self.virtual:
            return "in real time"
        return f"in virtual time ({self.virtual:,}) and in real time ({self.simulated - self.virtual:,})"

    @property
    def label(self) -> str:
        """The badge and figure stamp: SIMULATED or PARTLY SIMULATED, and the clock."""
        head = "SIMULATED" if self.every else f"PARTLY SIMULATED: {self.simulated:,} of {self.total:,}"
        clock = ("virtual time" if self.virtual == self.simulated
                 else "real time" if not self.virtual else "virtual + real time")
        return f"{head} · {clock}"

    @property
    def stamp(self) -> str:
        """A figure's stamp (and its PNG/SVG metadata): the badge's words, and why they matter."""
        return f"{self.label}: not measured on hardware"

    def sentence(self, noun: str = "result") -> str:
        """The banner: what is simulated, how it was timed, and that no hardware measured it."""
        where = f"from the simulated engine {self.clock}, not measured on hardware."
        if self.every:
            return f"Simulated: every number shown comes {where}"
        return (f"Partly simulated: {self.simulated:,} of the {self.total:,} {noun}s shown "
                f"come {where}")


def mark(flags: Iterable[tuple[bool, str | None]]) -> SimMark | None:
    """The mark for results given as (simulated, launcher) pairs; None when none is simulated."""
    total = simulated = virtual = 0
    for sim, launcher in flags:
        total += 1
        if sim:
            simulated += 1
            virtual += launcher == VIRTUAL_LAUNCHER
    return SimMark(simulated, total, virtual) if simulated else None


def of(*groups: Iterable[object]) -> SimMark | None:
    """The mark of any records with ``simulated`` and ``launcher`` attributes (levels, capacity
    results), all groups together."""
    return mark((bool(getattr(r, "simulated", False)), getattr(r, "launcher", None))
                for g in groups for r in g)


def badge(m: SimMark | None) -> str:
    if m is None:
        return ""
    return (f'<span class="badge sim" id="sim-badge" title="{html.escape(m.sentence())}">'
            f"{html.escape(m.label)}</span>")


def banner(m: SimMark | None, noun: str = "result") -> str:
    if m is None:
        return ""
    return (f'<div class="sim-banner" id="sim-banner" role="note" data-every="{int(m.every)}">'
            f"{html.escape(m.sentence(noun))}</div>")
