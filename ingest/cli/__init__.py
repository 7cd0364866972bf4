"""What the spectune command lines share (``parser``: the one-line-error parser and the subcommand registry) and
the ingest subcommands that own a module (``trace``). The parser names are re-exported so ``from ingest.cli import
OneLineParser`` keeps working."""

from ingest.cli.parser import Command, OneLineParser, build_parser

__all__ = ["Command", "OneLineParser", "build_parser"]
