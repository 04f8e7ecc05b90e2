"""Run one benchmark: tokenizer → dataset → server check → warm-ups → timed run → records.

The timed run dispatches requests at absolute deadlines (t0 + deadline), each then waits for a
concurrency slot; the clock for a request starts when it is sent. Everything that is not
sending/receiving (prompt building, JSON bodies, tokenization, statistics) happens outside it."""

from __future__ import annotations

import asyncio
import gc
from dataclasses import dataclass, field
from time import perf_counter

from .backends import build_body
from .config import BenchConfig
from .datasets import build_requests
from .deferred import DeferredParser
from .errors import ClientInputError
from .http import HTTPClient, HTTPError, collector
from .progress import Progress
from .records import Prepared, RequestRecord, RequestSpec
from .request import get_json, make_client, send, transfer
from .tokenizer import WORDS_WARNING, Tokenizer, WordTokenizer, load_tokenizer

PROBE_MAX_TOKENS = 4


@dataclass
class RunOutcome:
    records: list[RequestRecord]
    t0: float
    t_end: float
    model_id: str
    tokenizer: Tokenizer
    warmup_failed: int = 0
    notes: list[str] = field(default_factory=list)


async def execute(cfg: BenchConfig) -> RunOutcome:
    """Everything up to the raw records (the accuracy script uses this directly)."""
    # a bad tokenizer or dataset fails before the server is asked anything, when the tokenizer
    # is known already (without --tokenizer and --model it is the model the server serves)
    known = run_tokenizer(cfg) if cfg.tokenizer or cfg.model else None
    specs = build_requests(cfg, known) if known else None
    async with make_client(cfg.timeouts) as client:
        model = await resolve_model(client, cfg)
        tok = known or run_tokenizer(cfg, model)
        specs = specs or build_requests(cfg, tok)
        if cfg.headers:  # --header: on every request, under a request's own (e.g. affinity)
            for s in specs:
                s.headers = {**cfg.headers, **(s.headers or {})}
        prepared = [Prepared(s, build_body(cfg, model, s)) for s in specs]
        await probe(client, cfg, model, specs[0])
        warmup_failed = await warmup(client, cfg, prepared)
        await profiler(client, cfg, "start")
        if cfg.num_workers > 1:
            from .workers import run_in_workers  # noqa: PLC0415 - only when asked for

            records, t0, t_end = await run_in_workers(cfg, prepared, timed_run)
        else:
            # Connections for the first wave are opened now, not on the clock.
            await client.preconnect(cfg.url, min(cfg.max_concurrency or 256, len(prepared)))
            records, t0, t_end = await timed_run(client, cfg, prepared)
        await profiler(client, cfg, "stop")
    if cfg.is_native:
        for rec in records:
            uncumulate(rec)
    return RunOutcome(records, t0, t_end, model, tok, warmup_failed, tokenizer_notes(tok))


def run_tokenizer(cfg: BenchConfig, model: str | None = None) -> Tokenizer:
    """``--tokenizer``, or else the model's own like vLLM and SGLang (``--model``, or the model
    the server serves). The word counter only when asked for by name."""
    spec = cfg.tokenizer or cfg.model or model
    assert spec is not None
    try:
        return load_tokenizer(spec, cfg.trust_remote_code)
    except ClientInputError as e:
        if cfg.tokenizer:
            raise
        raise ClientInputError(
            f"{e} (the tokenizer defaults to the model; pass --tokenizer DIR, or "
            "--tokenizer words to count one word as one token)"
        ) from None


def tokenizer_notes(tok: Tokenizer) -> list[str]:
    """The warning a word-counted run carries in its output and its result."""
    if not isinstance(tok, WordTokenizer):
        return []
    return [WORDS_WARNING]


def uncumulate(rec: RequestRecord) -> None:
    """SGLang's native stream repeats the whole text so far in every event: keep the deltas."""
    texts = rec.event_texts
    if not all(b.startswith(a) for a, b in zip(texts, texts[1:], strict=False)):
        return  # a server streaming increments (--incremental-streaming-output)
    rec.event_texts = [b[len(a) :] for a, b in zip(["", *texts], texts, strict=False)]


async def profiler(client: HTTPClient, cfg: BenchConfig, action: str) -> None:
    """``--profile``: POST /start_profile before the measured run and /stop_profile after it
    (vLLM's and SGLang's endpoints; the server must have profiling enabled)."""
    if not cfg.profile:
        return
    url = f"{cfg.root_url}/{action}_profile"
    buf = bytearray()
    try:
        async with asyncio.timeout(cfg.timeouts.total):
            resp = await client.request("POST", url, b"{}", lambda r: collector(buf))
    except (HTTPError, TimeoutError) as e:
        raise ClientInputError(f"--profile: POST {url} failed: {e}") from e
    if resp.status != 200:
        raise ClientInputError(
            f"--profile: POST {url} answered HTTP {resp.status} (is profiling enabled on the "
            "server?)"
        )


