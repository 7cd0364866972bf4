"""Opening a trace for its reader: the trace's rules for the shared file checks, and the pre-scanned :class:`Source`.

Owns what a trace asks of :mod:`ingest.filechecks` (the one module of size caps, magic bytes, compression,
encoding and hashing that results share). Before any parser sees a file, :func:`open_source` streams it once
(1 MiB at a time, never whole) and computes its sha256 while checking, for text files: no NUL bytes, valid
UTF-8 (a UTF-8 BOM is fine), no line longer than ``Limits.max_line_bytes``, and LF or CRLF line ends. A JSON
*document* (a ShareGPT list, ``[`` first) is exempt from the line cap, as ``Limits`` says: it may well be
written on one line (``json.dump`` without ``indent``), and the ShareGPT reader bounds it by document and
conversation size instead; any other reader still refuses the over-long line (:meth:`Source.check_line_cap`).
Git LFS pointer files and saved HTML pages are named as such. Binary formats are recognised by their magic
bytes: Parquet goes to the Parquet reader, ``.gz`` is inflated into a temporary file under a decompressed-size
cap (zip-bomb guard), and zip, other archives, images, PDFs, UTF-16/32 text and other binaries are refused
with a one-line reason.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ingest.errors import InputError
from ingest.filechecks import (
    CHUNK,
    GZIP_MAGIC,
    HASH_BLOCK,
    HEAD_BYTES,
    PARQUET_MAGIC,
    TextRules,
    head_bytes,
    inflate_gzip,
    refusal,
    regular_file_size,
    scan_text,
    sha256_file,
)
from ingest.tempfiles import make_temp_dir
from ingest.traces.limits import Limits

__all__ = ["CHUNK", "GZIP_MAGIC", "HASH_BLOCK", "HEAD_BYTES", "PARQUET_MAGIC", "Source", "open_source",
           "text_rules"]


@dataclass(frozen=True, slots=True)
class Source:
    """A pre-scanned input file, ready for a reader."""

    path: Path  # as the user gave it: used in every error message
    data_path: Path  # the bytes readers parse (an inflated temporary copy for .gz)
    sha256: str
    size: int  # bytes of data_path
    head: bytes  # first bytes of data_path
    is_parquet: bool
    has_quote: bool  # any '"' in the text (CSV line numbers then need a slow exact count)
    suffix: str  # lower-case extension, ".gz" removed
    long_line: InputError | None = None  # the first over-long line of a JSON document (not raised yet)
    blank_lines: int = 0  # estimate (≥ half the true count): readers that pay per blank line drop them first

    def fail(self, line: int, message: str) -> InputError:
        return InputError(self.path, line, message)

    def check_line_cap(self) -> None:
        """Raise the deferred over-long-line error: every reader but ShareGPT's needs bounded lines."""
        if self.long_line is not None:
            raise self.long_line


def text_rules(limits: Limits, json_document: bool) -> TextRules:
    """The text checks of a trace: every line bounded (a JSON document's over-long line only noted), LF or CRLF
    line ends, no UTF-16 without a BOM, and the quote and blank-line hints the CSV readers use."""
    return TextRules(nul="NUL byte (binary data?); expected UTF-8 text", bad_utf8="invalid UTF-8; expected UTF-8 text",
                     truncated_utf8="file ends inside a UTF-8 character",
                     empty="file is empty (only whitespace); expected a trace", max_line=limits.max_line_bytes,
                     defer_long_lines=json_document, utf16_sniff=True, bare_cr=True, line_stats=True)


def _is_json_document(head: bytes) -> bool:
    """A JSON list document (ShareGPT) rather than line-oriented text."""
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[")


@contextmanager
def open_source(path: str | Path, limits: Limits, want_parquet: bool | None = None) -> Iterator[Source]:
    """Pre-scan ``path``; ``want_parquet`` True/False forces that kind (None: decide by magic bytes)."""
    path = Path(path)
    size = regular_file_size(path, limits.max_file_bytes,
                             over="more than the {limit:,}-byte limit" + limits.file_cap_hint.replace("{", "{{"))
    if size == 0:
        raise InputError(path, 0, "file is empty; expected a trace")
    head = head_bytes(path)
    name = path.name.lower()
    tmp: Path | None = None
    try:
        data_path, suffix = path, path.suffix.lower()
        if head.startswith(GZIP_MAGIC):
            tmp = make_temp_dir("trace")  # named for its process: a later start removes it after a SIGKILL
            data_path = tmp / "inflated"
            inflate_gzip(path, data_path, limits.max_decompressed_bytes)
            suffix = Path(name[:-3]).suffix if name.endswith(".gz") else ""
            head = head_bytes(data_path)
            if not head:
                raise InputError(path, 0, "gzip file is empty inside; expected a trace")
        is_parquet = head.startswith(PARQUET_MAGIC)
        if not is_parquet and (what := refusal(head)) is not None:
            raise InputError(path, 0, f"file is {what}; expected a CSV, JSONL, JSON or Parquet trace")
        if want_parquet and not is_parquet:
            raise InputError(path, 0, "not a Parquet file (no PAR1 magic bytes); expected a Parquet trace")
        if want_parquet is False and is_parquet:
            raise InputError(path, 0, "this is a Parquet file; read it with format parquet (or auto)")
        has_quote, sha, long_line, blank_lines = False, None, None, 0
        if not is_parquet:
            check, sha = scan_text(path, text_rules(limits, _is_json_document(head)), data_path)
            has_quote, long_line, blank_lines = check.has_quote, check.long_line, check.blank_lines
        yield Source(
            path=path,
            data_path=data_path,
            sha256=sha or sha256_file(path),
            size=data_path.stat().st_size,
            head=head,
            is_parquet=is_parquet,
            has_quote=has_quote,
            suffix=suffix,
            long_line=long_line,
            blank_lines=blank_lines,
        )
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
