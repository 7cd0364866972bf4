"""Opening an uploaded trace safely: size caps, magic bytes, gzip, and one streamed pre-scan.

Before any parser sees a file, :func:`open_source` streams it once (1 MiB at a time, never whole)
and computes its sha256 while checking, for text files: no NUL bytes, valid UTF-8 (a UTF-8 BOM is
fine), no line longer than ``Limits.max_line_bytes``, and LF or CRLF line ends. A JSON *document*
(a ShareGPT list, ``[`` first) is exempt from the line cap, as ``Limits`` says: it may well be written
on one line (``json.dump`` without ``indent``), and the ShareGPT reader bounds it by document and
conversation size instead; any other reader still refuses the over-long line
(:meth:`Source.check_line_cap`). Git LFS pointer files (a repository cloned without ``git lfs``) and
saved HTML pages are named as such. Binary formats are
recognised by their magic bytes: Parquet goes to the Parquet reader, ``.gz`` is inflated into a
temporary file under a decompressed-size cap (zip-bomb guard), and zip, other archives, images,
PDFs, UTF-16/32 text and other binaries are refused with a one-line reason.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import re
import shutil
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ingest.errors import InputError
from ingest.filechecks import regular_file_size
from ingest.tempfiles import make_temp_dir
from ingest.traces.limits import Limits

HEAD_BYTES = 64 * 1024
CHUNK = 1024 * 1024
HASH_BLOCK = 8 * 1024 * 1024
PARQUET_MAGIC = b"PAR1"
GZIP_MAGIC = b"\x1f\x8b"
LFS_POINTER = b"version https://git-lfs.github.com/spec/"
# Signature -> what the file is. Checked on the first bytes; a match is refused (except gzip/Parquet).
REFUSED_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"PK\x03\x04", "a zip archive (or .xlsx/.docx); extract the trace and upload the CSV/JSONL/Parquet file"),
    (b"PK\x05\x06", "an empty zip archive"),
    (b"BZh", "bzip2-compressed; decompress it first (only .gz is read directly)"),
    (b"\xfd7zXZ\x00", "xz-compressed; decompress it first (only .gz is read directly)"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed; decompress it first (only .gz is read directly)"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-zip archive; extract the trace first"),
    (b"Rar!\x1a\x07", "a RAR archive; extract the trace first"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "an old Office (.xls) document; export it as CSV"),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF8", "a GIF image"),
    (b"\x7fELF", "an executable"),
    (b"SQLite format 3\x00", "an SQLite database"),
    (b"\x00\x00\xfe\xff", "UTF-32 text; save it as UTF-8"),
    (b"\xff\xfe\x00\x00", "UTF-32 text; save it as UTF-8"),
    (b"\xff\xfe", "UTF-16 text; save it as UTF-8"),
    (b"\xfe\xff", "UTF-16 text; save it as UTF-8"),
)


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


class _TextCheck:
    """Streaming checks on text bytes; raises InputError naming the first bad line."""

    def __init__(self, path: Path, limits: Limits, defer_long_lines: bool = False) -> None:
        self.path, self.max_line = path, limits.max_line_bytes
        self.defer_long_lines = defer_long_lines  # a JSON document: note the first long line, go on
        self.long_line: InputError | None = None
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.lines_done = 0  # complete lines seen so far
        self.since_nl = 0  # bytes since the last newline
        self.has_quote = self.has_lf = self.has_cr = self.nonblank = False
        self.blank_lines = 0
        self.first = True

    def feed(self, chunk: bytes) -> None:
        if self.first:
            self.first = False
            head = chunk[:64]
            odd, even = head[1::2].count(0), head[0::2].count(0)
            # UTF-16 without a BOM: ASCII text has a NUL in every other byte, all on one side.
            if (odd and not even and odd >= len(head) // 4) or (even and not odd and even >= len(head) // 4):
                raise InputError(self.path, 1, "looks like UTF-16 text (a NUL every other byte); save it as UTF-8")
        nul = chunk.find(b"\x00")
        if nul >= 0:
            raise InputError(
                self.path, self._line_at(chunk, nul), "NUL byte (binary data?); expected UTF-8 text"
            )
        pending = len(self.decoder.getstate()[0])
        try:
            if pending or not chunk.isascii():  # ASCII is valid UTF-8 and ends no character half-way
                self.decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            at = max(0, exc.start - pending)
            raise InputError(self.path, self._line_at(chunk, at), "invalid UTF-8; expected UTF-8 text") from None
        # bytes.count of "\n" and of two-byte patterns starting with it is slow where every line has one (~0.2 s
        # per pattern per 350 MB): numpy finds the newlines once, and the pattern counts run only on a chunk
        # that holds a newline followed by one of their second bytes (rare: a blank or indented line).
        a = np.frombuffer(chunk, dtype=np.uint8)
        nl = a == 10
        newlines = int(np.count_nonzero(nl))
        self._check_lines(chunk, newlines)
        self.has_quote = self.has_quote or b'"' in chunk
        self.has_lf = self.has_lf or newlines > 0
        self.has_cr = self.has_cr or b"\r" in chunk
        self.nonblank = self.nonblank or bool(chunk.strip())
        if bool(np.any(nl[:-1] & (a[1:] <= 32))):  # a newline then "\n", "\r", " ", "\t" (or another control)
            # "\n\n" is counted without overlap, so a run of k blank lines counts ≥ k/2.
            self.blank_lines += (chunk.count(b"\n\n") + chunk.count(b"\n\r\n") + chunk.count(b"\n ")
                                 + chunk.count(b"\n\t"))

    def _line_at(self, chunk: bytes, offset: int) -> int:
        return self.lines_done + chunk.count(b"\n", 0, offset) + 1

    def _check_lines(self, chunk: bytes, newlines: int) -> None:
        # Chunks are never longer than the cap, so only a line spanning chunk edges can exceed it.
        first = chunk.find(b"\n")
        if first < 0:
            self.since_nl += len(chunk)
            if self.since_nl > self.max_line:
                self._long()
            return
        if self.since_nl + first > self.max_line:
            self._long()
        self.lines_done += newlines
        self.since_nl = len(chunk) - chunk.rfind(b"\n") - 1

    def _long(self) -> None:
        err = InputError(self.path, self.lines_done + 1,
                         f"line longer than {self.max_line:,} bytes; expected one record per line")
        if not self.defer_long_lines:
            raise err
        self.long_line = self.long_line or err

    def finish(self) -> None:
        try:
            self.decoder.decode(b"", final=True)
        except UnicodeDecodeError:
            raise InputError(self.path, self.lines_done + 1, "file ends inside a UTF-8 character") from None
        if not self.nonblank:
            raise InputError(self.path, 0, "file is empty (only whitespace); expected a trace")
        if self.has_cr and not self.has_lf:
            raise InputError(self.path, 1, "lines end with a bare CR (old Mac style); expected LF or CRLF")


def _refusal(head: bytes) -> str | None:
    for magic, what in REFUSED_MAGIC:
        if head.startswith(magic):
            return what
    text = head.lstrip(b"\xef\xbb\xbf \t\r\n")
    if text.startswith(LFS_POINTER):
        size = re.search(rb"^size (\d+)", text, re.MULTILINE)
        real = f" of {int(size.group(1)):,} bytes" if size else ""
        return (f"a Git LFS pointer, not the data (the real file{real} was not downloaded: the repository was "
                "cloned without Git LFS; run 'git lfs pull' in it, or download the file itself)")
    if text[:15].lower().startswith((b"<!doctype html", b"<html")):
        return "an HTML page (a web page saved instead of the raw file?); download the raw file"
    return None


def _is_json_document(head: bytes) -> bool:
    """A JSON list document (ShareGPT) rather than line-oriented text."""
    return head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[")


def _stream(path: Path, chunk: int) -> Iterator[bytes]:
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            yield block


class _BackgroundDigest:
    """sha256 of a file computed on a second thread while the caller checks the same bytes.

    hashlib and file reads release the GIL on large blocks, so the hash (~0.27 s per 350 MB) runs beside the
    text checks instead of after them (pre-scan of a 10 M-row CSV 0.53 → 0.32 s wall). The thread reads the
    file itself, in blocks of HASH_BLOCK bytes: handing it the caller's 1 MiB blocks made the two threads wait
    on each other for the GIL at every block. Memory: one block."""

    def __init__(self, path: Path) -> None:
        self._hash = hashlib.sha256()
        self._stop = threading.Event()
        self._error: OSError | None = None
        self._thread = threading.Thread(target=self._run, args=(path,), name="sha256", daemon=True)
        self._thread.start()

    def _run(self, path: Path) -> None:
        try:
            for block in _stream(path, HASH_BLOCK):
                if self._stop.is_set():
                    break
                self._hash.update(block)
        except OSError as exc:
            self._error = exc

    def hexdigest(self) -> str:
        """The digest, once the thread has read the whole file."""
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._hash.hexdigest()

    def cancel(self) -> None:
        """The checks failed: stop after the block in hand (the caller raises their error)."""
        self._stop.set()
        self._thread.join()


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    for block in _stream(path, CHUNK):
        digest.update(block)
    return digest.hexdigest()


def _inflate(path: Path, out: Path, limits: Limits) -> None:
    """gunzip ``path`` into ``out``, refusing more than ``max_decompressed_bytes`` of output."""
    written = 0
    try:
        with gzip.open(path, "rb") as src, out.open("wb") as dst:
            while block := src.read(CHUNK):
                written += len(block)
                if written > limits.max_decompressed_bytes:
                    raise InputError(
                        path, 0,
                        f"gzip inflates to more than {limits.max_decompressed_bytes:,} bytes; refusing (zip bomb?)",
                    )
                dst.write(block)
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
        raise InputError(path, 0, f"corrupt or truncated gzip data ({type(exc).__name__})") from None


@contextmanager
def open_source(path: str | Path, limits: Limits, want_parquet: bool | None = None) -> Iterator[Source]:
    """Pre-scan ``path``; ``want_parquet`` True/False forces that kind (None: decide by magic bytes)."""
    path = Path(path)
    size = regular_file_size(path, limits.max_file_bytes,
                             over="more than the {limit:,}-byte limit" + limits.file_cap_hint.replace("{", "{{"))
    if size == 0:
        raise InputError(path, 0, "file is empty; expected a trace")
    with path.open("rb") as fh:
        head = fh.read(HEAD_BYTES)
    name = path.name.lower()
    tmp: Path | None = None
    try:
        data_path, suffix = path, path.suffix.lower()
        if head.startswith(GZIP_MAGIC):
            tmp = make_temp_dir("trace")  # named for its process: a later start removes it after a SIGKILL
            data_path = tmp / "inflated"
            _inflate(path, data_path, limits)
            suffix = Path(name[:-3]).suffix if name.endswith(".gz") else ""
            with data_path.open("rb") as fh:
                head = fh.read(HEAD_BYTES)
            if not head:
                raise InputError(path, 0, "gzip file is empty inside; expected a trace")
        is_parquet = head.startswith(PARQUET_MAGIC)
        if not is_parquet and (what := _refusal(head)) is not None:
            raise InputError(path, 0, f"file is {what}; expected a CSV, JSONL, JSON or Parquet trace")
        if want_parquet and not is_parquet:
            raise InputError(path, 0, "not a Parquet file (no PAR1 magic bytes); expected a Parquet trace")
        if want_parquet is False and is_parquet:
            raise InputError(path, 0, "this is a Parquet file; read it with format parquet (or auto)")
        has_quote, sha, long_line, blank_lines = False, None, None, 0
        if not is_parquet:
            check = _TextCheck(path, limits, defer_long_lines=_is_json_document(head))
            # Hash alongside the checks when the bytes checked are the bytes given (not inflated).
            digest = _BackgroundDigest(path) if data_path == path else None
            try:
                for block in _stream(data_path, min(CHUNK, limits.max_line_bytes)):
                    check.feed(block)
                check.finish()
            except BaseException:
                if digest is not None:
                    digest.cancel()
                raise
            has_quote, sha = check.has_quote, digest.hexdigest() if digest is not None else None
            long_line, blank_lines = check.long_line, check.blank_lines
        yield Source(
            path=path,
            data_path=data_path,
            sha256=sha or _sha256(path),
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
