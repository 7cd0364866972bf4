"""``spectune trace FILE`` — read a traffic trace, assign workloads, and store it with provenance.

The file is read and validated whole (ingest.traces) and workloads are assigned (column → ``--workload`` → prompt
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
from pathlib import Path

from analysis import derived
from ingest import open_store
from ingest.trace_store import store_trace, workload_mix
from ingest.traces import FORMAT_CHOICES, TIMESTAMP_UNITS
from ingest.traces.assigned import read_assigned
from ingest.traces.column_flags import MAP_FIELDS, mapping_from_args


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, metavar="FILE", help="trace file (CSV, JSONL, JSON, Parquet; .gz ok)")
    p.add_argument("--format", default="auto", choices=FORMAT_CHOICES, help="default: detected")
    p.add_argument("--workload", default=None, help="workload for requests the file leaves unlabelled")
    p.add_argument("--name", default=None, help="display name (default: the file name)")
    p.add_argument("--map", dest="maps", action="append", default=[], metavar="FIELD=COLUMN",
                   help=f"generic formats: source column of a field ({', '.join(MAP_FIELDS)}); repeatable")
    p.add_argument("--timestamp-unit", default=None, choices=TIMESTAMP_UNITS, help="unit of a mapped timestamp")


def run(args: argparse.Namespace) -> int:
    return derived.after_landing(_store(args), args.db)  # what answers need, derived once the store was written


def _store(args: argparse.Namespace) -> int:
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
