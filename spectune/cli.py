"""The ``spectune`` command: one entry point with a subcommand for everything the three ``python -m`` CLIs do.

``spectune plan|run`` are ``python -m runner``'s, ``winners|curve|rescore|compare`` ``python -m analysis``'s,
``results|export|trace`` ``python -m ingest``'s (``ingest`` is another name for ``results``), and
``spectune dashboard`` starts Streamlit on the app (:mod:`spectune.dashboard`). Each subcommand hands its words
to that CLI's ``main`` unchanged, so flags, JSON and exit codes are the same as with ``python -m``. Only the
chosen CLI is imported: ``--help`` and ``--version`` load nothing else.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from ingest.cli.parser import OneLineParser
from spectune import __version__

# name → (module whose main(argv) runs it, subcommand name there, one-line help)
SUBCOMMANDS: dict[str, tuple[str, str, str]] = {
    "plan": ("runner.__main__", "plan", "cells, server configs and estimated GPU-hours of a matrix"),
    "run": ("runner.__main__", "run", "run a matrix and write results to the store"),
    "winners": ("analysis.__main__", "winners", "winner (method, depth) per GPU × family × workload × load"),
    "curve": ("analysis.__main__", "curve", "acceptance and throughput by depth for one method"),
    "rescore": ("analysis.__main__", "rescore", "re-score (method, depth) on your traffic trace; the config to deploy"),
    "compare": ("analysis.__main__", "compare", "compare two runs: drift, changed winners (exit 3), shards to re-tune"),
    "results": ("ingest.__main__", "results", "import benchmark results (vLLM bench / sweep, GuideLLM, SGLang, "
                                             "Spec-Bench, Parquet exports, published CSV)"),
    "ingest": ("ingest.__main__", "results", "the same as `spectune results`"),
    "export": ("ingest.__main__", "export", "write runs as a spectune Parquet export folder"),
    "trace": ("ingest.__main__", "trace", "read a traffic trace and store it for re-scoring"),
    "watch": ("ingest.__main__", "watch", "collect production spec-decode counters (vLLM /metrics, Prometheus)"),
    "drift": ("analysis.__main__", "drift", "production acceptance vs the benchmark; exit 3 when a winner changed"),
    "ab": ("analysis.__main__", "ab", "A/B readout of two production targets serving one segment"),
    "dashboard": ("spectune.dashboard", "", "start the dashboard (Streamlit; extra flags go to `streamlit run`)"),
    "settings": ("spectune.commands.settings", "", "every setting: its variable, current value, source and help"),
}


def build_parser() -> OneLineParser:
    ap = OneLineParser(prog="spectune", description="Which speculative-decoding method, at which depth, is fastest "
                                                    "for my model, my GPU and my traffic?")
    ap.add_argument("--version", action="version", version=f"spectune {__version__}")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=OneLineParser)
    for name, (_module, _target, help_text) in SUBCOMMANDS.items():
        sub.add_parser(name, help=help_text, add_help=False)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if not words or words[0].startswith("-") or words[0] not in SUBCOMMANDS:
        build_parser().parse_args(words)  # --help, --version, or an unknown command (one line, did-you-mean)
        return 2
    import importlib

    module, target, help_text = SUBCOMMANDS[words[0]]
    rest = words[1:]
    command = importlib.import_module(module)
    if hasattr(command, "add_arguments"):  # a spectune.commands module: add_arguments(parser), run(args)
        parser = OneLineParser(prog=f"spectune {words[0]}", description=help_text)
        command.add_arguments(parser)
        return command.run(parser.parse_args(rest))
    return command.main([target, *rest] if target else rest)


def entry() -> int:
    """The console script: ``main`` with a reader that left early (``spectune … | head``) not counted an error."""
    try:
        return main()
    except BrokenPipeError:
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
