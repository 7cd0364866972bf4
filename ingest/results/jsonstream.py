"""Streaming JSON / JSON Lines documents for the result importers: bounded chunks, ignored values never built.

A file is parsed 1 MiB at a time by ijson's yajl2 C backend (``multiple_values``: one document, JSON Lines, or
documents concatenated as ``vllm bench serve --append-result`` writes them). Each reader passes a :data:`Keep`
policy: asked once per array/object value below a document's root with that value's path (map keys and list
indices, e.g. ``("itls",)`` or ``("choices", 0, "turns")``) and whether it is an array, it says whether the
value is built. A refused value is streamed past event by event and stands in the document as
:data:`SKIPPED_ARRAY` or :data:`SKIPPED_OBJECT`, so key presence is kept; scalars are always kept
(``--metadata`` pairs are top-level scalars). Memory is then what is kept plus one chunk, one pending token (a
single JSON string or number is buffered whole by the parser) and the parser's stack.

yajl reads strict JSON; Python's ``json.dump`` also writes ``NaN``, ``Infinity`` and ``-Infinity``. A small
byte scanner in front of the parser (string-aware, ``bytes.find`` speed) rewrites those tokens to number
literals that overflow a C double (``NaN`` → ``-7E+7777777``, ``Infinity`` → ``1E+7777777``), collapses
whitespace runs outside strings, drops the rest of an ignored long string, records where each document starts
(byte offset and 1-based line) and refuses nesting deeper than :data:`MAX_DEPTH`. Numbers are parsed as C
doubles; an overflow (those literals, ``1e400``, an integer beyond 64 bits) restarts the file in exact mode,
where numbers arrive as ``Decimal`` and are returned as ``float``/``int`` exactly as :func:`json.loads` returns
them (``1e400`` → ``inf``), the NaN literal as ``nan`` (so a file holding the literal ``-7E+7777777`` itself
reads NaN there, not -inf).

Errors: a syntax error in a file of at most :data:`EXACT_ERRORS_BYTES` is re-read by :func:`json.loads` for
the exact message and line the importers always gave; in a larger file the error is located by re-parsing
the failing document line by line (bounded memory; yajl's message).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from decimal import Decimal
from itertools import accumulate
from operator import itemgetter
from pathlib import Path
from typing import Any

import ijson

from ingest.errors import InputError

CHUNK = 1 << 20
MAX_DEPTH = 1000  # about where Python's json gives up (RecursionError); deeper is refused the same way
MAX_DEPTH_ERROR = "nesting too deep"
EXACT_ERRORS_BYTES = 16 << 20  # re-read whole for the exact message: <= ~3 x this in memory, on errors only
BACKEND = ijson.backend  # "yajl2_c" when the C extension is installed (the pinned wheel ships it)

Path_ = tuple[str | int, ...]
Keep = Callable[[Path_, bool], bool]  # (path, is_array) -> build it?


def keep_all(path: Path_, is_array: bool) -> bool:
    return True


def keep_none(path: Path_, is_array: bool) -> bool:
    return False


def keep_top(keys: frozenset[str] | set[str]) -> Keep:
    """Build the named top-level keys' arrays/objects (whole); every other top-level container is skipped."""
    return lambda path, is_array: len(path) > 1 or path[0] in keys


class _Skipped:
    __slots__ = ("kind",)

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return "[…]" if self.kind == "array" else "{…}"


SKIPPED_ARRAY = _Skipped("array")
SKIPPED_OBJECT = _Skipped("object")

_NAN_LITERAL = b"-7E+7777777"  # NaN in the parser's stream: overflows a double (exact mode tells it apart)
_INF_LITERAL = b"1E+7777777"  # overflows to inf, exactly as Python's json reads an overflowing literal
_NAN_TUPLE = Decimal(_NAN_LITERAL.decode()).as_tuple()


@dataclass(slots=True)
class Doc:
    line: int  # line the document starts on
    offset: int  # byte offset of its first character
    value: Any
    path: Path | None = None
    _key_lines: dict[str, int] = field(default_factory=dict)

    def key_line(self, key: str) -> int:
        """The line of ``"key"`` at or after this document's start (the document's own line when not found):
        found by streaming the file again, so only error paths pay for it."""
        if key not in self._key_lines:
            found = find_line(self.path, self.offset, json.dumps(key).encode()) if self.path else None
            self._key_lines[key] = found if found is not None else self.line
        return self._key_lines[key]


