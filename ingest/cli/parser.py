"""What every spectune command line shares: the one-line-error parser and the subcommand registry.

A CLI is a dict ``name → command``: either ``(add_arguments, run, help)`` or a :class:`LazyCommand` naming the
module that holds ``add_args`` and ``run``. :func:`build_parser` turns it into argparse subcommands, each with
``--db`` and ``--json`` unless it declares its own; a lazy command's module is imported only when that command
is the one being run (``--help`` and other commands never pay for it). Bad usage prints one line
``error: ...`` (with a "did you mean" for a misspelled flag or command) and exits 2.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Command = tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int], str]


@dataclass(frozen=True)
class LazyCommand:
    """A subcommand whose ``add_args(parser)`` and ``run(args)`` live in ``module``, imported on first use.
    ``names`` picks other attribute names, for a module that holds several subcommands."""

    module: str
    help: str
    names: tuple[str, str] = ("add_args", "run")

    def load(self) -> Command:
        mod = importlib.import_module(self.module)
        return getattr(mod, self.names[0]), getattr(mod, self.names[1]), self.help


AnyCommand = Command | LazyCommand


def resolve(command: AnyCommand) -> Command:
    return command.load() if isinstance(command, LazyCommand) else command


def did_you_mean(word: str, options: Sequence[str]) -> str:
    """``; did you mean 'x'?`` for the closest of ``options`` (case-insensitive), else ''."""
    lowered = {o.lower(): o for o in options}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return f"; did you mean {lowered[close[0]]!r}?" if close else ""


_INVALID_CHOICE = re.compile(r"invalid choice: '([^']*)' \(choose from (.*)\)$")


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str) -> None:
        m = _INVALID_CHOICE.search(message)
        if m:
            message += did_you_mean(m.group(1), re.findall(r"'([^']*)'", m.group(2)))
        print(f"error: {message}", file=sys.stderr)
        raise SystemExit(2)

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> argparse.Namespace:
        ns, extras = self.parse_known_args(args, namespace)
        if extras:
            flags = self._option_strings(ns)
            hints = [did_you_mean(x.split("=", 1)[0], flags) for x in extras if x.startswith("-")]
            hint = next((h for h in hints if h), "")
            self.error(f"unrecognized arguments: {' '.join(extras)}{hint}")
        return ns

    def _option_strings(self, ns: argparse.Namespace) -> list[str]:
        """Flags of this parser and of the subcommand that was chosen (where a misspelled flag belongs)."""
        flags = [s for a in self._actions for s in a.option_strings]
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(ns, action.dest, None) or "")
                if chosen is not None:
                    flags += [s for a in chosen._actions for s in a.option_strings]
        return [f for f in flags if f.startswith("--")]


def selected_command(argv: Sequence[str] | None) -> str:
    """The subcommand named on the command line (its first non-flag word), '' when none is."""
    words = sys.argv[1:] if argv is None else argv
    return next((w for w in words if not w.startswith("-")), "")


def build_parser(prog: str, description: str, commands: dict[str, AnyCommand],
                 argv: Sequence[str] | None = None, *, only_selected: bool = False) -> argparse.ArgumentParser:
    """The parser for ``commands``.

    With ``only_selected`` (what ``main`` uses), only the subcommand ``argv`` names gets its arguments (and its
    module imported): ``--help`` and every other command cost nothing. Without it the parser is complete.
    """
    chosen = selected_command(argv) if only_selected else None
    ap = OneLineParser(prog=prog, description=description)
    sub = ap.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for name, command in commands.items():
        help_text = command.help if isinstance(command, LazyCommand) else command[2]
        p = sub.add_parser(name, help=help_text, description=help_text)
        if chosen is not None and name != chosen:
            continue
        resolve(command)[0](p)
        if not any(a.dest == "db" for a in p._actions):
            p.add_argument("--db", type=Path, default=None, help="store (default data/spectune.duckdb; $SPECTUNE_DB)")
        if not any(a.dest == "json" for a in p._actions):
            p.add_argument("--json", action="store_true", help="print one JSON document")
    return ap

