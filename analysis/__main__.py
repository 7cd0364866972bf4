"""``python -m analysis`` — an alias of ``spectune`` for the analysis commands (spectune/cli.py ALIASES): the same
parsers, JSON and exit codes; the commands live in spectune/commands/."""

from __future__ import annotations

from collections.abc import Sequence

from ingest.pipes import run_quietly
from spectune.cli import alias_main


def main(argv: Sequence[str] | None = None) -> int:
    return alias_main("analysis", argv)


if __name__ == "__main__":
    raise SystemExit(run_quietly(main))
