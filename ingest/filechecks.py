"""The checks every input file passes, for every reader: what the file is, how big, which bytes, which hash.

Owns the file-level checks the trace readers (ingest.traces.source), the result readers (ingest.results.source)
and the matrix and request-log readers share, so each rule exists once:

* **what and how big** (:func:`regular_file_size`): it exists, it is a regular file, it is not over the cap
  in force. A FIFO (which would block the first read forever), a device such as ``/dev/zero`` or
  ``/dev/urandom`` (endless bytes), a folder or an over-size file is refused from ``stat`` alone, the same
  way whichever reader meets it. Links are followed: a link to a regular file is that file. The caps
  themselves are settings (ingest.caps, ingest.traces.limits); the callers pass the value in force.
* **magic bytes and compression** (:data:`REFUSED_MAGIC`, :func:`refusal`, :data:`GZIP_MAGIC`,
  :data:`PARQUET_MAGIC`, :func:`inflate_gzip`): one table of signatures (archives, other compressions,
  images, documents, UTF-16/32 text, Git LFS pointers, saved HTML pages); gzip inflated under a cap on the
  decompressed size (zip-bomb guard).
* **encoding** (:class:`TextRules`, :class:`TextScan`): one streamed pass over text, 1 MiB at a time, never
  whole — no NUL byte, valid UTF-8 (a BOM is fine), not blank, and for the readers that ask: a cap on the
  line length, LF or CRLF line ends, no UTF-16 without a BOM. Each reader states its rules and the words of
  its messages as data, so its one-line errors (``error: <file>:<line>: …``) stay its own.
* **hashing** (:func:`sha256_file`, :class:`BackgroundDigest`, :func:`scan_text`): the sha256 stored with
  every import, computed on a second thread beside the text checks.
"""

from __future__ import annotations

import codecs
import gzip
import hashlib
import re
import stat
import threading
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ingest.errors import InputError

HEAD_BYTES = 64 * 1024
CHUNK = 1024 * 1024
HASH_BLOCK = 8 * 1024 * 1024
PARQUET_MAGIC = b"PAR1"
GZIP_MAGIC = b"\x1f\x8b"
ZIP_MAGIC = b"PK\x03\x04"
UTF16_BOMS = (b"\xff\xfe", b"\xfe\xff")
LFS_POINTER = b"version https://git-lfs.github.com/spec/"
# Signature -> what the file is. Checked on the first bytes; a match is refused (except gzip/Parquet).
REFUSED_MAGIC: tuple[tuple[bytes, str], ...] = (
    (ZIP_MAGIC, "a zip archive (or .xlsx/.docx); extract the trace and upload the CSV/JSONL/Parquet file"),
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

_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))


def regular_file_size(path: Path, limit: int, over: str = "more than the {limit:,}-byte limit") -> int:
    """The size of ``path`` if it is a regular file of at most ``limit`` bytes; else an ``InputError``."""
    try:  # stat can fail on the name itself (longer than the OS allows, a loop of links): bad input
        info = path.stat()
    except FileNotFoundError:
        raise InputError(path, 0, "no such file") from None
    except OSError as exc:
        raise InputError(path, 0, f"cannot open the file ({exc.strerror or type(exc).__name__})") from None
    if not stat.S_ISREG(info.st_mode):
        what = next((name for test, name in _KINDS if test(info.st_mode)), "not a file")
        raise InputError(path, 0, f"not a regular file ({what}); expected a file")
    if info.st_size > limit:
        raise InputError(path, 0, f"file is {info.st_size:,} bytes, " + over.format(limit=limit))
    return info.st_size


def head_bytes(path: Path, n: int = HEAD_BYTES) -> bytes:
    """The first ``n`` bytes of a file (fewer when it is shorter)."""
    with path.open("rb") as fh:
        return fh.read(n)


def refusal(head: bytes) -> str | None:
    """What a file that starts with ``head`` is when no reader reads it (an archive, an image, a Git LFS
    pointer, a saved web page …); None when the signatures say nothing against it."""
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


def stream(path: Path, chunk: int = CHUNK) -> Iterator[bytes]:
    """The file's bytes, ``chunk`` at a time (never whole)."""
    with path.open("rb") as fh:
        while block := fh.read(chunk):
            yield block


def sha256_file(path: Path) -> str:
    """The sha256 of a file, streamed."""
    digest = hashlib.sha256()
    for block in stream(path, CHUNK):
        digest.update(block)
    return digest.hexdigest()


