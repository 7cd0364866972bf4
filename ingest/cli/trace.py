"""``python -m ingest trace FILE`` — read a traffic trace, assign workloads, and store it with provenance.

Owns the command (``add_args``/``run``, registered lazily in ingest/__main__.py's COMMANDS). The file is
read and validated whole (ingest.traces) and workloads are assigned (column → ``--workload`` → prompt
classifier → unknown) before anything is written; bad input exits 2 with one line and writes nothing. The
same file twice is
one trace (``new: false``). Generic CSV/JSONL/Parquet columns are mapped with ``--map FIELD=COLUMN``.

JSON (``--json``): trace_id, format, requests, workload_mix, plus new, name, file_hash, dropped,
warnings, workload_assignment.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import fields
from pathlib import Path

from ingest.errors import UsageError
from ingest.traces import FORMAT_CHOICES, TIMESTAMP_UNITS, TraceMapping

MAP_FIELDS = tuple(f.name for f in fields(TraceMapping) if f.name != "timestamp_unit")


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, metavar="FILE", help="trace file (CSV, JSONL, JSON, Parquet; .gz ok)")
    p.add_argument("--format", default="auto", choices=FORMAT_CHOICES, help="default: detected")
    p.add_argument("--workload", default=None, help="workload for requests the file leaves unlabelled")
    p.add_argument("--name", default=None, help="display name (default: the file name)")
    p.add_argument("--map", dest="maps", action="append", default=[], metavar="FIELD=COLUMN",
                   help=f"generic formats: source column of a field ({', '.join(MAP_FIELDS)}); repeatable")
    p.add_argument("--timestamp-unit", default=None, choices=TIMESTAMP_UNITS, help="unit of a mapped timestamp")


def mapping_from_args(maps: list[str], unit: str | None, path: Path | None = None) -> TraceMapping | None:
    """``--map`` flags as a TraceMapping (None when no flag was given).

    Flags that name neither ``input_tokens`` nor ``prompt`` (say ``--timestamp-unit ms`` alone, or
    ``--map shard=model``) are completed from the file's well-known column names when ``path`` is
    given, as if no flag had been passed, so a user need not restate every column to fix one; an
    explicit ``--timestamp-unit`` then applies to a bare ``timestamp`` column found that way.
    """
    if not maps and unit is None:
        return None
    given: dict[str, str] = {}
    for item in maps:
        fld, sep, col = item.partition("=")
        fld = fld.strip()
        if not sep or fld not in MAP_FIELDS or not col.strip():
            raise UsageError(f"--map {item!r}: expected FIELD=COLUMN with FIELD one of {', '.join(MAP_FIELDS)}")
        if fld in given:
            raise UsageError(f"--map {fld} given twice")
        given[fld] = col.strip()
    ts_unit = unit or "s"
    if path is not None and "input_tokens" not in given and "prompt" not in given:
        given, ts_unit = _complete(path, given, unit)
    mapping = TraceMapping(timestamp_unit=ts_unit, **given)
    problems = mapping.problems()
    if problems:
        raise UsageError(f"--map: {problems[0]}")
    return mapping


def _complete(path: Path, given: dict[str, str], unit: str | None) -> tuple[dict[str, str], str]:
    """Partial ``--map`` flags plus the file's well-known columns (flags win), and the timestamp unit."""
    from ingest.trace_store import peek_columns
    from ingest.traces.mapping import AmbiguousMapping, infer_mapping

    try:
        inferred = infer_mapping(peek_columns(path))
    except AmbiguousMapping as exc:
        raise UsageError(f"--map: {exc}") from None
    if inferred is None:  # nothing to complete from: the mapping stays partial and is refused as such
        return given, unit or "s"
    # A timestamp column found by name: an explicit unit wins, else the unit its name carries (a bare
    # "timestamp" stays AUTO_UNIT: date-times are read, plain numbers refused as unit-ambiguous).
    by_name = "timestamp" not in given and inferred.timestamp is not None
    return {**inferred.columns(), **given}, unit or (inferred.timestamp_unit if by_name else "s")


def read_assigned(path: Path, fmt: str, workload: str | None, mapping: TraceMapping | None, name: str | None,
                  limits=None):
    """Read and validate a trace and fill missing workloads; returns (TraceFrame, assignment counts)."""
    # Workloads are assigned here, before the trace lands, because prompt text is not stored.
    from ingest.classify import assign_workloads
    from ingest.traces import DEFAULT_LIMITS, read_trace

    tf = read_trace(path, fmt, mapping, workload, name=name, limits=limits or DEFAULT_LIMITS)
    tf.frame, assignment = assign_workloads(tf.frame)
    return tf, assignment


def run(args: argparse.Namespace) -> int:
    from ingest import open_store
    from ingest.trace_store import store_trace, workload_mix

    mapping = mapping_from_args(args.maps, args.timestamp_unit, args.file)
    tf, assignment = read_assigned(args.file, args.format, args.workload, mapping, args.name)
    with open_store.session(args.db) as con:
        trace_id, new = store_trace(con, tf, assignment=assignment, source_path=str(args.file))
    res = {"trace_id": trace_id, "format": tf.format, "requests": tf.frame.height,
           "workload_mix": workload_mix(tf.frame), "new": new, "name": tf.name, "file_hash": tf.file_hash,
           "dropped": dict(tf.dropped), "warnings": list(tf.warnings), "workload_assignment": assignment}
    for w in tf.warnings:
        print(f"warning: {args.file}: {w}", file=sys.stderr)
    if args.json:
        print(json.dumps(res))
        return 0
    mix = ", ".join(f"{w} {f:.0%}" for w, f in res["workload_mix"].items())
    state = "stored" if new else "already stored"
    print(f"{args.file}: {tf.format}, {res['requests']} requests ({mix}){dropped_note(tf.dropped)} "
          f"→ trace {trace_id} ({state})")
    return 0


def dropped_note(dropped: dict[str, int]) -> str:
    """``; dropped 31 with 0 output tokens`` for the one-line summary ('' when nothing was dropped)."""
    words = {"zero_output_tokens": "with 0 output tokens", "zero_input_tokens": "with 0 input tokens",
             "unpaired_turns": "unpaired turns", "empty_turns": "questions without turns"}
    parts = [f"{n:,} {words.get(reason, reason.replace('_', ' '))}" for reason, n in dropped.items() if n]
    return f"; dropped {', '.join(parts)}" if parts else ""