def find_line(path: Path, offset: int, needle: bytes) -> int | None:
    """1-based line of the first ``needle`` at or after byte ``offset`` of ``path``; streamed, bounded."""
    line, overlap = 1, b""
    with open(path, "rb") as fh:
        pos = 0
        while pos < offset:  # count lines before the document
            block = fh.read(min(CHUNK, offset - pos))
            if not block:
                return None
            line += block.count(b"\n")
            pos += len(block)
        while block := fh.read(CHUNK):
            data = overlap + block
            at = data.find(needle)
            if at >= 0:
                return line + data.count(b"\n", 0, at)
            keep = min(len(needle) - 1, len(data))
            line += data.count(b"\n", 0, len(data) - keep)
            overlap = data[len(data) - keep:] if keep else b""
    return None


BOM = b"\xef\xbb\xbf"
_BARE = re.compile(rb'[^ \t\r\n\f\v\[\]{},:"]*')  # a top-level scalar token (number, true, false, null …)
_SPACE = b" \t\r\n\f\v"  # yajl's whitespace (JSON's, plus form feed and vertical tab)
_STOPS = tuple(bytes([c]) for c in b'[]{}"NI')  # what the scanner must see outside strings
_WORDS = {0x4E: (b"NaN", _NAN_LITERAL), 0x49: (b"Infinity", _INF_LITERAL)}


def _collapse(region: bytes) -> bytes:
    """Whitespace runs outside strings as one space each (the parser then skips padding in no time); a run
    at either edge keeps one space, so tokens either side of a chunk edge never merge."""
    if len(region) < 256 or not (b"  " in region or b"\n\n" in region or b"\n " in region):
        return region
    inner = b" ".join(region.split())
    lead = b" " if region[0] in _SPACE else b""
    trail = b" " if region[-1] in _SPACE and inner else b""
    return lead + inner + trail


class _Scanner:
    """String- and bracket-aware pass over the raw bytes ahead of the parser (see the module docstring).

    Bulk bytes are only ever searched with ``bytes.find`` (memchr speed); Python code runs once per string,
    bracket and ``N``/``I`` outside strings."""

    def __init__(self, path: Path, offset: int, line: int, collapse: bool = True) -> None:
        self.path, self.collapse = path, collapse
        self.base, self.line = offset, line  # file offset of the next block; line at the carry's start
        self.carry = b""
        self.in_string = False
        self.depth = 0
        self.starts: list[tuple[int, int]] = []  # (offset, line) of each document begun

    def feed(self, block: bytes, final: bool = False, skipping: bool = False) -> bytes:
        """The bytes to give the parser for ``block`` (plus what earlier calls held back). ``skipping``: the
        parser is inside a value the reader does not keep, so the rest of a string begun in an earlier block
        is dropped (the parser then never buffers a long ignored string)."""
        continuing = self.in_string and skipping
        data = self.carry + block if self.carry else block
        base = self.base - len(self.carry)
        self.carry = b""
        n, pos, out = len(data), 0, []
        counted, line = 0, self.line
        nxt = dict.fromkeys(_STOPS, -2)  # next position of each stop byte (-2: not searched yet)
        squeeze = _collapse if self.collapse else bytes
        while pos < n:
            if self.in_string:
                q = data.find(b'"', pos)
                while q >= 0 and _escaped(data, pos, q):
                    q = data.find(b'"', q + 1)
                if q < 0:
                    cut = n if final else _safe_cut(data, pos, n)
                    if not continuing:
                        out.append(data[pos:cut])
                    self.carry, n = data[cut:], cut
                    break
                out.append(b'"' if continuing else data[pos:q + 1])
                self.in_string, pos, continuing = False, q + 1, False
                continue
            if self.depth == 0:
                rest = data[pos:]
                stripped = rest.lstrip(_SPACE)
                gap = rest[:len(rest) - len(stripped)]
                if gap:
                    out.append(b"\n" if self.collapse else gap)
                if not stripped:
                    pos = n
                    break
                pos = n - len(stripped)
                line += data.count(b"\n", counted, pos)
                counted = pos
                self.starts.append((base + pos, line))
                c = data[pos]
                if c in b"{[":
                    self.depth = 1
                elif c == 0x22:
                    self.in_string = True
                else:  # a bare top-level value: refused by every reader, but kept whole for the parser
                    end = max(_BARE.match(data, pos).end(), pos + 1)  # type: ignore[union-attr]  # (a stray
                    # ':' or '}' is one byte: the parser refuses it)
                    if end >= n and not final:
                        self.carry, n = data[pos:], pos
                        self.starts.pop()
                        break
                    word = data[pos:end]
                    out.append(_NAN_LITERAL if word == b"NaN" else _INF_LITERAL if word == b"Infinity" else word)
                    pos = end
                    continue
                out.append(data[pos:pos + 1])
                pos += 1
                continue
            i = n
            for stop, at in nxt.items():
                if at < pos and at != -1:
                    at = nxt[stop] = data.find(stop, pos)
                if 0 <= at < i:
                    i = at
            if i > pos:
                out.append(squeeze(data[pos:i]))
            if i >= n:
                pos = n
                break
            c = data[i]
            pos = i + 1
            if c in b"{[":
                self.depth += 1
                if self.depth > MAX_DEPTH:
                    raise InputError(self.path, self.starts[-1][1], f"invalid JSON: {MAX_DEPTH_ERROR}")
            elif c in b"}]":
                self.depth -= 1
            elif c == 0x22:
                self.in_string = True
            else:
                word, literal = _WORDS[c]
                if data.startswith(word, i):
                    out.append(literal)
                    pos = i + len(word)
                    continue
                if not final and n - i < len(word) and word.startswith(data[i:]):
                    self.carry, n = data[i:], i  # the word may go on in the next block
                    break
            out.append(data[i:i + 1])
        self.line = line + data.count(b"\n", counted, n)
        self.base = base + len(data)  # (the carry, held back, starts at self.base - len(self.carry))
        return b"".join(out)


