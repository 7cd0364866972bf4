"""What a result-file reader returns: parsed cells and provenance, validated and ready to land, nothing written.

Readers are pure: they read one file and return a :class:`ParsedFile` or raise ``InputError``. Landing
(:mod:`ingest.results.land`) happens only after every file of an invocation parsed, so a bad second file
leaves the store unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ingest.records import CellKey, RunInfo, SpecCounters


@dataclass(frozen=True, slots=True)
class ReadOptions:
    """Command-line choices passed down to every reader."""

    overrides: dict[str, str] = field(default_factory=dict)  # --set key=value (dimension overrides)
    baseline: Path | None = None  # Spec-Bench: the vanilla (no speculation) output to compute speedups against


@dataclass(slots=True)
class ParsedCell:
    """One cell as an imported file describes it (the arguments of ``store.cell_frames``)."""

    key: CellKey
    requests: pl.DataFrame
    window_s: float | None
    gpu_count: int = 0
    counters: SpecCounters | None = None
    itl_ms: np.ndarray | None = None
    headline: dict[str, Any] = field(default_factory=dict)  # the file's own numbers (cells columns), as given
    status: str = "ok"  # "failed": the file records a benchmark in which no request succeeded
    error: str | None = None
    labels: dict[str, str | None] = field(default_factory=dict)  # store.LABEL_COLUMNS, e.g. the source_url


@dataclass(slots=True)
class ParsedFile:
    """One imported file: its run (provenance), cells, and any tables landed as given."""

    path: Path
    format: str
    file_hash: str
    run: RunInfo
    cells: list[ParsedCell] = field(default_factory=list)
    # Pre-built tables for formats that already are store rows (spectune's Parquet export).
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    extra: dict[str, pl.DataFrame] = field(default_factory=dict)  # e.g. {"published": rows}
    warnings: list[str] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)  # format-specific figures for the report
    # rows a later step completes with another file of the invocation (a per-position table's rows await the
    # cells of their cells table: ingest.results.published_cells.attach)
    pending: list[Any] = field(default_factory=list)

    @property
    def n_cells(self) -> int:
        if self.tables:
            return self.tables["cells"].height
        return len(self.cells)


def import_run(path: Path, fmt: str, file_hash: str, *, notes: str = "", gpu_model: str = "",
               gpu_count: int = 0) -> RunInfo:
    """The provenance row of one imported file: backend ``import``, its hash and importer, import time."""
    return RunInfo(run_id=f"import-{file_hash[:16]}", backend="import", source=str(path), file_hash=file_hash,
                   importer=fmt, notes=notes, gpu_model=gpu_model, gpu_count=gpu_count)
