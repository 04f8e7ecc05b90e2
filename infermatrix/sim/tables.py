"""The simulator's efficiency and overhead tables (infermatrix/sim/data/efficiency.yaml).

A typed schema over the YAML, loaded with the catalog's line-tracking loader so a mistake is
reported as ``file:line: field: message``; lookups pick the most specific row for a hardware,
dtype and operator. Values the tables do not give come from ``tuning.py``.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    model_validator,
)

from ..catalog.loader import _validation_problems  # noqa: PLC2701
from ..catalog.yamlsrc import CatalogError, load_yaml
from .tuning import DEFAULT_TUNING, Tuning

DATA_DIR = Path(__file__).resolve().parent / "data"
EFFICIENCY_FILE = DATA_DIR / "efficiency.yaml"

Share = Annotated[float, Field(gt=0, le=1)]
Micros = Annotated[float, Field(ge=0, le=1e6)]
US = 1e-6  # a table's microseconds, in seconds
Source = Annotated[str, Field(min_length=3)]
Op = Literal["gemm", "grouped_gemm", "attention_decode", "attention_prefill", "elementwise",
             "sampling", "eager_dispatch", "eager_dispatch_mla_moe", "sustained_clock"]
EngineName = Literal["vllm", "sglang", "trtllm"]


def release(version: str | None) -> tuple[int, ...] | None:
    """The release numbers a version string starts with ("v0.5.12-cu130" and "0.5.12.post1"
    -> (0, 5, 12)); None for a version that names none ("unstated", an image tag)."""
    match = re.match(r"v?(\d+(?:\.\d+)*)", (version or "").strip())
    return tuple(int(part) for part in match.group(1).split(".")) if match else None


def written_version(value: object) -> object:
    """A version as the YAML gives it. A bare ``0.10`` is the number 0.1 (and would sort before
    0.9), so a number is refused with how to write it."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        raise ValueError(f"quote the version ('{value}'): unquoted, YAML reads it as a number, "
                         "and 0.10 as 0.1")
    return value


def _a_release(version: str) -> str:
    if release(version) is None:
        raise ValueError(f"{version!r} is not a version (write it as 0.5.9)")
    return version


