"""The ``spectune`` command: the table of every subcommand, and the one dispatcher that parses, runs and exits.

:data:`COMMANDS` is data: name → (module in :mod:`spectune.commands`, one-line help). ``spectune --help`` lists it
without importing any command module; ``spectune X …`` imports only X's module (by its name, with importlib: the
command line's lazy import, beside the winners fast path's), so every command's ``--help`` loads that command and
nothing else.

A command module gives either ``add_arguments(parser)`` and ``run(args) -> int`` (one command), or ``COMMANDS``:
name → (add_arguments, run) for the commands it groups, or ``run_words(words) -> int`` when it takes its
words unparsed (``dashboard`` hands them to ``streamlit run``). Every parsed command gets ``--db`` and ``--json``.

``python -m analysis|ingest|runner`` are aliases: their ``__main__`` runs spectune/alias.py (without importing
spectune: ingest/alias.py), which calls :func:`main` with the commands of :data:`ALIASES`, so flags, JSON and exit
codes are the same. Exit codes: 0 ok, 2 bad input or usage (one line
``error: …`` on stderr), 1 unexpected, 3 (``compare``, ``drift``) when a winner changed, 128+N on signal N.
"""

from __future__ import annotations

import argparse
import importlib
import signal
import sys
from collections.abc import Callable, Sequence
from types import ModuleType

from ingest.errors import InputError, UsageError, store_failure
from ingest.paths import default_db_path
from ingest.pipes import run_quietly
from ingest.settings import load as load_settings
from spectune import __version__
from spectune.parser import OneLineParser, add_common, selected_command

# name → (module that holds it, one-line help), in the order `spectune --help` lists them.
COMMANDS: dict[str, tuple[str, str]] = {
    "plan": ("spectune.commands.runs", "cells, server configs and estimated GPU-hours of a matrix"),
    "run": ("spectune.commands.runs", "run a matrix and write results to the store"),
    "tune": ("spectune.commands.tune", "race (method, depth) candidates in rounds: the winners for a fraction of "
                                       "the full grid's GPU time"),
    "winners": ("spectune.commands.winners", "winner (method, depth) per GPU × family × workload × load"),
    "curve": ("spectune.commands.winners", "acceptance and throughput by depth for one method"),
    "rescore": ("spectune.commands.rescore", "re-score (method, depth) on your traffic trace; the config to deploy"),
    "compare": ("spectune.commands.compare",
                "compare two runs: drift, changed winners (exit 3), shards to re-tune"),
    "results": ("spectune.commands.results", "import benchmark results (vLLM bench / sweep, GuideLLM, SGLang, "
                                             "Spec-Bench, Parquet exports, published CSV); format auto-detected"),
    "ingest": ("spectune.commands.results", "the same as `spectune results`"),
    "export": ("spectune.commands.results", "write runs as a spectune Parquet export folder"),
    "trace": ("spectune.commands.trace", "read a traffic trace (Azure, BurstGPT, Mooncake, ShareGPT, JSONL, CSV, "
                                         "Parquet) and store it for re-scoring"),
    "requests": ("spectune.commands.requests", "land a request log (per-request spec-decode metrics with "
                                               "tenant/route/workload labels) for acceptance by segment"),
    "watch": ("spectune.commands.watch", "collect production spec-decode counters (vLLM /metrics, Prometheus) into "
                                         "the store"),
    "drift": ("spectune.commands.production",
              "production acceptance per segment vs the benchmark; exit 3 when a winner changed"),
    "ab": ("spectune.commands.production", "A/B readout of two production targets serving one segment"),
    "dashboard": ("spectune.commands.dashboard", "start the dashboard (Streamlit; extra flags go to `streamlit run`)"),
    "settings": ("spectune.commands.settings", "every setting: its environment variable, default and value"),
}

DESCRIPTION = "Which speculative-decoding method, at which depth, is fastest for my model, my GPU and my traffic?"

