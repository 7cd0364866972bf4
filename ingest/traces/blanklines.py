"""Dropping blank lines from a CSV before polars reads it, so memory follows the rows kept.

polars turns every blank line into a row of nulls (~40–64 bytes each, in either engine) and only then can
they be filtered: a file of one request and 60 MB of newlines peaked at 3.9 GB. When the pre-scan
(:class:`ingest.traces.source.Source`) saw many blank lines, the CSV reader streams the file once into a
temp copy without them (quoted fields that span lines keep their empty lines) and reads that; record
numbers in the copy are then "n-th non-blank record" of the original, which :func:`nonblank_record_line`
maps back to a physical line on the error path.
"""

from __future__ import annotations

from pathlib import Path

from ingest.traces.source import CHUNK

COMPACT_ABOVE = 50_000  # blank lines (as estimated by the pre-scan) that make a compacted copy worth it


def compact_csv(path: Path, out: Path, has_quote: bool) -> None:
    """Copy ``path`` to ``out`` without its blank (empty or whitespace-only) lines outside quotes."""
    with path.open("rb") as src, out.open("wb") as dst:
        if has_quote:  # a quoted field may span lines, blank ones included: walk line by line
            in_quote = False
            for line in src:
                if in_quote or line.strip():
                    dst.write(line)
                if line.count(b'"') % 2 == 1:
                    in_quote = not in_quote
            return
        rest = b""
        while block := src.read(CHUNK):
            block = rest + block
            cut = block.rfind(b"\n") + 1
            rest = block[cut:]
            kept = [line for line in block[:cut].split(b"\n") if line.strip()]
            if kept:
                dst.write(b"\n".join(kept) + b"\n")
        if rest.strip():
            dst.write(rest)


def nonblank_record_line(path: Path, header_line: int, record: int) -> int:
    """1-based line of the ``record``-th (0-based) non-blank data record after the header, or 0."""
    in_quote = False
    seen = -1
    with path.open(encoding="utf-8-sig", newline="") as fh:
        for lineno, line in enumerate(fh, 1):
            if lineno <= header_line:
                continue
            if not in_quote and line.strip():
                seen += 1
                if seen == record:
                    return lineno
            if line.count('"') % 2 == 1:
                in_quote = not in_quote
    return 0
