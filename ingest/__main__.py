"""``python -m ingest`` — an alias of ``spectune`` for the ingest commands (spectune/cli.py ALIASES): the same
parsers, JSON and exit codes; the commands live in spectune/commands/."""

from __future__ import annotations

from collections.abc import Sequence

from ingest.pipes import run_quietly
from spectune.cli import alias_main


def main(argv: Sequence[str] | None = None) -> int:
    return alias_main("ingest", argv)


if __name__ == "__main__":
    raise SystemExit(run_quietly(main))
