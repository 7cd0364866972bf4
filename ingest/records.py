"""The typed records that enter the store: a cell's identity, a run's provenance, spec-decode counters.

A *cell* is one point of the benchmark product (method × depth × family × model × workload × GPU ×
concurrency, and the dataset under the workload when a source names one). Its id is a stable hash of those
dimensions, so the same cell gets the same id in every run, on every host and in any order. ``depth`` is 0 for
the ``none`` baseline; ``concurrency`` is None when the source does not state its load ("load not stated").
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime

import polars as pl

DIMENSIONS: tuple[str, ...] = ("method", "depth", "family", "model", "workload", "gpu", "concurrency")
KNOWN_METHODS: tuple[str, ...] = (
    "none", "mtp", "eagle3", "dflash", "dspark", "ngram", "suffix", "draft_model", "medusa", "eagle",
)
BACKENDS: tuple[str, ...] = ("sim", "vllm", "import")
# A candidate's mode: one depth, vLLM's num_speculative_tokens_per_batch_size, or its enable_adaptive_verification.
MODES: tuple[str, ...] = ("fixed", "schedule", "adaptive")
# Methods vLLM 0.32 supports adaptive verification for (vllm/config/speculative.py, enable_adaptive_verification:
# "Currently only supported for method=\"dspark\"").
ADAPTIVE_METHODS: tuple[str, ...] = ("dspark",)


def cell_mode(schedule: object, adaptive: object) -> str:
    """The mode of a cell from its server options (a schedule wins: the two are never set together)."""
    return "schedule" if schedule else "adaptive" if adaptive else "fixed"

# Per-request samples: one row per request of a cell. Nullable columns may be missing for imports.
REQUEST_SCHEMA: dict[str, pl.DataType] = {
    "request_index": pl.Int32(),
    "input_tokens": pl.Int32(),
    "output_tokens": pl.Int32(),
    "ttft_ms": pl.Float64(),
    "tpot_ms": pl.Float64(),
    "e2e_ms": pl.Float64(),
    "start_s": pl.Float64(),  # send time, seconds from the cell's measured window start
    "drafted_tokens": pl.Int64(),
    "accepted_tokens": pl.Int64(),
    # vLLM's per-request spec-decode metrics (runner.vllm.client): verify steps, and per 1-based draft position
    # how many steps accepted it (from the acceptance histogram); ordered per-step arrays at the detailed level.
    "spec_steps": pl.Int64(),
    "accepted_per_pos": pl.List(pl.Int64()),
    "step_accepted": pl.List(pl.Int32()),
    "step_drafted": pl.List(pl.Int32()),
    "ok": pl.Boolean(),
    "error": pl.String(),
}


@dataclass(frozen=True, slots=True)
class CellKey:
    """The dimensions of one benchmark cell."""

    method: str
    depth: int
    family: str
    model: str
    workload: str
    gpu: str
    concurrency: int | None  # None: the source does not state the load (never 0, never pooled with a stated load)
    # Server options that change what is measured, part of the id only when set (so every other cell keeps
    # its id): a depth schedule per batch size (vLLM's num_speculative_tokens_per_batch_size, inclusive
    # [start, end, K] ranges; ``depth`` is then its largest K) and synthetic per-position acceptance rates
    # (rejection_sample_method "synthetic": the cell measures step cost at a given acceptance).
    schedule: tuple[tuple[int, int, int], ...] = ()
    synthetic_rates: tuple[float, ...] = ()
    # vLLM's adaptive verification (``enable_adaptive_verification``, DSpark): ``depth`` is then the maximum
    # depth the drafter proposes and the verifier trims per step; part of the id only when set.
    adaptive: bool = False
    # The dataset the cell was measured on (GSM8K, HumanEval …) under its workload; part of the id only when set.
    dataset: str | None = None

    def __post_init__(self) -> None:
        if self.method == "none" and self.depth != 0:
            object.__setattr__(self, "depth", 0)

    @property
    def cell_id(self) -> str:
        dims: list[object] = [getattr(self, d) for d in DIMENSIONS]
        options: dict[str, object] = self.options()
        if self.dataset:
            options = {**options, "dataset": self.dataset}
        if options:
            dims.append(options)
        canonical = json.dumps(dims, separators=(",", ":"))
        return hashlib.sha256(canonical.encode()).hexdigest()[:16]

    def options(self) -> dict[str, object]:
        """The set server options (schedule, synthetic rates) as plain JSON values; empty for most cells."""
        out: dict[str, object] = {}
        if self.schedule:
            out["schedule"] = [list(r) for r in self.schedule]
        if self.synthetic_rates:
            out["synthetic_rates"] = list(self.synthetic_rates)
        if self.adaptive:
            out["adaptive"] = True
        return out

    @property
    def mode(self) -> str:
        """The candidate's mode (DESIGN, winner rule): ``fixed`` (one depth), ``schedule`` (a depth per batch
        size) or ``adaptive`` (vLLM's adaptive verification up to ``depth``)."""
        return cell_mode(self.schedule, self.adaptive)

    @property
    def server_config(self) -> tuple:
        """What needs a server restart: the cell minus workload and load."""
        return (self.method, self.depth, self.family, self.model, self.gpu, self.schedule, self.synthetic_rates,
                self.adaptive)

    def as_dict(self) -> dict[str, object]:
        """The cell's columns: its dimensions, and its server options as JSON text (null when unset)."""
        out: dict[str, object] = {d: getattr(self, d) for d in DIMENSIONS}
        out["schedule"] = json.dumps([list(r) for r in self.schedule]) if self.schedule else None
        out["synthetic_rates"] = json.dumps(list(self.synthetic_rates)) if self.synthetic_rates else None
        out["mode"] = self.mode
        out["dataset"] = self.dataset or None
        return out


@dataclass(slots=True)
class SpecCounters:
    """Deltas of vLLM's spec-decode counters over a cell's measured window."""

    drafts: int
    draft_tokens: int
    accepted_tokens: int
    accepted_per_pos: list[int] = field(default_factory=list)


@dataclass(slots=True)
class RunInfo:
    """Provenance of one run (a runner invocation or one imported file)."""

    run_id: str
    backend: str  # sim | vllm | import
    source: str  # matrix path, imported file path, or a description
    host: str = ""
    gpu_model: str = ""
    gpu_count: int = 0
    engine_version: str = ""
    matrix_hash: str = ""
    file_hash: str = ""
    importer: str = ""
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC).replace(tzinfo=None))
    finished_at: datetime | None = None
    notes: str = ""


def empty_requests() -> pl.DataFrame:
    return pl.DataFrame(schema=REQUEST_SCHEMA)


def conform_requests(frame: pl.DataFrame) -> pl.DataFrame:
    """Cast/complete a per-request frame to :data:`REQUEST_SCHEMA` (missing nullable columns → null)."""
    cols = []
    for name, dtype in REQUEST_SCHEMA.items():
        if name in frame.columns:
            cols.append(pl.col(name).cast(dtype, strict=False))
        elif name == "ok":
            cols.append(pl.lit(True, dtype=dtype).alias(name))
        else:
            cols.append(pl.lit(None, dtype=dtype).alias(name))
    if frame.height == 0 and not frame.columns:
        return empty_requests()
    return frame.select(cols)
