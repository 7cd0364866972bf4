"""The backend interface: run one server config's cells and hand each finished cell to a sink."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import polars as pl

from ingest.records import CellKey, SpecCounters
from runner.matrix import Matrix, ServerConfig


@dataclass(slots=True)
class CellOutcome:
    key: CellKey
    status: str = "ok"  # ok | failed
    error: str | None = None
    requests: pl.DataFrame = field(default_factory=pl.DataFrame)
    counters: SpecCounters | None = None
    itl_ms: np.ndarray | None = None
    window_s: float | None = None
    gpu_count: int = 0
    model_factors: dict[str, np.ndarray] | None = None  # simulated cells: per-draw factors (analysis.model_draws)


@dataclass(slots=True)
class HostFacts:
    host: str
    gpu_model: str
    gpu_count: int
    engine_version: str
    notes: str = ""


Sink = Callable[[CellOutcome], None]
# (current server config label, cells done, cells total); None leaves a count as it was (a status note)
Progress = Callable[[str, int | None, int | None], None]


class Backend(Protocol):
    kind: str

    def host_facts(self, matrix: Matrix) -> HostFacts: ...

    def run_server_config(self, matrix: Matrix, config: ServerConfig, cells: list[CellKey], sink: Sink) -> None:
        """Run ``cells`` (all of one server config) and call ``sink`` once per cell, in order."""
        ...