class BackgroundDigest:
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
            for block in stream(path, HASH_BLOCK):
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


def inflate_gzip(path: Path, out: Path, max_bytes: int) -> None:
    """gunzip ``path`` into ``out``, refusing more than ``max_bytes`` of output (a zip bomb)."""
    written = 0
    try:
        with gzip.open(path, "rb") as src, out.open("wb") as dst:
            while block := src.read(CHUNK):
                written += len(block)
                if written > max_bytes:
                    raise InputError(path, 0, f"gzip inflates to more than {max_bytes:,} bytes; refusing (zip bomb?)")
                dst.write(block)
    except (OSError, EOFError, zlib.error) as exc:  # BadGzipFile is an OSError
        raise InputError(path, 0, f"corrupt or truncated gzip data ({type(exc).__name__})") from None


@dataclass(frozen=True, slots=True)
class TextRules:
    """What one kind of reader refuses in text, and the words of its messages (``{byte}``: the bad byte's value).

    Readers keep the messages they always gave; only the mechanics are shared."""

    nul: str  # a NUL byte (binary data)
    bad_utf8: str  # a byte sequence that is not UTF-8
    truncated_utf8: str  # the file ends inside a character
    empty: str  # nothing but whitespace
    nul_wins: bool = False  # a NUL anywhere beats an earlier UTF-8 error (else the first problem raises at once)
    unicode_blank: bool = False  # blank is judged on the decoded text (a BOM, a no-break space are blank)
    max_line: int | None = None  # longest line in bytes (None: no cap)
    defer_long_lines: bool = False  # note the first over-long line and go on (a JSON document)
    utf16_sniff: bool = False  # refuse UTF-16 without a BOM (a NUL every other byte)
    bare_cr: bool = False  # refuse old-Mac line ends
    line_stats: bool = False  # note quotes and blank lines (hints for the CSV readers)


