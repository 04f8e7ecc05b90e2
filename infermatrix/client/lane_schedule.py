"""Which conversations each agent (lane) of a level runs, in order, from which turn: the
client's levels and the virtual ones (capacity/virtual.py) both follow it."""

from __future__ import annotations

import bisect
import itertools
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .session_types import Session, SessionSource


@dataclass(frozen=True)
class LaneSession:
    """One conversation a lane runs: the source's session ``index`` from turn ``start``.
    ``tag`` tells copies of one session apart (a suffix of the conversation id and a salt after
    the system prompt), so two agents never share a conversation."""

    index: int
    start: int = 0
    tag: str = ""

    def conversation_id(self, session: Session) -> str:
        return f"{session.conversation_id}#{self.tag}" if self.tag else session.conversation_id

    def salt(self) -> str | None:
        return f"r{self.tag}-{self.index}" if self.tag else None


class LaneSchedule:
    """Which conversations each of ``agents`` lanes runs, in order; the client and the virtual
    levels (capacity.virtual) both follow it.

    Lane k runs sessions k, k + agents, k + 2 × agents, … (past the source's end, tagged copies).
    With ``mid_session`` it first joins one conversation already under way: a session drawn in
    proportion to its number of turns, from a random turn, tagged with the lane. That is the
    steady state's mix: a request at a random moment belongs to a session with probability in
    proportion to the requests it makes, so drawing the first session per session (every one
    alike) would make the measured window's contexts as short as a fresh start's."""

    def __init__(self, source: SessionSource, agents: int, mid_session: bool,
                 session: Callable[[int], Session] | None = None) -> None:
        self.source, self.size, self.agents = source, len(source), agents
        self.mid_session = mid_session
        self.session = session or source.session
        self._turns_before: list[int] | None = None  # cumulative turns of sessions 0..size-1

    def _by_turns(self, rng: random.Random) -> int:
        if self._turns_before is None:
            count = getattr(self.source, "turn_count", None) or (
                lambda i: len(self.session(i).turns))
            self._turns_before = list(itertools.accumulate(map(count, range(self.size))))
        return bisect.bisect_right(self._turns_before, rng.random() * self._turns_before[-1])

    def lane(self, k: int, rng: random.Random) -> Iterator[LaneSession]:
        """Lane ``k``'s conversations; ``rng`` is the lane's own (the draws are its first)."""
        if self.mid_session:
            index = self._by_turns(rng)
            yield LaneSession(index, rng.randrange(len(self.session(index).turns)), f"w{k}")
        for use in itertools.count():
            index = k + use * self.agents
            reuse = index // self.size
            yield LaneSession(index, 0, str(reuse) if reuse else "")
