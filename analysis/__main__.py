"""``python -m analysis`` — an alias of ``spectune`` for the analysis commands (spectune/cli.py ALIASES): the same
parsers, JSON and exit codes; the commands live in spectune/commands/. It runs spectune/alias.py
without importing spectune (ingest/alias.py), so the arrows stay pointing down."""

from __future__ import annotations

from collections.abc import Sequence

from ingest.alias import run_alias
from ingest.pipes import run_quietly


def main(argv: Sequence[str] | None = None) -> int:
    return run_alias("analysis", argv)


if __name__ == "__main__":
    raise SystemExit(run_quietly(main))
