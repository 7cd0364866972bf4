"""``python -m ingest results|export|trace|requests|watch`` — the ingest command line (DESIGN's CLI contract).

Subcommands register in :data:`COMMANDS` (name → (add_arguments, run, help), or a LazyCommand); ``trace`` lives
in ``ingest/cli/trace.py`` and is imported only when run. Each prints one JSON document with ``--json``.
Exit codes: 0 ok; 2 bad input or usage (one line ``error: <file>:<line>: ...`` on stderr, nothing
written); 1 unexpected failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ingest.cli import answers
from ingest.cli.parser import AnyCommand, LazyCommand, resolve
from ingest.cli.parser import build_parser as build_parser_for
from ingest.errors import InputError, UsageError, store_failure
from ingest.paths import default_db_path
from ingest.pipes import run_quietly


def _results_args(p: argparse.ArgumentParser) -> None:
    from ingest.results import FORMAT_CHOICES

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
    from ingest import caps
    from ingest.results import ReadOptions, read_files
    from ingest.results.dims import parse_sets

    caps.set_from_flag(caps.IMPORT_CAP, args.max_file_bytes)

    opts = ReadOptions(overrides=parse_sets(args.sets), baseline=args.baseline)
    parsed = read_files(list(args.files), args.format, opts)  # every file validated before any write
    from ingest import open_store
    from ingest.results.land import land

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
    from ingest import caps, open_store
    from ingest.results.spectune_parquet import export_runs

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


COMMANDS: dict[str, AnyCommand] = {
    "results": (_results_args, _results, "import benchmark results (vLLM bench, Spec-Bench, SGLang, Parquet, "
                                         "published CSV); format auto-detected"),
    "export": (_export_args, _export, "write runs as a spectune Parquet export folder"),
    "trace": LazyCommand("ingest.cli.trace", "read a traffic trace (Azure, BurstGPT, Mooncake, ShareGPT, JSONL, "
                                             "CSV, Parquet) and store it for re-scoring"),
    "requests": LazyCommand("ingest.cli.requests", "land a request log (per-request spec-decode metrics with "
                                                   "tenant/route/workload labels) for acceptance by segment"),
    "watch": LazyCommand("ingest.watch.cli", "collect production spec-decode counters (vLLM /metrics, "
                                             "Prometheus) into the store"),
}


# Subcommands that write the store (``export`` reads it, ``watch`` writes every scrape and never ends).
WRITES_STORE = frozenset({"results", "trace", "requests"})


def build_parser(argv: list[str] | None = None, *, only_selected: bool = False) -> argparse.ArgumentParser:
    return build_parser_for("python -m ingest", "Bring results and traces into the spectune store.", COMMANDS,
                            argv, only_selected=only_selected)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv, only_selected=True).parse_args(argv)
    try:
        code = resolve(COMMANDS[args.command])[1](args)
    except (InputError, UsageError) as exc:
        print(exc.one_line(), file=sys.stderr)
        return 2
    except Exception as exc:  # a DuckDB error is about the store: one line naming it (ingest/errors.py)
        failure = store_failure(exc, args.db if getattr(args, "db", None) is not None else default_db_path())
        if failure is None:
            raise
        print(failure.one_line(), file=sys.stderr)
        return 2
    if code == 0 and args.command in WRITES_STORE:  # the next winners call replays instead of computing
        answers.precompute(args.db)
    return code


if __name__ == "__main__":
    raise SystemExit(run_quietly(main))
