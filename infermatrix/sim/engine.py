"""Engine instances on an event kernel, and the deployment (pools + router) in front of them.

An ``Instance`` drives one ``EngineCore``: schedule a step, ask the performance model how long
it takes, have the kernel call back when it ends, apply it, repeat while there is work. In
virtual time a decode-only step (or one completing the last prefills) starts a *phase*: the
same batch stepping on until a sequence finishes or new work arrives. Its step times are computed ahead, only as far as the next event
on the kernel (or at least as far again as already computed), and the sequences are advanced
once at the phase's end; an arrival cuts the phase at the step then running, exactly where
stepping one at a time would have admitted it. A ``Deployment``
is what a recipe's topology describes: N identical instances behind a router, or prefill and
decode pools with a KV handoff between them. Both run unchanged on the real-time kernel (the
HTTP server) and the virtual kernel (``virtual.simulate``).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .clock import Kernel
from .config import SimConfig
from .perf import PerfModel
from .recv import RecvSkipper
from .router import Router
from .scheduler import EngineCore
from .seq import Seq
from .step import Step

# Engines whose prefill/decode router streams the client the decode server's answer, the
# prefill's sampled token included, so the first token arrives when the decode pool admits
# the request: SGLang's router in PD mode (the prefill server's output is not streamed; a
# request waits in the decode server's preallocation queue for KV room before its KV is sent)
# and vLLM's disaggregated proxies (the prefill request runs with max_tokens 1, the client
# streams the decode server). TensorRT-LLM's disaggregated server returns the context server's
# first token as it comes.
FIRST_TOKEN_FROM_DECODE = ("sglang", "vllm")

# A decode phase computes at least this many step times before its first checkpoint; each
# checkpoint that finds nothing new at least doubles it (bounds the steps computed for nothing
# when an arrival cuts a phase, and the checkpoints when other instances' events are frequent).
FIRST_CHECKPOINT_STEPS = 16


def lagged_intake(cfg: SimConfig, overlap: bool) -> bool:
    """Whether new requests reach the scheduler one step late: an engine whose overlap
    scheduler launches step n + 1 before it processes step n's results, and polls for new
    requests only between the two. SGLang's ``event_loop_overlap`` (recv_requests, then
    get_next_batch_to_run and run_batch for batch n + 1, then process_batch_result for batch n,
    which waits for it) and TensorRT-LLM's ``_executor_loop_overlap`` (schedule and forward
    step n + 1, then update and respond for step n, then fetch new requests): the poll comes
    after step n is done, while step n + 1 runs, so a request arriving while step n + 1 runs
    waits for it, for step n + 2 (scheduled at that poll's end, without it) and then for its
    own step. An idle engine takes it in at once. NVIDIA's aiconfigurator models TensorRT-LLM's
    TTFT as 3 x the mixed step (ai-dynamo/aiconfigurator PR #203, from iteration logs: the rest
    of the running step, the one already scheduled, its own); SGLang PR #2067, turning overlap
    on by default, raised its CI's median TTFT bound from 80 to 86 ms ("we delayed the
    processing of the first batch in favor of launching the kernels for the next batch
    first"). vLLM schedules step n + 1 after step n's output (async scheduling off by default
    in the builds the rows ran) and is not lagged; neither is a PD decode server (it never
    prefills: its requests join as their KV arrives)."""
    return (overlap and cfg.engine in ("sglang", "trtllm") and cfg.overlap_intake
            and cfg.prefill is None)


class TokenTimes:
    """The model time of every token of one request, kept as the pieces the engine emitted
    (a decode phase hands one array to all its sequences) and joined once, when read."""

    __slots__ = ("_parts", "_loose")

    def __init__(self) -> None:
        self._parts: list[Sequence[float]] = []
        self._loose: list[float] = []  # single-step tokens not yet in a part

    def add(self, n: int, t: float, times: Sequence[float] | None) -> None:
        if times is None:
            if n == 1:
                self._loose.append(t)
            else:
                self._loose.extend([t] * n)
            return
        if self._loose:
            self._parts.append(self._loose)
            self._loose = []
        self._parts.append(times)

    def array(self) -> np.ndarray:
        if self._loose:
            self._parts.append(self._loose)
            self._loose = []
        if len(self._parts) != 1 or not isinstance(self._parts[0], np.ndarray):
            joined = np.concatenate(self._parts) if self._parts else np.zeros(0)
            self._parts = [joined.astype(np.float64, copy=False)]
        return self._parts[0]  # type: ignore[return-value]


@dataclass
class Phase:
    """The step (or decode phase) an instance is running: its step, the end time of each
    step computed so far, how many it may run, and whether new work cut it."""

    step: Step
    ends: list[float]
    # None until the first step ends uncut: most steps of a busy instance are cut by new work
    # before then, and the limit (a pass over the batch) would be wasted on them. Nothing but
    # new work (which cuts) or an abort (which ends the phase) changes what it depends on.
    limit: int | None
    cut: bool = False
    # the step after which held-back requests are taken in (SGLang --scheduler-recv-interval):
    # the phase ends there
    recv_at: int | None = None


@dataclass(frozen=True)
class EngineRequest:
    """What the engine needs to know about a request: sizes and token identity."""

    prompt_tokens: int
    max_tokens: int
    hashes: tuple[int, ...] = ()  # chain hashes of the prompt's full blocks (prefix cache)
    session: str | None = None  # affinity key for the router
    warm_tokens: int = 0  # prompt head computed before the run: held and cached, not prefilled


class RequestRecord:
    """The life of one request across the deployment, in model seconds."""

    __slots__ = ("rid", "submitted_at", "prompt_tokens", "max_tokens", "cached_tokens",
                 "completion_tokens", "first_token_at", "finished_at", "token_times", "preemptions",
                 "instance", "prefill_instance", "done", "aborted", "_seq", "_owner", "on_update",
                 "on_done")

    def __init__(self, rid: int, req: EngineRequest, t: float, record_times: bool,
                 on_update: Callable[[RequestRecord, int, float], None] | None):
        self.rid = rid
        self.submitted_at = t
        self.prompt_tokens = req.prompt_tokens
        self.max_tokens = req.max_tokens
        self.cached_tokens = 0
        self.completion_tokens = 0
        self.first_token_at = -1.0
        self.finished_at = -1.0
        self.token_times: TokenTimes | None = TokenTimes() if record_times else None
        self.preemptions = 0
        self.instance = ""
        self.prefill_instance = ""
        self.done = False
        self.aborted = False
        self._seq: Seq | None = None
        self._owner: Instance | None = None
        self.on_update = on_update
        self.on_done: Callable[[RequestRecord], None] | None = None

    def progress(self, seq: Seq, n: int, t: float, times: Sequence[float] | None = None) -> None:
        """The sink of its sequence: ``n`` tokens emitted, the last at ``t`` (see Sink)."""
        if self.aborted:
            return
        if self.first_token_at < 0:
            self.first_token_at = float(times[0]) if times is not None else t
            self.cached_tokens = max(self.cached_tokens, seq.cached_tokens)
        self.completion_tokens += n
        if self.token_times is not None:
            self.token_times.add(n, t, times)
        if seq.done:
            self.done = True
            self.finished_at = t
            self.preemptions += seq.preemptions
        if self.on_update is not None:
            self.on_update(self, n, t)
        if self.done and self.on_done is not None:
            self.on_done(self)

    @property
    def quiet(self) -> bool:
        """Nobody watches the tokens stream: no token times, no update callback."""
        return self.token_times is None and self.on_update is None

    @property
    def ttft(self) -> float:
        return self.first_token_at - self.submitted_at

    @property
    def tpot(self) -> float | None:
        if self.completion_tokens < 2:
            return None
        return (self.finished_at - self.first_token_at) / (self.completion_tokens - 1)


class Instance:
    def __init__(self, name: str, cfg: SimConfig, kernel: Kernel, *, want_times: bool = True,
                 streaks: bool = True):
        self.name = name
        self.kernel = kernel
        self.core = EngineCore(cfg, PerfModel(cfg))
        self.busy = False
        self._kicked = False
        # decode phases only in virtual time, where nobody watches the tokens stream
        self._phases = kernel.virtual and streaks
        self.want_times = want_times  # per-token times of phases (only virtual runs record them)
        self._phase: Phase | None = None
        self._version = 0
        self._recv = RecvSkipper(cfg.recv_interval)
        self._inbox: list[Seq] = []  # arrived, not yet taken in by the scheduler
        # an overlap scheduler (SGLang, TensorRT-LLM) takes new requests in only once the step
        # before the running one is processed, while the running one's successor is already
        # launched: a request arriving during step n joins step n + 2 (lagged_intake)
        self._lag_intake = lagged_intake(cfg, self.core.perf.model.overlap)
        self._lagged: list[Seq] = []  # arrived during the running step: seen after it
        # sent in reaction to a step's output (a closed-loop client's next request), while the
        # engine applies it: the engine schedules its next step first (see _checkpoint)
        self._applying = False
        self._reacted: list[Seq] = []

    @property
    def load(self) -> int:
        return self.core.load + len(self._inbox) + len(self._lagged) + len(self._reacted)

    def cached_prefix(self, hashes: Sequence[int]) -> int:
        return self.core.pool.probe(hashes)

    def submit(self, seq: Seq) -> None:
        if self._applying:
            self._reacted.append(seq)
            return
        if self.busy and not self._recv.always:
            self._inbox.append(seq)
            self._end_at_receive()
            return
        if self.busy and self._lag_intake:
            # polled as the running step ends, when the next one is already scheduled without
            # it: it joins the step after that one
            self._lagged.append(seq)
            if self._phase is not None and self._phase.limit != 1:
                self._cut_phase()
            return
        self._add(seq)

    def _add(self, seq: Seq) -> None:
        """Hand ``seq`` to the scheduler: it joins the step after the one running (if any)."""
        self.core.add(seq)
        if self.busy and self._phase is not None and self._phase.limit != 1:
            self._cut_phase()
        if not self.busy and not self._kicked:
            # start on the next event, so requests arriving at the same instant share a step
            self._kicked = True
            self.kernel.call_soon(self._kick)

    def _kick(self) -> None:
        self._kicked = False
        if not self.busy:
            self._start()

    def abort(self, seq: Seq) -> None:
        if seq in self._reacted:
            self._reacted.remove(seq)
        if seq in self._inbox:
            self._inbox.remove(seq)
        if seq in self._lagged:
            self._lagged.remove(seq)
        self.core.abort(seq)
        if self._phase is not None and self._phase.limit is None:
            self._phase.limit = 1

    def _take_in(self) -> None:
        for seq in self._inbox:
            self.core.add(seq)
        self._inbox.clear()

    def _start(self) -> None:
        step = self.core.schedule()
        if step is None and self._inbox:  # an idle loop takes new requests in at once
            self._take_in()
            step = self.core.schedule()
        if self.core.joined:  # decode-pool sequences admitted now: their first token is out
            now = self.kernel.now
            for seq in self.core.joined:
                seq.first_on_admit = False
                if seq.sink is not None:
                    seq.sink(seq, 1, now, None)
            self.core.joined.clear()
        if step is None:
            return
        end = self.kernel.now + self.core.perf.step_time(step.shape)
        self.busy = True
        self._phase = Phase(step, [end], None if self._phases else 1)
        if self._inbox:  # requests held back: the phase ends where they are taken in
            self._phase.recv_at = self._recv.first_receive(not step.pure_decode, 0)
        self._version += 1
        self.kernel.call_at(end, self._checkpoint, self._version)

    def _extend(self) -> None:
        """Compute the phase's step times up to the next event that might bring new work, and
        be called back at the last of them."""
        ph = self._phase
        assert ph is not None and ph.limit is not None
        if len(ph.ends) < ph.limit:
            at_least = max(FIRST_CHECKPOINT_STEPS, 2 * len(ph.ends))
            self.core.extend_phase(ph.step, ph.ends, self.kernel.next_time(), at_least, ph.limit)
        self._version += 1
        self.kernel.call_at(ph.ends[-1], self._checkpoint, self._version)

    def _running_step(self, ph: Phase) -> int:
        """The index in ``ph`` of the step running now."""
        return bisect.bisect_left(ph.ends, self.kernel.now)

    def _end_after(self, ph: Phase, last: int) -> None:
        """End ``ph`` with its step ``last``, if that many steps are computed (otherwise its
        limit stops it there)."""
        if last >= len(ph.ends) - 1:
            return
        del ph.ends[last + 1:]
        self._version += 1
        self.kernel.call_at(ph.ends[-1], self._checkpoint, self._version)

    def _cut_phase(self) -> None:
        """New work arrived during a phase: end it with the step now running, as stepping
        one at a time would have admitted the newcomer at that step's end."""
        ph = self._phase
        assert ph is not None
        ph.cut = True
        self._end_after(ph, self._running_step(ph))

    def _end_at_receive(self) -> None:
        """A request is held back during a phase: end the phase with the step after which the
        scheduler next takes requests in (the one now running at the earliest)."""
        ph = self._phase
        assert ph is not None
        k = self._recv.first_receive(not ph.step.pure_decode, self._running_step(ph))
        if ph.recv_at is not None and ph.recv_at <= k:
            return
        ph.recv_at = k
        if ph.limit is not None and ph.limit > k + 1:
            ph.limit = k + 1
        self._end_after(ph, k)

    def _checkpoint(self, version: int) -> None:
        if version != self._version:
            return  # a phase that was cut short: its new end is scheduled
        ph = self._phase
        assert ph is not None
        if not ph.cut and ph.limit is None:
            ph.limit = self.core.phase_limit(ph.step)
            if ph.recv_at is not None and ph.limit > ph.recv_at + 1:
                ph.limit = ph.recv_at + 1
        if not ph.cut and len(ph.ends) < ph.limit:  # type: ignore[operator]
            self._extend()  # nothing new for this instance: the phase goes on
            return
        # stay busy while applying: sinks may submit new work, which must wait for _start
        self._applying = True
        try:
            if len(ph.ends) == 1:
                self.core.finish(ph.step, ph.ends[0])
            else:
                self.core.finish_streak(ph.step, ph.ends, self.want_times)
        finally:
            self._applying = False
        polled: list[Seq] = []
        if not self._recv.always and self._recv.advance(len(ph.ends), not ph.step.pure_decode):
            if self._lag_intake:
                polled, self._inbox = self._inbox, []
            else:
                self._take_in()
        polled += self._lagged
        self._lagged = []
        self.busy = False
        self._phase = None
        reacted, self._reacted = self._reacted, []
        self._start()  # the next step, scheduled before the poll's requests reach the scheduler
        for seq in polled:
            self._add(seq)
        # a request sent in reaction to this step's output reaches the engine after its next
        # step started (an idle engine takes it at once): the output has to reach the client
        # and the new request the scheduler (HTTP, tokenizer, IPC: milliseconds) while the
        # engine turns from one step to the next without waiting (SGLang's and vLLM's input
        # polls do not block while there is work; TensorRT-LLM's fetch neither)
        for seq in reacted:
            self.submit(seq)


