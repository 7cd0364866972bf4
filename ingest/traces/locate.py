"""Mapping a bad record back to its physical line, and explaining CSV structure errors.

The fast readers (polars, DuckDB) report *which record* is bad, not which line it is on. These
functions re-walk the file only on the error path, so they may be slow (pure Python) without
slowing down good files. CSV records are counted the way polars counts them (a blank line is a
record; quoted fields may span lines); JSONL records skip blank lines, as DuckDB does.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ingest.errors import InputError
from ingest.traces.source import Source

Locator = Callable[[int], int]


def _csv_record_start(path: Path, header_line: int, record: int) -> int:
    """1-based line where data record ``record`` (0-based) starts, honouring quoted newlines."""
    in_quote = False
    seen = -1  # records started so far (minus one)
    with path.open(encoding="utf-8-sig", newline="") as fh:
        for lineno, line in enumerate(fh, 1):
            if lineno <= header_line:
                continue
            if not in_quote:
                seen += 1
                if seen == record:
                    return lineno
            # A line toggles the quoted state once per unescaped quote ("" counts twice: no change).
            if line.count('"') % 2 == 1:
                in_quote = not in_quote
    return 0


def csv_locator(src: Source, header_line: int) -> Locator:
    if not src.has_quote:  # no quotes: one record per line, so arithmetic is exact
        return lambda record: header_line + 1 + record
    return lambda record: _csv_record_start(src.data_path, header_line, record)


def jsonl_locator(src: Source) -> Locator:
    def locate(record: int) -> int:
        seen = -1
        with src.data_path.open("rb") as fh:
            for lineno, line in enumerate(fh, 1):
                if line.strip():
                    seen += 1
                    if seen == record:
                        return lineno
        return 0

    return locate


def diagnose_csv(src: Source, header_line: int, n_fields: int) -> InputError | None:
    """The first structural CSV problem after the header (bad quoting, too many fields), if any."""
    start, in_q, after_q, fields, rec_line = True, False, False, 1, header_line + 1

    def end_record() -> InputError | None:
        if fields > n_fields:
            return src.fail(rec_line, f"expected at most {n_fields} fields (as in the header), found {fields}")
        return None

    with src.data_path.open(encoding="utf-8-sig", newline="") as fh:
        for lineno, line in enumerate(fh, 1):
            if lineno <= header_line:
                continue
            if not in_q:
                rec_line, fields, start, after_q = lineno, 1, True, False
                if '"' not in line:  # fast path: plain line
                    fields = line.count(",") + 1
                    if (err := end_record()) is not None and line.strip():
                        return err
                    continue
            for ch in line:
                if in_q:
                    if ch == '"':
                        in_q, after_q = False, True
                    continue
                if after_q:
                    after_q = False
                    if ch == '"':  # "" inside a quoted field: an escaped quote
                        in_q = True
                        continue
                    if ch not in ",\r\n":
                        return src.fail(rec_line, "unexpected character after a closing quote")
                if ch == ",":
                    fields, start = fields + 1, True
                elif ch in "\r\n":
                    break
                elif ch == '"':
                    if not start:
                        return src.fail(rec_line, "unexpected quote inside an unquoted field")
                    in_q = True
                    start = False
                else:
                    start = False
            if not in_q and (err := end_record()) is not None:
                return err
    if in_q:
        return src.fail(rec_line, "unterminated quoted field (a quote is never closed)")
    return None
