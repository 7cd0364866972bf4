"""``python -m ingest results|export|trace`` — the ingest command line (DESIGN's CLI contract).

Subcommands register in :data:`COMMANDS` (name → (add_arguments, run, help)); ``trace`` lives in
``ingest/cli_trace.py`` and is loaded when present. Each prints one JSON document with ``--json``.
Exit codes: 0 ok; 2 bad input or usage (one line ``error: <file>:<line>: ...`` on stderr, nothing
written); 1 unexpected failure.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

from ingest.errors import InputError, UsageError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # one line, exit 2 (argparse would print usage too)
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def _results_args(p: argparse.ArgumentParser) -> None:
    from ingest.results import FORMAT_CHOICES

    p.add_argument("files", nargs="+", type=Path, metavar="FILE", help="result files or export folders")
    p.add_argument("--format", default="auto", choices=FORMAT_CHOICES, help="default: detected per file")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="dimension the files lack: method, depth, family, model, workload, gpu, concurrency, "
                        "gpu_count (repeatable)")
    p.add_argument("--baseline", type=Path, default=None, help="Spec-Bench: the vanilla run's output, for speedups")


def _results(args: argparse.Namespace) -> int:
    from ingest.results import ReadOptions, read_files
    from ingest.results.dims import parse_sets

    opts = ReadOptions(overrides=parse_sets(args.sets), baseline=args.baseline)
    parsed = read_files(list(args.files), args.format, opts)  # every file validated before any write
    from ingest import store
    from ingest.results.land import land

    with store.session(args.db) as con:
        reports = land(con, parsed)
    for r in reports:  # warnings only once everything landed: a failing invocation prints one line
        for w in r["warnings"]:
            print(f"warning: {r['path']}: {w}", file=sys.stderr)
    if args.json:
        print(json.dumps({"files": reports}, default=str))
        return 0
    for r in reports:
        dup = f", {r['duplicates']} already in the store" if r["duplicates"] else ""
        print(f"{r['path']}: {r['format']}, {r['rows']} cells added ({r['requests']} requests){dup} "
              f"→ run {r.get('already_imported_as') or r['run_id']}")
    return 0


def _export_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", dest="runs", action="append", required=True, metavar="RUN", help="run id (repeatable)")
    p.add_argument("--out", type=Path, required=True, help="folder to write runs/cells/positions/requests.parquet")


def _export(args: argparse.Namespace) -> int:
    from ingest import store
    from ingest.results.spectune_parquet import export_runs

    if args.out.exists() and not args.out.is_dir():
        raise UsageError(f"--out {args.out}: exists and is not a folder")
    with store.session(args.db, read_only=args.db is not None and Path(args.db).exists()) as con:
        res = export_runs(con, args.runs, args.out)
    if args.json:
        print(json.dumps(res))
    else:
        print(f"exported {', '.join(res['runs'])} to {res['out']}: "
              + ", ".join(f"{t} {n}" for t, n in res["rows"].items()))
    return 0


Command = tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]
COMMANDS: dict[str, Command] = {
    "results": (_results_args, _results, "import benchmark results (vLLM bench, Spec-Bench, SGLang, Parquet, "
                                         "published CSV); format auto-detected"),
    "export": (_export_args, _export, "write runs as a spectune Parquet export folder"),
}


def _register_optional() -> None:
    """Subcommands in their own modules (trace import) register here when present."""
    import importlib

    for module in ("ingest.cli_trace",):
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        COMMANDS.update(mod.COMMANDS)


def build_parser() -> argparse.ArgumentParser:
    _register_optional()
    ap = _Parser(prog="python -m ingest", description="Bring results and traces into the spectune store.")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for name, (add_args, _run, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text)
        add_args(p)
        if not any(a.dest == "db" for a in p._actions):
            p.add_argument("--db", type=Path, default=None,
                           help="store (default data/spectune.duckdb, env SPECTUNE_DB)")
        if not any(a.dest == "json" for a in p._actions):
            p.add_argument("--json", action="store_true", help="print one JSON document")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command][1](args)
    except (InputError, UsageError) as exc:
        print(exc.one_line(), file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