def _safe_cut(data: bytes, start: int, n: int) -> int:
    """Where to end the part of a string given to the parser now: never inside an escape (``\\``, ``\\uXXXX``)
    or a UTF-8 character, so what follows (or a dropped rest) joins it cleanly."""
    cut, k = n, n - 1
    while k >= start and n - k <= 3 and data[k] & 0xC0 == 0x80:
        k -= 1
    if k >= start and data[k] >= 0xC0:
        cut = k
    p = data.rfind(b"\\", max(start, cut - 6), cut)
    while p >= 0:
        run = p
        while run > start and data[run - 1] == 0x5C:
            run -= 1
        if (p - run) % 2 == 0:  # the backslash at p opens an escape
            need = 6 if p + 1 < cut and data[p + 1] == 0x75 else 2
            if cut - p < need:
                cut = p
            break
        p = -1
    return cut


def _escaped(data: bytes, start: int, q: int) -> bool:
    """Is the quote at ``q`` escaped (an odd run of backslashes before it, not before ``start``)?"""
    k = q - 1
    while k >= start and data[k] == 0x5C:
        k -= 1
    return (q - 1 - k) % 2 == 1


_DELTA = {"start_map": 1, "start_array": 1, "end_map": -1, "end_array": -1, "map_key": 0, "number": 0, "string": 0,
          "boolean": 0, "null": 0, "integer": 0, "double": 0}
_STARTS = frozenset({"start_map", "start_array"})
_ENDS = frozenset({"end_map", "end_array"})


class _Builder:
    """Documents from parser events, building only what ``keep`` allows."""

    def __init__(self, keep: Keep) -> None:
        self.keep = keep
        self.stack: list[list[Any]] = []  # [container, pending key] per open container
        self.skip = 0  # depth inside a skipped value
        self.skip_kind: _Skipped = SKIPPED_ARRAY
        self.done: list[Any] = []  # finished document values

    def _put(self, value: Any) -> None:
        if not self.stack:
            self.done.append(value)
            return
        frame = self.stack[-1]
        container = frame[0]
        if type(container) is list:
            container.append(value)
        else:
            container[frame[1]] = value

    def feed(self, events: list[tuple[str, Any]]) -> None:
        stack, put = self.stack, self._put
        depths: list[int] | None = None  # bracket depth after each event, relative to the batch's start
        i, n = 0, len(events)
        while i < n:
            if self.skip:  # jump to the skipped value's end with C-level list operations, not event by event
                if depths is None:
                    depths = list(accumulate(map(_DELTA.__getitem__, map(itemgetter(0), events))))
                before = depths[i - 1] if i else 0
                try:
                    j = depths.index(before - self.skip, i)
                except ValueError:
                    self.skip += depths[-1] - before
                    return
                self.skip = 0
                put(self.skip_kind)
                i = j + 1
                continue
            ev, val = events[i]
            i += 1
            if ev == "number":
                if type(val) is Decimal:
                    val = float("nan") if val.as_tuple() == _NAN_TUPLE else float(val)
                put(val)
            elif ev == "map_key":
                stack[-1][1] = val
            elif ev in _STARTS:
                if stack and not self.keep(tuple(_child_path(stack)), ev == "start_array"):
                    self.skip = 1
                    self.skip_kind = SKIPPED_OBJECT if ev == "start_map" else SKIPPED_ARRAY
                    continue
                stack.append([{} if ev == "start_map" else [], None])
            elif ev in _ENDS:
                container = stack.pop()[0]
                put(container)
            else:  # string, boolean, null
                put(val)


def _child_path(stack: list[list[Any]]) -> Iterator[str | int]:
    """The path (below the document root) of a value about to be added to the innermost open container."""
    for frame in stack:
        container = frame[0]
        yield len(container) if type(container) is list else frame[1]


