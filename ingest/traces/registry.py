"""The trace format registry and :func:`read_trace`, the one entry point for reading a traffic trace.

``FORMATS`` (an :class:`ingest.formats.FormatRegistry`, the mechanism the result registry shares) maps a
format name (what ``--format`` takes) to its reader and, for formats that say their workload only in the
file name, the guess from that name; ``auto`` detects the name
first (:mod:`ingest.traces.detect`). Every reader returns a :class:`~ingest.traces.normalise.RawTable`
and :func:`~ingest.traces.normalise.normalise` turns it into the one trace schema, so validation,
drops and ordering are identical for all formats. Bad input raises ``InputError`` (one line, with
file and line) and nothing else; no partial result is ever returned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import InputError
from ingest.formats import FormatRegistry
from ingest.traces.azure import read_azure
from ingest.traces.azure import workload_from_name as azure_workload
from ingest.traces.burstgpt import read_burstgpt
from ingest.traces.detect import detect_kind
from ingest.traces.generic import read_generic_csv, read_generic_jsonl
from ingest.traces.lazy import STREAMABLE, normalised
from ingest.traces.limits import DEFAULT_LIMITS, Limits
from ingest.traces.mapping import TraceMapping
from ingest.traces.mooncake import read_mooncake
from ingest.traces.mooncake import workload_from_name as mooncake_workload
from ingest.traces.normalise import RawTable, normalise
from ingest.traces.parquet import read_parquet
from ingest.traces.schema import TraceFrame
from ingest.traces.sharegpt import read_sharegpt
from ingest.traces.source import open_source
from ingest.traces.specbench import read_specbench

Reader = Callable[..., RawTable]  # (Source, TraceMapping | None, Limits) -> RawTable


@dataclass(frozen=True, slots=True)
class TraceFormat:
    """One registered trace format."""

    name: str
    reader: Reader
    container: str  # csv | jsonl | json | parquet
    takes_mapping: bool
    description: str
    # the workload the file's name says, for formats whose files say it nowhere else (below --workload)
    name_hint: Callable[[str], str | None] | None = None


FORMATS: FormatRegistry[TraceFormat] = FormatRegistry("trace", (
    TraceFormat("azure", read_azure, "csv", False, "Azure LLM inference trace 2023/2024 (CSV)", azure_workload),
    TraceFormat("burstgpt", read_burstgpt, "csv", False, "BurstGPT trace, 6- or 8-column release (CSV)"),
    TraceFormat("mooncake", read_mooncake, "jsonl", False, "Mooncake FAST'25 trace (JSONL)", mooncake_workload),
    TraceFormat("sharegpt", read_sharegpt, "json", False, "ShareGPT conversations (JSON list or JSONL)"),
    TraceFormat("jsonl", read_generic_jsonl, "jsonl", True, "vLLM custom dataset or mapped JSONL"),
    TraceFormat("specbench", read_specbench, "jsonl", False, "Spec-Bench question.jsonl"),
    TraceFormat("csv", read_generic_csv, "csv", True, "generic CSV with a column mapping"),
    TraceFormat("parquet", read_parquet, "parquet", True, "generic Parquet with a column mapping"),
))
FORMAT_CHOICES: tuple[str, ...] = FORMATS.choices
# Formats whose files say their workload only in the file name (a hint below an explicit --workload).
NAME_HINTS: dict[str, Callable[[str], str | None]] = {f.name: f.name_hint for f in FORMATS.values() if f.name_hint}


def check_request(path: Path, fmt: str, mapping: TraceMapping | None, workload: str | None) -> bool | None:
    """The checks on the arguments of a read (before any byte is read); returns what to expect of the
    file: Parquet (True), not Parquet (False) or either (None). Shared with the streaming reader."""
    if fmt not in FORMAT_CHOICES:
        raise InputError(path, 0, f"unknown format {fmt!r}; expected one of {FORMATS.expected()}")
    if fmt != "auto" and mapping is not None and not FORMATS[fmt].takes_mapping:
        raise InputError(path, 0, f"format {fmt} has fixed columns; a column mapping applies to csv, jsonl, parquet")
    if workload is not None and (not workload.strip() or len(workload) > 64):
        raise InputError(path, 0, "workload must be a non-empty label of at most 64 characters")
    if fmt == "auto" and path.suffix.lower() == ".parquet":
        return True
    return None if fmt == "auto" else fmt == "parquet"


def read_trace(
    path: str | Path,
    fmt: str = "auto",
    mapping: TraceMapping | None = None,
    workload: str | None = None,
    *,
    name: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> TraceFrame:
    """Read, validate and normalise the trace at ``path``.

    ``fmt`` is a ``FORMATS`` name or ``auto``. ``mapping`` names the columns of a generic CSV/JSONL/
    Parquet file (``None``: well-known names). ``workload`` labels requests the file leaves
    unlabelled. Raises :class:`InputError` for any bad input.
    """
    path = Path(path)
    want_parquet = check_request(path, fmt, mapping, workload)
    with open_source(path, limits, want_parquet) as src:
        kind = detect_kind(src, mapping) if fmt == "auto" else fmt
        if kind != "sharegpt":  # only the ShareGPT document reader copes with unbounded lines
            src.check_line_cap()
        spec = FORMATS[kind]
        # the display name first: an upload is read from a temp file whose own name says nothing
        hint = (spec.name_hint(name or "") or spec.name_hint(path.name)) if spec.name_hint else None
        if kind in STREAMABLE:  # one validating query; the exact parse below only when it flags something
            done = normalised(src, kind, mapping, limits, workload if workload is not None else hint)
            if done is not None:
                frame, dropped, warnings = done
                return TraceFrame(frame=frame, format=kind, file_hash=src.sha256, name=name or path.name,
                                  dropped=dropped, warnings=tuple(warnings))
        try:
            raw = spec.reader(src, mapping, limits)
        except RecursionError:  # a reader's own recursion on pathological input: still bad input
            raise InputError(path, 0, "input nested too deeply to read") from None
        if raw.workload_hint is None:
            raw.workload_hint = hint
        frame, dropped, warnings = normalise(path, raw, limits, workload)
        return TraceFrame(
            frame=frame,
            format=kind,
            file_hash=src.sha256,
            name=name or path.name,
            dropped=dropped,
            warnings=tuple(warnings),
        )
