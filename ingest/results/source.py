"""Reading an imported result file safely: size cap, binary and encoding checks, hashing, JSON with line numbers.

Every failure is an ``InputError`` naming the file and the 1-based line (0 = the file as a whole), so the
CLI can print one line and exit 2. JSON may be one document, JSON Lines, or documents concatenated with
newlines (``vllm bench serve --append-result``); each document keeps the line it starts on so later
checks can point at it. ``NaN``/``Infinity`` literals (which Python's ``json.dump`` writes for empty
statistics) are accepted and treated as missing by the readers.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ingest import caps
from ingest.caps import IMPORT_CAP
from ingest.errors import InputError
from ingest.filecheck import regular_file_size

MAX_BYTES = IMPORT_CAP.default  # 1 GiB by default: a detailed `vllm bench serve` file of 100k requests is ~0.5 GB
MAX_DEPTH_ERROR = "nesting too deep"
_SPACE = re.compile(r"[ \t\r\n]*")


@dataclass(frozen=True, slots=True)
class Doc:
    line: int  # line the document starts on
    offset: int  # character offset of its first character
    value: Any


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def line_at(text: str, offset: int) -> int:
    return text.count("\n", 0, max(0, offset)) + 1


def check_size(path: Path, limit: int | None = None) -> int:
    """The file's size, refused over ``limit`` (None: the import cap setting, ingest.caps, named in the error)."""
    if limit is None:
        return regular_file_size(path, caps.limit(IMPORT_CAP), over=caps.over_message(IMPORT_CAP))
    return regular_file_size(path, limit, over="over the {limit}-byte import limit")


def read_text(path: Path, limit: int | None = None) -> str:
    """The file as text: UTF-8 (BOM stripped), no NUL bytes, not empty."""
    check_size(path, limit)
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b":
        raise InputError(path, 0, "gzip-compressed file; decompress it first (expected JSON, JSONL or CSV text)")
    if data[:4] == b"PK\x03\x04":
        raise InputError(path, 0, "zip archive; extract it first (expected JSON, JSONL or CSV text)")
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise InputError(path, 1, "UTF-16 text; expected UTF-8")
    nul = data.find(b"\x00")
    if nul >= 0:
        raise InputError(path, data.count(b"\n", 0, nul) + 1, "binary data (NUL byte); expected UTF-8 text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(path, data.count(b"\n", 0, exc.start) + 1,
                         f"invalid UTF-8 (byte 0x{data[exc.start]:02x}); expected UTF-8 text") from None
    if not text.strip():
        raise InputError(path, 0, "empty file")
    return text


def json_docs(text: str, path: Path) -> list[Doc]:
    """All JSON values in ``text`` (one, JSON Lines, or concatenated), each with its starting line."""
    decoder = json.JSONDecoder()
    docs: list[Doc] = []
    pos, n = 0, len(text)
    while True:
        pos = _SPACE.match(text, pos).end()  # type: ignore[union-attr]  # (always matches; C speed on padding)
        if pos >= n:
            break
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            raise InputError(path, line_at(text, exc.pos), f"invalid JSON: {exc.msg}") from None
        except RecursionError:
            raise InputError(path, line_at(text, pos), f"invalid JSON: {MAX_DEPTH_ERROR}") from None
        docs.append(Doc(line_at(text, pos), pos, value))
        pos = end
    return docs


def key_line(text: str, doc: Doc, key: str) -> int:
    """The line of ``"key"`` inside ``doc`` (the document's own line when not found)."""
    at = text.find(json.dumps(key), doc.offset)
    return line_at(text, at) if at >= 0 else doc.line


def finite(x: Any) -> float | None:
    """A JSON number as float; None for null/NaN/inf/non-numbers (bool is not a number here)."""
    if isinstance(x, bool) or not isinstance(x, int | float):
        return None
    f = float(x)
    return f if math.isfinite(f) else None
