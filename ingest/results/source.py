"""Reading an imported result file safely: the result's rules for the shared file checks, streamed JSON and lines.

Every failure is an ``InputError`` naming the file and the 1-based line (0 = the file as a whole), so the
CLI can print one line and exit 2. :func:`scan_text` checks the bytes in one streamed pass (and hashes
them) with :mod:`ingest.filechecks`, the module of file checks the trace readers share; :func:`json_docs`
then streams the JSON documents (one, JSON Lines, or documents concatenated with newlines as
``vllm bench serve --append-result`` writes them) through :mod:`ingest.results.jsonstream`,
building only what the reader's ``keep`` policy asks for; each document keeps the line it starts on so later
checks can point at it. ``NaN``/``Infinity`` literals (which Python's ``json.dump`` writes for empty
statistics) are accepted and treated as missing by the readers. No file is ever read whole.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest import caps
from ingest.caps import IMPORT_CAP
from ingest.errors import InputError
from ingest.filechecks import (
    CHUNK,
    GZIP_MAGIC,
    UTF16_BOMS,
    ZIP_MAGIC,
    TextRules,
    head_bytes,
    regular_file_size,
    sha256_file,
)
from ingest.filechecks import scan_text as scan_file_text
from ingest.results import jsonstream
from ingest.results.jsonstream import MAX_DEPTH_ERROR, Doc, Keep, keep_all

__all__ = ["MAX_BYTES", "MAX_DEPTH_ERROR", "Doc", "check_size", "finite", "json_docs", "scan_text", "sha256_file",
           "text_lines"]

MAX_BYTES = IMPORT_CAP.default  # 1 GiB by default: a detailed `vllm bench serve` file of 100k requests is ~0.5 GB
# A result file's text: a NUL anywhere wins over a UTF-8 error before it (as a whole-file read decided), blank
# is judged on the decoded text, lines are not capped (a JSON document may be one line).
TEXT_RULES = TextRules(nul="binary data (NUL byte); expected UTF-8 text",
                       bad_utf8="invalid UTF-8 (byte {byte}); expected UTF-8 text",
                       truncated_utf8="invalid UTF-8 (byte {byte}); expected UTF-8 text", empty="empty file",
                       nul_wins=True, unicode_blank=True)


def check_size(path: Path, limit: int | None = None) -> int:
    """The file's size, refused over ``limit`` (None: the import cap setting, ingest.caps, named in the error)."""
    if limit is None:
        return regular_file_size(path, caps.limit(IMPORT_CAP), over=caps.over_message(IMPORT_CAP))
    return regular_file_size(path, limit, over="over the {limit}-byte import limit")


def scan_text(path: Path, limit: int | None = None) -> str:
    """Check the file is UTF-8 text (BOM allowed), has no NUL byte and is not empty; return its sha256.

    One streamed pass (ingest.filechecks), 1 MiB at a time, with the same refusals and the same precedence as a
    whole-file read (a NUL byte anywhere wins over a UTF-8 error before it)."""
    check_size(path, limit)
    _check_magic(path, head_bytes(path, 4))
    return scan_file_text(path, TEXT_RULES, chunk=CHUNK, background_hash=False)[1]


def _check_magic(path: Path, head: bytes) -> None:
    if head.startswith(GZIP_MAGIC):
        raise InputError(path, 0, "gzip-compressed file; decompress it first (expected JSON, JSONL or CSV text)")
    if head.startswith(ZIP_MAGIC):
        raise InputError(path, 0, "zip archive; extract it first (expected JSON, JSONL or CSV text)")
    if head[:2] in UTF16_BOMS:
        raise InputError(path, 1, "UTF-16 text; expected UTF-8")


def json_docs(path: Path, keep: Keep = keep_all) -> tuple[str, list[Doc]]:
    """The file checked as text (:func:`scan_text`), then its JSON documents streamed, ``keep`` deciding which
    arrays/objects are built (:mod:`ingest.results.jsonstream`); returns (sha256, documents)."""
    digest = scan_text(path)
    return digest, jsonstream.json_docs(path, keep)


def text_lines(path: Path) -> tuple[str, Iterator[str]]:
    """The file checked as text, then its lines read lazily (BOM stripped, line ends kept as ``csv`` wants
    them); returns (sha256, lines)."""
    digest = scan_text(path)

    def lines() -> Iterator[str]:
        with open(path, encoding="utf-8-sig", newline="") as fh:
            yield from fh

    return digest, lines()


def finite(x: Any) -> float | None:
    """A JSON number as float; None for null/NaN/inf/non-numbers (bool is not a number here)."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    f = float(x)
    return f if math.isfinite(f) else None
