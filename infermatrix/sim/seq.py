"""One sequence inside one engine instance (the scheduler's unit of work), apart from the
scheduler so the modules the scheduler uses (decode_batch.py) can name it without a cycle."""

from __future__ import annotations

from collections.abc import Callable, Sequence

# sink(seq, n, t, times): n tokens emitted, the last at model time t; ``times`` holds one time
# per token (a numpy array) when they were emitted by several steps at once (a virtual-time
# decode phase; the sequences of one phase may share the array: read it, never change it).
Sink = Callable[["Seq", int, float, Sequence[float] | None], None]


class Seq:
    """One sequence inside one instance."""

    __slots__ = ("rid", "prompt_len", "max_tokens", "hashes", "sink", "num_computed", "num_output",
                 "blocks", "committed", "cached_tokens", "admitted", "preemptions", "credit",
                 "first_at", "done", "aborted", "remote_kv", "rank", "quiet", "reported",
                 "first_on_admit", "reserved", "warm")

    def __init__(self, rid: int, prompt_len: int, max_tokens: int, hashes: Sequence[int] = (),
                 sink: Sink | None = None, *, remote_kv: bool = False, already_output: int = 0,
                 quiet: bool = False, warm: int = 0):
        self.rid = rid
        self.prompt_len = prompt_len
        self.max_tokens = max_tokens
        self.hashes = hashes
        self.sink = sink
        self.num_computed = 0
        self.num_output = already_output
        self.blocks: list[int] = []
        self.committed = 0
        self.cached_tokens = 0
        self.admitted = False
        self.preemptions = 0
        self.credit = 0.5  # speculative decoding: fractional accepted tokens carried over
        self.first_at = -1.0
        self.done = False
        self.aborted = False
        self.remote_kv = remote_kv  # KV arrives from a prefill instance: no prefill here
        # prompt tokens computed before the run (until first admitted): allocated, not prefilled
        self.warm = warm
        self.rank = 0  # the attention-DP rank whose pool holds its KV
        # quiet: nobody watches the tokens stream (virtual time, no token times), so the sink
        # hears only of the first token and of the end, with the tokens since it last heard
        self.quiet = quiet
        self.reported = already_output
        # a decode pool's sequence whose first token (sampled by the prefill instance) reaches
        # the client only once this instance admits it (see EngineCore.joined)
        self.first_on_admit = False
        self.reserved = 0  # KV blocks reserved to completion at admission (reserve_to_completion)

    @property
    def target(self) -> int:
        """Tokens whose KV must exist before the next token can be sampled."""
        return self.prompt_len + self.num_output
