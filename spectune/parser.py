"""The one-line-error argument parser every spectune command uses, and the ``--db``/``--json`` every subcommand has.

Bad usage prints one line ``error: ...`` (with a "did you mean" for a misspelled flag or command) and exits 2.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ingest.errors import did_you_mean

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


def add_common(p: argparse.ArgumentParser) -> None:
    """``--db`` and ``--json``, unless the command declared its own."""
    if not any(a.dest == "db" for a in p._actions):
        p.add_argument("--db", type=Path, default=None, help="store (default data/spectune.duckdb; $SPECTUNE_DB)")
    if not any(a.dest == "json" for a in p._actions):
        p.add_argument("--json", action="store_true", help="print one JSON document")


def world_number(text: str) -> int:
    """``--world N`` (run, tune): a whole number ≥ 0 (argparse turns the ValueError into a one-line usage error)."""
    value = int(text)
    if value < 0:
        raise ValueError(text)
    return value