Version = Annotated[str, BeforeValidator(written_version), AfterValidator(_a_release)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class OperatorRow(_Strict):
    """Efficiency of one operator on some hardware (and dtype): shares of the datasheet peaks
    and the shortest time one kernel of it takes (launch + tail)."""

    op: Op
    hardware: str | list[str] = "*"
    """hardware names from matrix/hardware.yaml (one or a list), ``vendor:NAME``, or ``*``"""
    dtype: str = "*"
    engine: EngineName | Literal["*"] = "*"
    since: Version | None = None
    """with ``engine``: the row describes that engine's builds from this version on (kernels
    change between releases); a deployment whose engine version is unknown keeps the rows
    without one"""
    before: Version | None = None
    """with ``engine``: the row describes that engine's builds older than this version (kernels
    a later release replaced); as with ``since``, an unknown version keeps the rows without one"""
    rocm_aiter: bool | None = None
    """AMD: the row describes deployments that run AITER's kernels (True) or the engine's
    generic ones (False); None: either"""
    min_moe_tp: Annotated[int, Field(ge=2, le=1024)] | None = None
    """grouped GEMM: the row describes deployments whose routed experts are split at least this
    many ways by tensor parallelism, without expert parallelism (an engine that picks its MoE
    kernel by that split); None: any split"""
    compute_eff: Share = 1.0
    memory_eff: Share = 1.0
    floor_us: Micros = 0.0
    tokens_half: Annotated[float, Field(gt=0)] | None = None
    """grouped GEMM: tokens per expert at which compute efficiency is half its large-batch value"""
    fixed_us: Micros = 0.0
    """grouped GEMM: time each of a layer's two expert GEMMs takes beyond its roofline (a
    measured kernel's launch and latency, which does not shrink with the work), added to it
    rather than taken as a floor"""
    tile_rows: Annotated[int, Field(ge=1, le=256)] | None = None
    """grouped GEMM whose kernel picks its row tile from the tokens per expert: the smallest
    tile, which a touched expert's tokens fill however few they are; None: one fixed tile
    (``tokens_half`` rows of padding an expert)"""
    imbalance: Annotated[float, Field(ge=1, le=10)] = 1.0
    """grouped GEMM under expert parallelism: busiest rank's routed load over the mean (routing
    skew; the statistical spread of a finite batch is added on top)"""
    kernels: Annotated[int, Field(ge=0, le=100)] = 1
    per_seq_us: Micros = 0.0
    source: Source

    @model_validator(mode="after")
    def _bounds_name_an_engine(self) -> OperatorRow:
        for bound in ("since", "before"):
            if getattr(self, bound) is not None and self.engine == "*":
                raise ValueError(f"{bound}: give the engine whose builds it dates")
        if self.since is not None and self.before is not None and not below(
                release(self.since), self.before):
            raise ValueError("since and before: the builds from since on and older than before "
                             "must not be empty")
        return self


class Fabric(_Strict):
    latency_us: Micros
    per_hop_us: Micros
    bw_eff: Share
    source: Source


class PrefillGraphs(_Strict):
    """When an engine's steps that prefill (a prompt's chunk, alone or with decodes) replay
    captured (piecewise) graphs, as the engine decides it at start and step by step; a step
    that does not launches every layer from the host (the ``eager_dispatch`` floor).
    prefill_graphs.py applies these to a deployment."""

    default: bool = True
    """the engine turns them on by itself (False: only where the deployment asks for them,
    TensorRT-LLM's ``torch_compile_config.enable_piecewise_cuda_graph``)"""
    since: Version | None = None
    """the first release that turns them on by default; an earlier build runs without them
    unless asked, a build of unknown version is taken to have them"""
    vendors: list[Literal["nvidia", "amd", "huawei"]] | None = None
    """the hardware they run on (None: any); elsewhere the engine turns them off"""
    off_under: list[Literal["attention_dp", "moe_a2a", "pp"]] = []
    """deployment features under which the engine turns them off"""
    speculative_since: Version | None = None
    """the first release that keeps them under speculative decoding (earlier builds turn them
    off when a draft runs)"""
    sparse_attention_since: Version | None = None
    """the first release that captures them for DeepSeek sparse attention (``mla-sparse``)
    models; earlier builds turn them off for those"""
    mla_max_tokens: Annotated[int, Field(ge=0)] = 0
    """MLA models: the largest step (tokens) captured by default (0: the step budget); a larger
    step runs without graphs"""
    source: Source


class EngineOverhead(_Strict):
    step_us: Micros
    per_seq_us: Micros
    per_prefill_token_us: Micros = 0.0
    overlap: bool
    """host work of step n+1 overlaps the GPU's step n"""
    comm_overlap: Annotated[float, Field(ge=0, lt=1)] = 0.0
    """share of collective time hidden behind compute (two-batch overlap and the like)"""
    prefill_graphs: PrefillGraphs | None = None
    """when the engine's steps that prefill replay (piecewise) graphs (prefill_graphs.py);
    None: always, as vLLM V1's do"""
    spec_step_us: Micros | None = None
    """host work of a speculative (draft + verify) step in place of ``step_us``: scheduling
    plus the input preparation between the draft, verify and draft-extend passes"""
    spec_overlap: bool | None = None
    """whether a speculative step's host work overlaps the GPU (None: as ``overlap``);
    SGLang's EAGLE/MTP worker runs without its overlap scheduler unless spec v2 is on"""
    dp_sync_us: Micros = 0.0
    """host work a step adds under attention DP: the ranks' per-step exchange of their batch
    metadata before any of them may run (SGLang's MLP-sync all-gather)"""
    spec_source: Source | None = None
    source: Source


class AcceptanceRow(_Strict):
    method: str = "*"
    dataset: str = "*"
    rate: Annotated[float, Field(ge=0, le=1)]
    source: Source


class CompressedKVPool(_Strict):
    """How an engine sizes its KV pool for DeepSeek V4's hybrid attention (``mla-compressed``):
    bytes it reserves per token of capacity, summed over the pools it carves from that
    capacity (the sliding-window pool, the compressed CSA and HCA entries, the indexer keys,
    and the compressors' running states)."""

    swa_tokens_ratio: Share
    """sliding-window pool size as a share of the token capacity"""
    entry_bytes: Annotated[int, Field(ge=1)]
    """one cached KV entry of one layer (window or compressed)"""
    indexer_entry_bytes: Annotated[int, Field(ge=0)]
    """one compressed indexer key (CSA layers)"""
    csa_state_bytes: Annotated[int, Field(ge=0)]
    """one CSA compressor state row (attention + indexer), per CSA layer"""
    hca_state_bytes: Annotated[int, Field(ge=0)]
    """one HCA compressor state row, per HCA layer"""
    hca_ratio: Annotated[int, Field(ge=1)]
    state_page: Annotated[int, Field(ge=1)]
    """sliding-window page the state rings are counted per"""
    csa_ring: Annotated[int, Field(ge=1)]
    hca_ring: Annotated[int, Field(ge=1)]
    spec_ring_factor: Annotated[int, Field(ge=1)] = 1
    """rings grow by this factor under speculative decoding (room for draft tokens)"""
    draft_layers: Annotated[int, Field(ge=0)] = 0
    """layers of the speculative draft model whose pool is sized with the target's"""
    page_size: Annotated[int, Field(ge=1)] | None = None
    """tokens a KV page holds (and prefix matches go by) where the recipe sets none"""
    source: Source

    def bytes_per_token(self, layers: int, csa_layers: int, csa_ratio: int, speculative: bool) -> float:
        """Bytes reserved per token of capacity on each GPU holding the whole latent."""
        hca_layers = layers - csa_layers
        ring = self.spec_ring_factor if speculative else 1
        per_token = (self.swa_tokens_ratio * self.entry_bytes * layers
                     + (self.entry_bytes + self.indexer_entry_bytes) * csa_layers / csa_ratio
                     + self.entry_bytes * hca_layers / self.hca_ratio
                     + self.swa_tokens_ratio / self.state_page * ring
                     * (self.csa_ring * self.csa_state_bytes * csa_layers
                        + self.hca_ring * self.hca_state_bytes * hca_layers))
        if speculative and self.draft_layers:
            per_token *= (layers + self.draft_layers) / layers
        return per_token


class Architectures(_Strict):
    sparse_topk: Annotated[int, Field(ge=1)]
    sparse_topk_source: Source
    indexer_heads: Annotated[int, Field(ge=1)]
    indexer_dim: Annotated[int, Field(ge=1)]
    indexer_source: Source
    # DeepSeek V4's hybrid attention: a share of layers are CSA (the lightning indexer scores one
    # compressed entry per csa_ratio tokens), the rest attend to heavily compressed entries only
    csa_share: Share
    csa_ratio: Annotated[int, Field(ge=1)]
    compressed_source: Source
    sliding_window: Annotated[int, Field(ge=1)]
    sliding_share: Share
    sliding_source: Source
    mla_q_lora: Annotated[int, Field(ge=1)]
    mla_latent: Annotated[int, Field(ge=1)]
    mla_rope: Annotated[int, Field(ge=0)]
    mla_qk_head: Annotated[int, Field(ge=1)]
    mla_v_head: Annotated[int, Field(ge=1)]
    mla_source: Source
    compressed_kv_pools: dict[EngineName, CompressedKVPool] = {}
    """engines whose DeepSeek V4 KV pool is not one latent entry per token (the model's
    ``kv_bytes_per_token``) but the layout above"""


class EfficiencyTables(_Strict):
    operators: list[OperatorRow]
    fabrics: dict[Literal["nvlink-nvswitch", "nvlink-nvl72", "xgmi", "hccs", "infiniband"], Fabric]
    engines: dict[EngineName, EngineOverhead]
    acceptance: list[AcceptanceRow]
    architectures: Architectures

    def operator(self, op: str, hardware: str, vendor: str, dtype: str = "*",
                 fallback: Tuning = DEFAULT_TUNING, engine: str | None = None,
                 engine_version: str | None = None, rocm_aiter: bool = True,
                 moe_tp: int = 1) -> OperatorRow:
        """The most specific row for ``op`` on this hardware and dtype (and, where a row names
        one, this engine's builds from its ``since`` version on and older than its ``before``
        one, with or without AITER's kernels, and for routed experts split ``moe_tp`` ways by
        tensor parallelism, 1 under expert parallelism); for hardware no row covers, a row made of tuning.py's defaults."""
        version = release(engine_version)
        best: tuple[int, OperatorRow] | None = None
        for row in self.operators:
            if row.op != op:
                continue
            if row.hardware == hardware or (isinstance(row.hardware, list) and hardware in row.hardware):
                hw_score = 2
            elif row.hardware == f"vendor:{vendor}":
                hw_score = 1
            elif row.hardware == "*":
                hw_score = 0
            else:
                continue
            if row.dtype not in ("*", dtype):
                continue
            if row.engine != "*" and (row.engine != engine or not at_least(version, row.since)
                                      or not below(version, row.before)):
                continue
            if row.rocm_aiter is not None and row.rocm_aiter != rocm_aiter:
                continue
            if row.min_moe_tp is not None and moe_tp < row.min_moe_tp:
                continue
            # an engine's dated rows (since or before a version) beat its undated ones
            dated = row.since is not None or row.before is not None
            engine_score = (row.engine != "*") + dated
            score = (4 * (3 * (hw_score * 2 + (row.dtype != "*")) + engine_score)
                     + (row.rocm_aiter is not None) + (row.min_moe_tp is not None))
            if best is None or score > best[0]:
                best = (score, row)
        return best[1] if best else _tuning_row(op, fallback)

    def acceptance_rate(self, method: str | None, dataset: str | None) -> float:
        """Per-draft-token acceptance for a speculative method on a kind of text."""
        best: tuple[int, float] | None = None
        for row in self.acceptance:
            if row.method not in ("*", method) or row.dataset not in ("*", dataset):
                continue
            # the kind of text says more about acceptance than the method does
            score = 2 * (row.dataset != "*") + (row.method != "*")
            if best is None or score > best[0]:
                best = (score, row.rate)
        return best[1] if best else 0.7


FITTED = re.compile(r"calibrat|fitted", re.IGNORECASE)
# fields that say which deployments a row describes, not how fast they run
SELECTORS = frozenset({"min_moe_tp"})


def table_numbers(tables: EfficiencyTables) -> list[tuple[str, str, float, bool]]:
    """Every number the operator, fabric, engine and acceptance tables set, as (row, field,
    value, fitted): fitted where the row's source says it was calibrated or fitted on
    published end-to-end rows (the rest come from datasheets, microbenchmarks and papers).
    docs/sim.md lists the fitted ones; tests/sim/test_sim_validate.py keeps the count."""
    rows: list[tuple[str, Any]] = [
        (f"operators: {r.op} {r.hardware} {r.dtype}" + (f" {r.engine}" if r.engine != "*" else "")
         + (f" since {r.since}" if r.since else "")
         + (f" before {r.before}" if r.before else "")
         + ("" if r.rocm_aiter is None else f" aiter={r.rocm_aiter}")
         + ("" if r.min_moe_tp is None else f" moe_tp>={r.min_moe_tp}"), r) for r in tables.operators]
    rows += [(f"fabrics: {k}", v) for k, v in tables.fabrics.items()]
    rows += [(f"engines: {k}", v) for k, v in tables.engines.items()]
    rows += [(f"acceptance: {a.method} {a.dataset}", a) for a in tables.acceptance]
    out = []
    for name, row in rows:
        for field in sorted(row.model_fields_set - SELECTORS):
            value = getattr(row, field)
            if isinstance(value, int | float) and not isinstance(value, bool):
                out.append((name, field, float(value), bool(FITTED.search(row.source))))
    return out


def at_least(version: tuple[int, ...] | None, since: str | None) -> bool:
    if since is None:
        return True
    floor = release(since)
    return version is not None and floor is not None and version >= floor


def below(version: tuple[int, ...] | None, before: str | None) -> bool:
    if before is None:
        return True
    ceiling = release(before)
    return version is not None and ceiling is not None and version < ceiling


def _tuning_row(op: str, t: Tuning) -> OperatorRow:
    """tuning.py's roofline constants as an operator row (hardware the tables do not cover)."""
    floor = t.per_layer_overhead_s * 1e6
    if op.startswith("eager_dispatch"):  # no measurement: no penalty for running without graphs
        floor = 0.0
    moe = op == "grouped_gemm"
    return OperatorRow(
        op=op,  # type: ignore[arg-type]
        compute_eff=t.compute_efficiency,
        memory_eff=t.moe_memory_efficiency if moe else t.memory_efficiency,
        floor_us=t.step_overhead_s * 1e6 if op == "sampling" else floor,
        per_seq_us=t.per_seq_overhead_s * 1e6 if op == "sampling" else 0.0,
        tokens_half=1.0 if moe else None,
        source="infermatrix/sim/tuning.py defaults (hardware not in the tables)")


def fabric_name(vendor: str, scale_up_domain: int, group: int) -> str:
    """The fabric a collective over ``group`` GPUs rides on this hardware."""
    if group > scale_up_domain:
        return "infiniband"
    if vendor == "amd":
        return "xgmi"
    if vendor == "huawei":
        return "hccs"
    return "nvlink-nvl72" if scale_up_domain > 8 else "nvlink-nvswitch"


def load_tables(path: Path | str = EFFICIENCY_FILE) -> EfficiencyTables:
    """Parse and validate a tables file; CatalogError (file:line problems) when it is wrong."""
    doc = load_yaml(path)
    try:
        return EfficiencyTables.model_validate(doc.data)
    except ValidationError as exc:
        raise CatalogError(_validation_problems(doc, exc)) from None


@lru_cache(maxsize=1)
def default_tables() -> EfficiencyTables:
    return load_tables()
