"""Reading an imported result file safely: size cap, binary and encoding checks, hashing, streamed JSON and lines.

Every failure is an ``InputError`` naming the file and the 1-based line (0 = the file as a whole), so the
CLI can print one line and exit 2. :func:`scan_text` checks the bytes in one streamed pass (and hashes
them); :func:`json_docs` then streams the JSON documents (one, JSON Lines, or documents concatenated with
newlines as ``vllm bench serve --append-result`` writes them) through :mod:`ingest.results.jsonstream`,
building only what the reader's ``keep`` policy asks for; each document keeps the line it starts on so later
checks can point at it. ``NaN``/``Infinity`` literals (which Python's ``json.dump`` writes for empty
statistics) are accepted and treated as missing by the readers. No file is ever read whole.
"""

from __future__ import annotations

import codecs
import hashlib
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ingest import caps
from ingest.caps import IMPORT_CAP
from ingest.errors import InputError
from ingest.filechecks import regular_file_size
from ingest.results import jsonstream
from ingest.results.jsonstream import MAX_DEPTH_ERROR, Doc, Keep, keep_all

__all__ = ["MAX_BYTES", "MAX_DEPTH_ERROR", "Doc", "check_size", "finite", "json_docs", "scan_text", "sha256_file",
           "text_lines"]

MAX_BYTES = IMPORT_CAP.default  # 1 GiB by default: a detailed `vllm bench serve` file of 100k requests is ~0.5 GB
CHUNK = 1 << 20


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(CHUNK), b""):
            h.update(chunk)
    return h.hexdigest()


def check_size(path: Path, limit: int | None = None) -> int:
    """The file's size, refused over ``limit`` (None: the import cap setting, ingest.caps, named in the error)."""
    if limit is None:
        return regular_file_size(path, caps.limit(IMPORT_CAP), over=caps.over_message(IMPORT_CAP))
    return regular_file_size(path, limit, over="over the {limit}-byte import limit")


def scan_text(path: Path, limit: int | None = None) -> str:
    """Check the file is UTF-8 text (BOM allowed), has no NUL byte and is not empty; return its sha256.

    One streamed pass, 1 MiB at a time, with the same refusals and the same precedence as a whole-file read
    (a NUL byte anywhere wins over a UTF-8 error before it)."""
    check_size(path, limit)
    h = hashlib.sha256()
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    lines = done = 0  # newlines and bytes before the current chunk
    bad_utf8: InputError | None = None
    nonblank = False
    with open(path, "rb") as fh:
        while chunk := fh.read(CHUNK):
            h.update(chunk)
            if not done:
                _check_magic(path, chunk)
            nul = chunk.find(b"\x00")
            if nul >= 0:
                raise InputError(path, lines + chunk.count(b"\n", 0, nul) + 1,
                                 "binary data (NUL byte); expected UTF-8 text")
            if bad_utf8 is None and chunk.isascii() and not decoder.getstate()[0]:
                nonblank = nonblank or not chunk.isspace()  # ASCII is UTF-8: no decoding needed
            elif bad_utf8 is None:
                pending = decoder.getstate()[0]
                try:
                    text = decoder.decode(chunk)
                except UnicodeDecodeError as exc:
                    data = pending + chunk
                    at = max(0, exc.start - len(pending))
                    bad_utf8 = InputError(path, lines + chunk.count(b"\n", 0, at) + 1,
                                          f"invalid UTF-8 (byte 0x{data[exc.start]:02x}); expected UTF-8 text")
                else:
                    if not done:
                        text = text.removeprefix("\ufeff")
                    nonblank = nonblank or bool(text.strip())
            lines += chunk.count(b"\n")
            done += len(chunk)
    if bad_utf8 is None:
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            bad_utf8 = InputError(path, lines + 1, f"invalid UTF-8 (byte 0x{exc.object[exc.start]:02x}); "
                                  "expected UTF-8 text")
    if bad_utf8 is not None:
        raise bad_utf8
    if not nonblank:
        raise InputError(path, 0, "empty file")
    return h.hexdigest()


def _check_magic(path: Path, head: bytes) -> None:
    if head[:2] == b"\x1f\x8b":
        raise InputError(path, 0, "gzip-compressed file; decompress it first (expected JSON, JSONL or CSV text)")
    if head[:4] == b"PK\x03\x04":
        raise InputError(path, 0, "zip archive; extract it first (expected JSON, JSONL or CSV text)")
    if head[:2] in (b"\xff\xfe", b"\xfe\xff"):
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
