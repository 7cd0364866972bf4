"""``spectune results FILE…`` (also ``spectune ingest``) and ``spectune export`` — benchmark results into the store,
and runs out of it as a spectune Parquet export folder.

Each prints one JSON document with ``--json``. Every file is validated before anything is written: bad input
exits 2 with one line ``error: <file>:<line>: ...`` on stderr and nothing written.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from analysis import derived
from ingest import caps, open_store
from ingest.errors import UsageError
from ingest.results import FORMAT_CHOICES, ReadOptions, read_files
from ingest.results.dims import parse_sets
from ingest.results.land import land
from ingest.results.spectune_parquet import export_runs


def _results_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help="result files or export folders")
    p.add_argument("--format", default="auto", choices=FORMAT_CHOICES, help="default: detected per file")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="dimension the files lack: method, depth, family, model, workload, gpu, concurrency, "
                        "gpu_count (repeatable)")
    p.add_argument("--baseline", type=Path, default=None, help="Spec-Bench: the vanilla run's output, for speedups")
    _cap_arg(p)


def _cap_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-file-bytes", default=None, metavar="SIZE",
                   help="largest file read (and export part written), e.g. 2GiB (default $SPECTUNE_MAX_FILE_BYTES, "
                        "else 1GiB)")


def _results(args: argparse.Namespace) -> int:
    caps.set_from_flag(caps.IMPORT_CAP, args.max_file_bytes)

    opts = ReadOptions(overrides=parse_sets(args.sets), baseline=args.baseline)
    parsed = read_files(list(args.files), args.format, opts)  # every file validated before any write
    with open_store.session(args.db) as con:
        reports = land(con, parsed)
    for r in reports:  # warnings only once everything landed: a failing invocation prints one line
        for w in r["warnings"]:
            print(f"warning: {r['path']}: {w}", file=sys.stderr)
    if args.json:
        print(json.dumps({"files": reports}, default=str))
        return 0
    for r in reports:
        dup = f", {r['duplicates']} already in the store" if r["duplicates"] else ""
        dup = dup or (", already imported" if r.get("already_imported_as") else "")
        more = "".join(f", {n} {t} rows" for t, n in (r.get("extra_rows") or {}).items())
        print(f"{r['path']}: {r['format']}, {r['rows']} cells added ({r['requests']} requests){more}{dup} "
              f"→ run {r.get('already_imported_as') or r['run_id']}")
    return 0


def _export_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", dest="runs", action="append", required=True, metavar="RUN", help="run id (repeatable)")
    p.add_argument("--out", type=Path, required=True, help="folder to write runs/cells/positions/requests.parquet")
    _cap_arg(p)


def _export(args: argparse.Namespace) -> int:
    caps.set_from_flag(caps.IMPORT_CAP, args.max_file_bytes)

    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out}: exists and is not a folder")
    with open_store.session(args.db, read_only=args.db is not None and Path(args.db).exists()) as con:
        res = export_runs(con, args.runs, args.out)
    if args.json:
        print(json.dumps(res))
    else:
        print(f"exported {', '.join(res['runs'])} to {res['out']}: "
              + ", ".join(f"{t} {n}" for t, n in res["rows"].items()))
    return 0


def _results_run(args: argparse.Namespace) -> int:
    return derived.after_landing(_results(args), args.db)  # what answers need, derived once the store was written


COMMANDS = {"results": (_results_args, _results_run), "ingest": (_results_args, _results_run),
            "export": (_export_args, _export)}
