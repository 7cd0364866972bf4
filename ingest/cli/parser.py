"""What every spectune command line shares: the one-line-error parser and the subcommand registry.

A CLI is a dict ``name → (add_arguments, run, help)``; :func:`build_parser` turns it into argparse
subcommands, each with ``--db`` and ``--json`` unless it declares its own. Bad usage prints one line
``error: ...`` and exits 2 (argparse would print the whole usage too).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

Command = tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)


def build_parser(prog: str, description: str, commands: dict[str, Command]) -> argparse.ArgumentParser:
    ap = OneLineParser(prog=prog, description=description)
    sub = ap.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for name, (add_args, _run, help_text) in commands.items():
        p = sub.add_parser(name, help=help_text)
        add_args(p)
        if not any(a.dest == "db" for a in p._actions):
            p.add_argument("--db", type=Path, default=None, help="store (default data/spectune.duckdb; $SPECTUNE_DB)")
        if not any(a.dest == "json" for a in p._actions):
            p.add_argument("--json", action="store_true", help="print one JSON document")
    return ap
