"""Bad-input errors: the one exception every reader raises, printed as one line.

Every reader (traces, result files, matrix files) raises :class:`InputError` naming the file, the line
(1-based; 0 when the problem is the file as a whole) and what was expected. CLIs print
``error: <file>:<line>: <what was expected>`` on stderr and exit 2; nothing is written.
"""

from __future__ import annotations

from pathlib import Path


def _printable(text: str) -> str:
    """A file name as one safe line: newlines, NUL, bidi overrides and other unprintables become escapes."""
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in text)


class InputError(Exception):
    """Input that cannot be accepted; carries where and why, never a traceback for the user."""

    def __init__(self, path: str | Path | None, line: int, message: str) -> None:
        self.path = _printable(str(path)) if path is not None else "<input>"
        self.line = int(line)
        self.message = " ".join(str(message).split())  # always one line
        super().__init__(self.one_line())

    def one_line(self) -> str:
        return f"error: {self.path}:{self.line}: {self.message}"


class UsageError(Exception):
    """Bad command-line usage or arguments (exit 2, one line ``error: ...``)."""

    def one_line(self) -> str:
        return "error: " + " ".join(str(self).split())
