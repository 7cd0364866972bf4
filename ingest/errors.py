"""Bad-input errors: the one exception every reader raises, printed as one line.

A DuckDB error that escapes a command is about the store (a damaged block found mid-query, a commit that could
not be flushed): :func:`store_failure` turns it into the same one line, naming the store, for every CLI.

Every reader (traces, result files, matrix files) raises :class:`InputError` naming the file, the line
(1-based; 0 when the problem is the file as a whole) and what was expected. CLIs print
``error: <file>:<line>: <what was expected>`` on stderr and exit 2; nothing is written.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
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


def store_failure(exc: BaseException, db: str | Path) -> UsageError | None:
    """A DuckDB error escaping a command as ``error: <store>: the store cannot be used: <DuckDB's reason>`` (exit
    2); None for any other exception. Told apart by module name, so this module never imports DuckDB."""
    if type(exc).__module__.split(".")[0] not in ("duckdb", "_duckdb"):
        return None
    reason = " ".join(str(exc).split())
    for prefix in ("FATAL Error: ", "IO Error: ", "Serialization Error: ", "INTERNAL Error: "):
        reason = reason.removeprefix(prefix)
    reason = reason.replace(f' "{db}"', "")  # the path is said once, first
    if any(full in reason for full in ("No space left on device", "Disk quota exceeded", "File too large")):
        # DuckDB rolls the failed transaction back: the store keeps what it had before it (tests/reliability/
        # test_disk_full.py reads it back); a run's own row may have landed first (docs/reliability.md §5d)
        return UsageError(f"{_printable(str(db))}: no room to write the store (disk full, quota or file-size "
                          f"limit); this write was rolled back; free some space or use another --db "
                          f"({reason[:200]})")
    return UsageError(f"{_printable(str(db))}: the store cannot be used (damaged or not spectune's?): {reason[:300]}")


def did_you_mean(word: str, options: Sequence[str]) -> str:
    """``; did you mean 'x'?`` for the closest of ``options`` (case-insensitive), else ''."""
    lowered = {o.lower(): o for o in options}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return f"; did you mean {lowered[close[0]]!r}?" if close else ""