class Deployment:
    """The front door: routes requests over instances; disaggregated pools hand KV over."""

    def __init__(self, cfg: SimConfig, kernel: Kernel, *, record_times: bool = False, seed: int = 0,
                 streaks: bool = True):
        self.cfg = cfg
        self.kernel = kernel
        self.record_times = record_times
        role = "decode" if cfg.prefill else "worker"
        opts = {"want_times": record_times, "streaks": streaks}
        self.instances = [Instance(f"{role}-{i}", cfg, kernel, **opts) for i in range(cfg.instances)]
        self.prefill_instances = ([Instance(f"prefill-{i}", cfg.prefill, kernel, **opts)
                                   for i in range(cfg.prefill.instances)] if cfg.prefill else [])
        self.router = Router(cfg.router_policy, seed)
        # decode placement follows load (the prefix cache matters on the prefill side)
        decode_policy = "least_loaded" if cfg.router_policy == "cache_aware" else cfg.router_policy
        self.decode_router = Router(decode_policy, seed + 1)
        self._capacity = min(i.core.cfg.rank_capacity_tokens for i in self.all_instances)
        self._rid = 0
        self.kv_transfers = 0
        self.kv_transfer_seconds = 0.0

    @property
    def all_instances(self) -> list[Instance]:
        return self.prefill_instances + self.instances

    def reject_reason(self, req: EngineRequest) -> str | None:
        """Why a request can never be served (too long), or None."""
        total = req.prompt_tokens + req.max_tokens
        if req.prompt_tokens < 1:
            return "the prompt is empty"
        if req.max_tokens < 1:
            return "max_tokens must be at least 1"
        if total > self.cfg.max_model_len:
            return (f"This model's maximum context length is {self.cfg.max_model_len} tokens; "
                    f"the request needs {total} ({req.prompt_tokens} prompt + {req.max_tokens} "
                    f"completion)")
        capacity = self._capacity
        if total > capacity:
            return (f"the request needs {total} tokens of KV cache; one instance (one "
                    f"attention-DP rank) holds {capacity}")
        return None

    def submit(self, req: EngineRequest,
               on_update: Callable[[RequestRecord, int, float], None] | None = None, *,
               on_done: Callable[[RequestRecord], None] | None = None) -> RequestRecord:
        """Start serving ``req`` at the kernel's current time. ``on_update(record, n, t)`` is
        called for every n tokens emitted at model time t (record.done tells the end);
        ``on_done(record)`` only once, at the end (cheaper when nothing streams)."""
        self._rid += 1
        rec = RequestRecord(self._rid, req, self.kernel.now, self.record_times, on_update)
        rec.on_done = on_done
        if self.prefill_instances:
            i = self.router.pick(self.prefill_instances, req.hashes, req.session)
            inst = self.prefill_instances[i]
            rec.prefill_instance = inst.name
            seq = Seq(rec.rid, req.prompt_tokens, 1, req.hashes,
                      lambda s, n, t, ts: self._handoff(rec, req, s, t), warm=req.warm_tokens)
        else:
            i = self.router.pick(self.instances, req.hashes, req.session)
            inst = self.instances[i]
            rec.instance = inst.name
            seq = Seq(rec.rid, req.prompt_tokens, req.max_tokens, req.hashes,
                      rec.progress, quiet=rec.quiet, warm=req.warm_tokens)
        rec._seq, rec._owner = seq, inst
        inst.submit(seq)
        return rec

    def abort(self, rec: RequestRecord) -> None:
        if rec.done:
            return
        rec.aborted = rec.done = True
        if rec._seq is not None and rec._owner is not None:
            rec._owner.abort(rec._seq)

    def _handoff(self, rec: RequestRecord, req: EngineRequest, seq: Seq, t: float) -> None:
        """Prefill done (its first token sampled): stream the KV to a decode instance."""
        if rec.aborted:
            return
        rec.cached_tokens = seq.cached_tokens
        rec.preemptions += seq.preemptions
        cfg = self.cfg
        seconds = (cfg.tuning.kv_transfer_latency_s
                   + req.prompt_tokens * cfg.prefill.kv_bytes_per_token / cfg.kv_transfer_bw)  # type: ignore[union-attr]
        self.kv_transfers += 1
        self.kv_transfer_seconds += seconds
        rec._seq = None
        self.kernel.call_at(t + seconds, self._to_decode, rec, req)

    def _to_decode(self, rec: RequestRecord, req: EngineRequest) -> None:
        if rec.aborted:
            return
        t = self.kernel.now
        # the prefill's sampled token: out with the KV, or once the decode pool admits it
        seq = Seq(rec.rid, req.prompt_tokens, req.max_tokens, req.hashes,
                  rec.progress, remote_kv=True, already_output=1, quiet=rec.quiet)
        seq.first_at = t
        if req.max_tokens == 1:
            seq.done = True
            rec.progress(seq, 1, t)
            return
        if self.cfg.engine in FIRST_TOKEN_FROM_DECODE:
            seq.first_on_admit = True  # a wait for room on the decode pool is TTFT
        else:
            rec.progress(seq, 1, t)
        i = self.decode_router.pick(self.instances, req.hashes, req.session)
        inst = self.instances[i]
        rec.instance = inst.name
        rec._seq, rec._owner = seq, inst
        inst.submit(seq)

    def reset_prefix_cache(self) -> int:
        return sum(i.core.pool.reset() for i in self.all_instances)

    @property
    def idle(self) -> bool:
        return all(i.core.load == 0 for i in self.all_instances)
