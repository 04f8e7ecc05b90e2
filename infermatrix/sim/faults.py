"""Fault injection for reliability tests: what can go wrong on the wire, on purpose.

A fault spec is ``kind[:key=value,...]``; several are joined with ``;``. Server-wide faults come
from ``--faults``; one request can ask for its own with the ``X-Sim-Fault`` header.

  stall:after=N,seconds=S   stop streaming for S s after N tokens (the engine keeps going)
  drop:after=N              close the connection abruptly after N tokens
  error:status=429|500|503  answer the generation request with that HTTP status
  malformed:after=N         send one SSE event whose JSON is broken, after N tokens
  no_usage                  never send the usage chunk, even when asked
  multi_token:n=N           pack N tokens into each streamed chunk
  slow_start:seconds=S      server-wide: /health and generation answer 503 for S s after start
  crash_after:n=N           server-wide: serve N generation requests, then the process dies
  gen_fail                  /health stays 200 but every generation answers 500

Every request-level kind also takes ``rate=R`` (0..1): the share of requests it hits, drawn
from the server's seeded random generator.
"""

from __future__ import annotations

from dataclasses import dataclass

KINDS = {
    "stall": {"after", "seconds", "rate"},
    "drop": {"after", "rate"},
    "error": {"status", "rate"},
    "malformed": {"after", "rate"},
    "no_usage": {"rate"},
    "multi_token": {"n", "rate"},
    "slow_start": {"seconds"},
    "crash_after": {"n"},
    "gen_fail": {"rate"},
}
SERVER_ONLY = {"slow_start", "crash_after"}
ERROR_STATUSES = {429, 500, 503}
HEADER = "X-Sim-Fault"


class FaultError(ValueError):
    pass


@dataclass(frozen=True)
class Fault:
    kind: str
    after: int = 0
    seconds: float = 0.0
    status: int = 500
    n: int = 1
    rate: float = 1.0


def parse_faults(spec: str) -> list[Fault]:
    """Parse ``kind:key=value,...;kind2...``; raise FaultError with one line on a bad spec."""
    faults = []
    for part in filter(None, (p.strip() for p in spec.split(";"))):
        kind, _, rest = part.partition(":")
        kind = kind.strip().replace("-", "_")
        if kind in ("429", "500", "503"):  # shorthand: error:status=N
            kind, rest = "error", f"status={kind}" + ("," + rest if rest else "")
        if kind not in KINDS:
            raise FaultError(f"unknown fault {kind!r} (known: {', '.join(KINDS)})")
        values: dict[str, float] = {}
        for item in filter(None, (i.strip() for i in rest.split(","))):
            key, eq, raw = item.partition("=")
            if not eq or key not in KINDS[kind]:
                raise FaultError(f"fault {kind!r} takes {', '.join(sorted(KINDS[kind])) or 'no options'}; "
                                 f"got {item!r}")
            try:
                values[key] = float(raw)
            except ValueError:
                raise FaultError(f"fault {kind}: {key} needs a number, got {raw!r}") from None
        fault = Fault(kind, after=int(values.get("after", 0)), seconds=values.get("seconds", 0.0),
                      status=int(values.get("status", 500)), n=int(values.get("n", 1)),
                      rate=values.get("rate", 1.0))
        if kind == "error" and fault.status not in ERROR_STATUSES:
            raise FaultError(f"fault error: status must be one of {sorted(ERROR_STATUSES)}")
        if not 0.0 <= fault.rate <= 1.0:
            raise FaultError(f"fault {kind}: rate must be within 0..1")
        if fault.n < 1 or fault.after < 0 or fault.seconds < 0:
            raise FaultError(f"fault {kind}: n must be ≥ 1, after and seconds ≥ 0")
        faults.append(fault)
    return faults


@dataclass
class RequestFaults:
    """The faults one request suffers, resolved from server-wide and header specs."""

    stall: Fault | None = None
    drop: Fault | None = None
    error: Fault | None = None
    malformed: Fault | None = None
    no_usage: bool = False
    chunk_tokens: int = 1
    gen_fail: bool = False

    @classmethod
    def resolve(cls, faults: list[Fault], draw: float) -> RequestFaults:
        """``draw`` is one uniform number per request: a fault hits when draw < its rate."""
        out = cls()
        for f in faults:
            if f.kind in SERVER_ONLY or draw >= f.rate:
                continue
            if f.kind in ("stall", "drop", "error", "malformed"):
                setattr(out, f.kind, f)
            elif f.kind == "no_usage":
                out.no_usage = True
            elif f.kind == "multi_token":
                out.chunk_tokens = max(out.chunk_tokens, f.n)
            elif f.kind == "gen_fail":
                out.gen_fail = True
        return out