class TextScan:
    """Streaming checks on text bytes under :class:`TextRules`; raises InputError naming the first bad line."""

    def __init__(self, path: Path, rules: TextRules) -> None:
        self.path, self.rules = path, rules
        self.long_line: InputError | None = None  # the first over-long line when deferred
        self.bad_utf8: InputError | None = None  # kept while a later NUL may still win (nul_wins)
        self.decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self.lines_done = 0  # complete lines seen so far
        self.since_nl = 0  # bytes since the last newline
        self.has_quote = self.has_lf = self.has_cr = self.nonblank = False
        self.blank_lines = 0
        self.first = True

    def feed(self, chunk: bytes) -> None:
        rules, first = self.rules, self.first
        if first:
            self.first = False
            if rules.utf16_sniff:
                head = chunk[:64]
                odd, even = head[1::2].count(0), head[0::2].count(0)
                # UTF-16 without a BOM: ASCII text has a NUL in every other byte, all on one side.
                if (odd and not even and odd >= len(head) // 4) or (even and not odd and even >= len(head) // 4):
                    raise InputError(self.path, 1,
                                     "looks like UTF-16 text (a NUL every other byte); save it as UTF-8")
        nul = chunk.find(b"\x00")
        if nul >= 0:
            raise InputError(self.path, self._line_at(chunk, nul), rules.nul)
        if self.bad_utf8 is None:
            self._decode(chunk, first)
        if rules.line_stats or rules.max_line is not None:
            self._lines(chunk)
        else:
            self.lines_done += chunk.count(b"\n")
        if not rules.unicode_blank:
            self.nonblank = self.nonblank or bool(chunk.strip())

    def _decode(self, chunk: bytes, first: bool) -> None:
        pending = self.decoder.getstate()[0]
        if not pending and chunk.isascii():  # ASCII is valid UTF-8 and ends no character half-way
            if self.rules.unicode_blank:
                self.nonblank = self.nonblank or not chunk.isspace()
            return
        try:
            text = self.decoder.decode(chunk)
        except UnicodeDecodeError as exc:
            at = max(0, exc.start - len(pending))
            err = InputError(self.path, self._line_at(chunk, at),
                             self.rules.bad_utf8.format(byte=f"0x{(pending + chunk)[exc.start]:02x}"))
            if not self.rules.nul_wins:
                raise err from None
            self.bad_utf8 = err
            return
        if self.rules.unicode_blank and not self.nonblank:
            self.nonblank = bool((text.removeprefix("\ufeff") if first else text).strip())

    def _lines(self, chunk: bytes) -> None:
        # bytes.count of "\n" and of two-byte patterns starting with it is slow where every line has one (~0.2 s
        # per pattern per 350 MB): numpy finds the newlines once, and the pattern counts run only on a chunk
        # that holds a newline followed by one of their second bytes (rare: a blank or indented line).
        a = np.frombuffer(chunk, dtype=np.uint8)
        nl = a == 10
        newlines = int(np.count_nonzero(nl))
        if self.rules.max_line is not None:
            self._check_lines(chunk, newlines, self.rules.max_line)
        else:
            self.lines_done += newlines
        if not self.rules.line_stats:
            return
        self.has_quote = self.has_quote or b'"' in chunk
        self.has_lf = self.has_lf or newlines > 0
        self.has_cr = self.has_cr or b"\r" in chunk
        if bool(np.any(nl[:-1] & (a[1:] <= 32))):  # a newline then "\n", "\r", " ", "\t" (or another control)
            # "\n\n" is counted without overlap, so a run of k blank lines counts ≥ k/2.
            self.blank_lines += (chunk.count(b"\n\n") + chunk.count(b"\n\r\n") + chunk.count(b"\n ")
                                 + chunk.count(b"\n\t"))

    def _line_at(self, chunk: bytes, offset: int) -> int:
        return self.lines_done + chunk.count(b"\n", 0, offset) + 1

    def _check_lines(self, chunk: bytes, newlines: int, max_line: int) -> None:
        # Chunks are never longer than the cap, so only a line spanning chunk edges can exceed it.
        first = chunk.find(b"\n")
        if first < 0:
            self.since_nl += len(chunk)
            if self.since_nl > max_line:
                self._long(max_line)
            return
        if self.since_nl + first > max_line:
            self._long(max_line)
        self.lines_done += newlines
        self.since_nl = len(chunk) - chunk.rfind(b"\n") - 1

    def _long(self, max_line: int) -> None:
        err = InputError(self.path, self.lines_done + 1,
                         f"line longer than {max_line:,} bytes; expected one record per line")
        if not self.rules.defer_long_lines:
            raise err
        self.long_line = self.long_line or err

    def finish(self) -> None:
        if self.bad_utf8 is None:
            try:
                self.decoder.decode(b"", final=True)
            except UnicodeDecodeError as exc:
                raise InputError(self.path, self.lines_done + 1,
                                 self.rules.truncated_utf8.format(byte=f"0x{exc.object[exc.start]:02x}")) from None
        if self.bad_utf8 is not None:
            raise self.bad_utf8
        if not self.nonblank:
            raise InputError(self.path, 0, self.rules.empty)
        if self.rules.bare_cr and self.has_cr and not self.has_lf:
            raise InputError(self.path, 1, "lines end with a bare CR (old Mac style); expected LF or CRLF")


def scan_text(path: Path, rules: TextRules, data_path: Path | None = None, chunk: int = CHUNK, *,
              background_hash: bool = True) -> tuple[TextScan, str]:
    """Check ``data_path``'s bytes (default: ``path``'s) as text under ``rules`` in one streamed pass, and hash
    ``path``; returns (the scan, sha256). ``background_hash``: the hash runs on a second thread beside the checks
    when the bytes checked are the file's own (not an inflated copy), and stops when a check fails (faster on a
    large trace). Its HASH_BLOCK buffers add to the peak memory (the padded-result benchmark: +18 MB), so the
    result importer, whose files are mostly small, hashes the checked chunks in line instead."""
    data_path = data_path or path
    if rules.max_line is not None:  # TextScan finds a long line only across chunk edges: no chunk longer than it
        chunk = min(chunk, rules.max_line)
    check = TextScan(path, rules)
    own_bytes = data_path == path
    digest = BackgroundDigest(path) if own_bytes and background_hash else None
    inline = hashlib.sha256() if own_bytes and not background_hash else None
    try:
        for block in stream(data_path, chunk):
            if inline is not None:
                inline.update(block)
            check.feed(block)
        check.finish()
    except BaseException:
        if digest is not None:
            digest.cancel()
        raise
    if digest is not None:
        return check, digest.hexdigest()
    return check, inline.hexdigest() if inline is not None else sha256_file(path)