# The `python -m PACKAGE` aliases: package → (prog, description, the commands it has).
ALIASES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "analysis": ("python -m analysis", "Winners, curves, re-scoring and drift over the store.",
                 ("winners", "curve", "rescore", "compare", "drift", "ab")),
    "ingest": ("python -m ingest", "Bring results and traces into the spectune store.",
               ("results", "export", "trace", "requests", "watch")),
    "runner": ("python -m runner", "Plan and run speculative-decoding benchmark matrices.", ("plan", "run", "tune")),
}

AddArguments = Callable[[argparse.ArgumentParser], None]
Run = Callable[[argparse.Namespace], int]


def command_module(name: str) -> ModuleType:
    """The module that holds command ``name`` (imported now: the only place a command module is loaded)."""
    return importlib.import_module(COMMANDS[name][0])


def parsed_command(module: ModuleType, name: str) -> tuple[AddArguments, Run]:
    """``name``'s (add_arguments, run) in its module."""
    group = getattr(module, "COMMANDS", None)
    return group[name] if group is not None else (module.add_arguments, module.run)


def build_parser(prog: str = "spectune", description: str = DESCRIPTION, names: Sequence[str] = tuple(COMMANDS),
                 chosen: str | None = None) -> OneLineParser:
    """The parser over ``names``; only ``chosen`` (when given) gets its arguments, so its module alone is loaded."""
    ap = OneLineParser(prog=prog, description=description)
    if prog == "spectune":
        ap.add_argument("--version", action="version", version=f"spectune {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=OneLineParser)
    for name in names:
        help_text = COMMANDS[name][1]
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name == chosen:
            parsed_command(command_module(name), name)[0](p)
            add_common(p)
    return ap


def main(argv: Sequence[str] | None = None, *, prog: str = "spectune", description: str = DESCRIPTION,
         names: Sequence[str] = tuple(COMMANDS)) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    name = selected_command(words)
    if name not in names or words[:1] != [name]:  # --help, --version, or an unknown command (one line, did-you-mean)
        build_parser(prog, description, names).parse_args(words)
        return 2
    module = command_module(name)
    if hasattr(module, "run_words"):  # takes its words unparsed
        return module.run_words(words[1:])
    ap = build_parser(prog, description, names, chosen=name)
    args = ap.parse_args(words)
    args.argv = words  # the words as given (the answer cache keys on them)
    return run_parsed(module, parsed_command(module, name)[1], args)


def run_parsed(module: ModuleType, run: Run, args: argparse.Namespace) -> int:
    """``run(args)`` with bad input, a damaged store and an interrupt each said in one line. The settings are read
    here, once (``args.settings``, a typed ingest.settings.Settings): the command hands them down."""
    try:
        args.settings = load_settings()
        return run(args)
    except (InputError, UsageError) as exc:
        print(exc.one_line(), file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:  # before a run started (plan, matrix or workload reading), or a read
        print("error: interrupted", file=sys.stderr)
        return 128 + getattr(exc, "signum", signal.SIGINT)
    except Exception as exc:  # a DuckDB error is about the store: one line naming it (ingest/errors.py)
        failure = store_failure(exc, args.db if getattr(args, "db", None) is not None
                                else default_db_path(getattr(args, "settings", None)))
        if failure is not None:
            print(failure.one_line(), file=sys.stderr)
            return 2
        # Modules whose domain code reports bad input as ValueError (analysis) say which ones count.
        if not isinstance(exc, getattr(module, "INPUT_ERRORS", ())):
            raise
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


def alias_main(package: str, argv: Sequence[str] | None = None) -> int:
    """``python -m PACKAGE …``: :func:`main` over that package's commands."""
    prog, description, names = ALIASES[package]
    return main(argv, prog=prog, description=description, names=names)


def entry() -> int:
    """The console script (and ``python -m spectune``): a reader that left early (``spectune … | head``) is no
    error."""
    return run_quietly(main)