async def resolve_model(client: HTTPClient, cfg: BenchConfig) -> str:
    """Check the server answers and serves ``cfg.model`` (or pick its first model)."""
    url = cfg.root_url + "/v1/models"
    try:
        status, payload = await get_json(client, url, cfg.timeouts.connect + 10)
    except HTTPError as e:
        raise ClientInputError(f"cannot reach server at {cfg.root_url}: {e}") from e
    except TimeoutError as e:
        raise ClientInputError(
            f"cannot reach server at {cfg.root_url}: no answer from {url}"
        ) from e
    ids: list[str] = []
    if status == 200 and isinstance(payload, dict) and isinstance(payload.get("data"), list):
        ids = [str(m.get("id")) for m in payload["data"] if isinstance(m, dict) and m.get("id")]
    wanted = cfg.served_model_name or cfg.model  # the name requests carry
    if wanted is None:
        if not ids:
            raise ClientInputError(f"--model is required: {url} lists no models (HTTP {status})")
        return ids[0]
    if ids and wanted not in ids:
        raise ClientInputError(
            f"model {wanted!r} is not served at {cfg.root_url} (it serves: {', '.join(ids)})"
        )
    return wanted


async def probe(client: HTTPClient, cfg: BenchConfig, model: str, spec: RequestSpec) -> None:
    """One short request before anything is measured: a wrong model name, endpoint or backend
    fails here as one clear line instead of as 100% failed requests."""
    rec = RequestRecord(index=-1, prompt_len=spec.prompt_len, output_len_requested=PROBE_MAX_TOKENS)
    body = build_body(cfg, model, spec, max_tokens=min(PROBE_MAX_TOKENS, spec.output_len))
    await send(client, cfg.url, body, rec, cfg.timeouts.total, spec.headers)
    if rec.error == "empty_output" and rec.usage_completion_tokens == 0:
        return  # the model answered with an immediate EOS; the server works
    if not rec.ok:
        raise ClientInputError(
            f"test request to {cfg.url} failed ({rec.error}): {rec.error_detail}"
        )


async def warmup(client: HTTPClient, cfg: BenchConfig, prepared: list[Prepared]) -> int:
    """``num_warmups`` unmeasured requests at the run's concurrency; returns how many failed."""
    if not cfg.num_warmups:
        return 0
    sem = asyncio.Semaphore(cfg.max_concurrency or cfg.num_warmups)

    async def one(i: int) -> bool:
        p = prepared[i % len(prepared)]
        rec = RequestRecord(
            index=-1, prompt_len=p.spec.prompt_len, output_len_requested=p.spec.output_len
        )
        async with sem:
            await send(client, cfg.url, p.body, rec, cfg.timeouts.total, p.spec.headers)
        return rec.ok

    results = await asyncio.gather(*(one(i) for i in range(cfg.num_warmups)))
    return results.count(False)


async def timed_run(
    client: HTTPClient,
    cfg: BenchConfig,
    prepared: list[Prepared],
    t0: float | None = None,
    quiet: bool = False,
) -> tuple[list[RequestRecord], float, float]:
    """The measured part. ``t0`` (absolute perf_counter) lets worker processes share one start."""
    records = [
        RequestRecord(
            index=p.spec.index, prompt_len=p.spec.prompt_len, output_len_requested=p.spec.output_len
        )
        for p in prepared
    ]
    sem = asyncio.Semaphore(cfg.max_concurrency) if cfg.max_concurrency else None
    url, total = cfg.url, cfg.timeouts.total
    progress = Progress(len(prepared), enabled=not (cfg.disable_tqdm or quiet))

    parser = DeferredParser(lambda rec: progress.done(rec.ok))

    async def one(p: Prepared, rec: RequestRecord) -> None:
        if sem is None:
            ex = await transfer(client, url, p.body, rec, total, p.spec.headers, parser)
        else:
            async with sem:
                ex = await transfer(client, url, p.body, rec, total, p.spec.headers, parser)
        parser.ended(ex)  # parsed between reads, never in one burst with the whole wave

    gc.collect()
    gc.freeze()  # everything built so far is immortal: no GC pauses walking the prompts
    tasks: list[asyncio.Task[None]] = []
    try:
        t0 = perf_counter() if t0 is None else t0
        progress.start(t0)
        for p, rec in zip(prepared, records, strict=True):
            rec.deadline = t0 + p.spec.deadline
            # never early: uvloop's timers have millisecond resolution and may wake a request
            # up to a millisecond before its deadline (the first ones before t0)
            while (delay := rec.deadline - perf_counter()) > 0:
                await asyncio.sleep(delay)
            rec.dispatched = perf_counter()
            tasks.append(asyncio.create_task(one(p, rec)))
        await asyncio.gather(*tasks)
        t_end = max([t0, *(r.end for r in records)])  # the end of the last request
    finally:
        for t in tasks:
            t.cancel()
        parser.finish()  # the answers still queued (an interrupted run keeps them too)
        progress.close()
        gc.unfreeze()
    return records, t0, t_end