def iter_docs(path: Path, keep: Keep = keep_all, *, offset: int = 0, line: int = 1, exact: bool = False,
              _done: int = 0) -> Iterator[Doc]:
    """Every JSON value in ``path`` from byte ``offset`` on, as it completes (syntax errors raise
    :class:`InputError` with the file's line).

    Numbers are read as C doubles first (fast); a literal a double cannot hold — ``NaN``/``Infinity`` as
    rewritten, ``1e400``, an integer beyond 64 bits — makes the parser stop with an overflow, and the file
    is read again with exact numbers (``Decimal``, then ``float``/``int`` as :func:`json.loads` gives them),
    the documents already returned not repeated."""
    scanner = _Scanner(path, offset, line)
    builder = _Builder(keep)
    events = ijson.sendable_list()
    parser = ijson.basic_parse_coro(events, multiple_values=True, use_float=not exact)
    n_out = 0
    with open(path, "rb") as fh:
        fh.seek(offset)
        first, size = True, CHUNK
        while True:
            block = fh.read(size)
            if first and offset == 0 and block.startswith(BOM):
                block, scanner.base = block[len(BOM):], len(BOM)
            first = False
            final = not block
            data = scanner.feed(block, final=final, skipping=builder.skip > 0)
            try:
                if data:
                    parser.send(data)
                if final:
                    parser.close()
            except ijson.JSONError as exc:
                error: ijson.JSONError | None = exc
            else:
                error = None
            builder.feed(events)  # on an error: what parsed before it (so which document failed)
            del events[:]
            if error is not None and not exact and "overflow" in str(error):
                yield from iter_docs(path, keep, offset=offset, line=line, exact=True, _done=max(n_out, _done))
                return
            while n_out < len(builder.done):
                start_offset, start_line = scanner.starts[n_out]
                if n_out >= _done:
                    yield Doc(start_line, start_offset, builder.done[n_out], path)
                builder.done[n_out] = None
                n_out += 1
            if error is not None:
                failed = min(n_out, len(scanner.starts) - 1)
                raise _located(path, scanner.starts[failed] if failed >= 0 else (offset, line), error)
            if final:
                return
            # A kept string going on past this block: the parser re-reads its buffered part on every block, so
            # double the block while it lasts (linear time; the string is held whole anyway, being kept).
            size = min(size * 2, 1 << 30) if scanner.in_string and not builder.skip else CHUNK


def json_docs(path: Path, keep: Keep = keep_all) -> list[Doc]:
    """All documents of ``path`` (parsed to the end first, so a syntax error anywhere wins)."""
    return list(iter_docs(path, keep))


def first_doc(path: Path, keep: Keep = keep_all) -> Doc | None:
    """The first document only (the rest of the file is not read)."""
    return next(iter_docs(path, keep), None)


def _located(path: Path, start: tuple[int, int], exc: Exception) -> InputError:
    """The error the importers have always given (small files), else yajl's, on the line it is on."""
    if path.stat().st_size <= EXACT_ERRORS_BYTES:
        exact = _exact_error(path)
        if exact is not None:
            return exact
    start_offset, start_line = start
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return InputError(path, _error_line(path, start_offset, start_line), f"invalid JSON: {message}")


def _exact_error(path: Path) -> InputError | None:
    """``json.JSONDecoder``'s message and line for the first bad document (the importers' historical text)."""
    text = path.read_bytes().decode("utf-8-sig", errors="replace")
    decoder, pos, n = json.JSONDecoder(), 0, len(text)
    space = re.compile(r"[ \t\r\n]*")
    while True:
        pos = space.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= n:
            return None
        try:
            _, pos = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            return InputError(path, text.count("\n", 0, exc.pos) + 1, f"invalid JSON: {exc.msg}")
        except RecursionError:
            return InputError(path, text.count("\n", 0, pos) + 1, f"invalid JSON: {MAX_DEPTH_ERROR}")


_PIECE = re.compile(rb"[^\n]*\n[ \t\r\n]*|[^\n]+")  # a line and the blank run after it


def _error_line(path: Path, offset: int, line: int) -> int:
    """Re-parse from the failing document's start, a line at a time (skipping everything), to find the line
    the parser stops on."""
    scanner = _Scanner(path, offset, line, collapse=False)
    events = ijson.sendable_list()
    parser = ijson.basic_parse_coro(events, multiple_values=True)
    current = line
    try:
        with open(path, "rb") as fh:
            fh.seek(offset)
            rest = b""
            while True:
                block = fh.read(CHUNK)
                data = rest + scanner.feed(block, final=not block)
                cut = data.rfind(b"\n") + 1 if block else len(data)
                rest, data = data[cut:], data[:cut]
                for m in _PIECE.finditer(data):
                    parser.send(m.group())
                    del events[:]
                    current += m.group().count(b"\n")
                if not block:
                    if rest:
                        parser.send(rest)
                    parser.close()
                    return current
    except ijson.JSONError:
        return current
    except InputError as exc:
        return exc.line
