"""Reading chosen columns of a CSV trace lazily with polars, as text, with exact error lines.

The header is parsed here (not by polars) so that duplicate names, a missing required column or an
unknown layout are reported on the header's own line. Data are scanned with ``pl.scan_csv`` reading
only the needed columns, all as text (``infer_schema=False``): type inference would silently turn a
stray ``"12a"`` into a null, whereas reading text lets :mod:`ingest.traces.checks` name the value and
its line. Blank lines are skipped; quoted fields (with commas or newlines), a UTF-8 BOM, CRLF, spaces
around names and values, short rows and extra columns are all fine.
"""

from __future__ import annotations

import csv
import shutil
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ingest.tempfiles import make_temp_dir
from ingest.traces.blanklines import COMPACT_ABOVE, compact_csv, nonblank_record_line
from ingest.traces.locate import Locator, csv_locator, diagnose_csv
from ingest.traces.mapping import canonical
from ingest.traces.normalise import RawTable
from ingest.traces.source import Source


@dataclass(frozen=True, slots=True)
class CsvHeader:
    names: list[str]  # trimmed, BOM removed
    line: int  # 1-based line of the header

    def find(self, wanted: str) -> int | None:
        """Index of column ``wanted``: exact name first, then case/space-insensitive."""
        if wanted in self.names:
            return self.names.index(wanted)
        hits = [i for i, n in enumerate(self.names) if canonical(n) == canonical(wanted)]
        return hits[0] if len(hits) == 1 else None


def read_header(src: Source) -> CsvHeader:
    """The first non-blank line, parsed as CSV; duplicate names are an error on that line."""
    with src.data_path.open(encoding="utf-8-sig", newline="") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                try:
                    names = [n.strip().lstrip("\ufeff") for n in next(csv.reader([line]))]
                except (csv.Error, StopIteration):
                    raise src.fail(lineno, "could not parse the header row; expected comma-separated column names"
                                   ) from None
                break
        else:
            raise src.fail(0, "file is empty; expected a CSV header and data rows")
    dups = sorted(n for n, c in Counter(n for n in names if n).items() if c > 1)
    if dups:
        raise src.fail(lineno, f"duplicate column name {dups[0]!r}; expected unique column names")
    return CsvHeader(names, lineno)


def require_columns(src: Source, header: CsvHeader, wanted: dict[str, str], what: str) -> dict[str, int]:
    """field -> column index for every (field, column name) in ``wanted``, or an error on the header."""
    found: dict[str, int] = {}
    for fld, name in wanted.items():
        idx = header.find(name)
        if idx is None:
            raise src.fail(header.line, f"missing required column {name!r} for {what}; found columns "
                                        f"{', '.join(repr(n) for n in header.names[:12])}")
        found[fld] = idx
    return found


def scan_columns(src: Source, header: CsvHeader, columns: dict[str, int]) -> RawTable:
    """Read the given columns (field -> index) as text; rows are numbered from 0 in file order."""
    if src.blank_lines <= COMPACT_ABOVE:
        return _scan(src, src.data_path, header, columns, csv_locator(src, header.line))
    tmp = make_temp_dir("csv")  # polars pays ~50 bytes per blank line: read a copy without them
    try:
        compact = tmp / "compact.csv"
        compact_csv(src.data_path, compact, src.has_quote)
        return _scan(src, compact, header, columns,
                     lambda record: nonblank_record_line(src.data_path, header.line, record))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _scan(src: Source, data: Path, header: CsvHeader, columns: dict[str, int], locate: Locator) -> RawTable:
    lf = pl.scan_csv(data, infer_schema=False, has_header=True, glob=False, quote_char='"')
    picks = [pl.nth(i).alias(fld) for fld, i in columns.items()]
    if 0 not in columns.values():
        picks.append(pl.nth(0).alias("__first"))
    try:
        df = lf.select(*picks).with_row_index("_rec").with_columns(pl.col("_rec").cast(pl.Int64)).collect()
    except pl.exceptions.PolarsError as exc:
        err = diagnose_csv(src, header.line, len(header.names))
        if err is not None:
            raise err from None
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise src.fail(0, f"could not parse as CSV ({first[:120]})") from None
    fields = [c for c in df.columns if c != "_rec"]
    # Blank lines come back as rows of nulls (a whitespace-only line: spaces in the first field).
    # Test the cheap null pattern first; strip text only on the few candidate rows.
    first, rest = ("__first" if "__first" in fields else fields[0]), [c for c in fields if c != "__first"]
    candidates = df.select(pl.all_horizontal([pl.col(c).is_null() for c in rest if c != first] or [pl.lit(True)]))
    mask = candidates.to_series()
    if mask.any():
        blank = mask & df.select(pl.col(first).str.strip_chars().fill_null("") == "").to_series()
        blank = blank & df.select(pl.all_horizontal([pl.col(c).is_null() | (pl.col(c).str.strip_chars() == "")
                                                     for c in rest])).to_series()
        df = df.filter(~blank)
    # Requests are numbered without the blank lines; "_src" keeps the record number for locating.
    df = df.drop("__first", strict=False).rename({"_rec": "_src"}).with_row_index("_rec")
    df = df.with_columns(pl.col("_rec").cast(pl.Int64))
    if df.height == 0:
        raise src.fail(header.line + 1, "no data rows after the header; expected at least one request")
    return RawTable(
        frame=df,
        columns={fld: header.names[i] for fld, i in columns.items()},
        locate=locate,
        header_line=header.line,
    )
