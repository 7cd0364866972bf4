"""Reading chosen keys of a JSONL trace with DuckDB, type-checked, with exact error lines.

DuckDB's JSON reader (yyjson: non-recursive, so deep nesting cannot blow the stack) scans the file
once, in parallel, keeping only the wanted keys as raw JSON; for each it reports the JSON type and
the value as text. Wrong types (``"12"`` where a number belongs, a list where an object belongs) are
reported on their line. Key names and the file path are *bound parameters*, never SQL text. When
DuckDB rejects the file (truncated or invalid JSON, duplicate keys), :func:`diagnose_jsonl` walks the
lines in Python to name the first bad one, catching ``RecursionError`` from deeply nested values.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from ingest.errors import InputError
from ingest.sql import quiet_connect
from ingest.tempfiles import make_temp_dir
from ingest.traces.limits import Limits
from ingest.traces.locate import jsonl_locator
from ingest.traces.normalise import RawTable
from ingest.traces.source import Source

NUMBER_TYPES = frozenset({"UBIGINT", "BIGINT", "DOUBLE", "HUGEINT", "UHUGEINT"})
KIND_TYPES: dict[str, frozenset[str]] = {
    "number": NUMBER_TYPES,
    "text": frozenset({"VARCHAR"}),
    "label": NUMBER_TYPES | {"VARCHAR", "BOOLEAN"},
    "list": frozenset({"ARRAY"}),
}
TYPE_WORDS = {"VARCHAR": "a string", "ARRAY": "a list", "OBJECT": "an object", "BOOLEAN": "a boolean"}
_SCALARS = "struct_pack(t := json_type(COLUMNS(*)), v := COLUMNS(*) ->> '$')"
_LISTS = (
    "struct_pack(t := json_type(COLUMNS(*)), v := COLUMNS(*) ->> '$', "
    "lt := json_type(COLUMNS(*), '$[*]'), lv := json_extract_string(COLUMNS(*), '$[*]'))"
)
_FROM = "FROM read_json($1, format = 'newline_delimited', records = true, columns = $2, maximum_object_size = $3)"


@contextmanager
def _duckdb_path(path: Path) -> Iterator[str]:
    """A path DuckDB will not treat as a glob pattern (a symlink with a plain name if needed)."""
    if not any(ch in str(path) for ch in "*?[]{}"):
        yield str(path)
        return
    tmp = make_temp_dir("trace")
    try:
        link = tmp / "trace.jsonl"
        os.symlink(path.resolve(), link)
        yield str(link)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


_LIST_HINT = " (a JSON list of conversations is ShareGPT: read it with format sharegpt, or auto)"


def _loads(line: bytes) -> Any:
    def no_dup_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            dup = next(k for k in keys if keys.count(k) > 1)
            raise ValueError(f"duplicate key {dup!r}")
        return dict(pairs)

    return json.loads(line, object_pairs_hook=no_dup_keys)


def _has_lone_surrogate(obj: Any) -> bool:
    try:
        json.dumps(obj, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_line(src: Source, lineno: int, line: bytes, *, first: bool = False) -> dict[str, Any]:
    """Parse one JSONL line into an object, or raise InputError on that line (``first``: the file's first)."""
    try:
        obj = _loads(line)
    except RecursionError:
        raise src.fail(lineno, "JSON nested too deeply; expected a flat object per line") from None
    except json.JSONDecodeError as exc:
        opened = line.strip().lstrip(b"\xef\xbb\xbf")
        if first and opened in (b"{", b"["):  # a pretty-printed JSON document, not JSON lines
            what, hint = ("an object", "") if opened == b"{" else ("a list", _LIST_HINT)
            raise src.fail(lineno, f"invalid JSON lines: the file is {what} spread over several lines (a "
                                   f"pretty-printed JSON document); expected one JSON object per line{hint}") from None
        raise src.fail(lineno, f"invalid JSON ({exc.msg}, column {exc.colno}); expected one object per line"
                       ) from None
    except ValueError as exc:
        raise src.fail(lineno, f"{exc}; expected unique keys") from None
    if b"\\u" in line and _has_lone_surrogate(obj):  # valid JSON, but DuckDB (and UTF-8) refuse it
        raise src.fail(lineno, "a \\uD800-\\uDFFF escape without its pair (a lone surrogate); expected "
                               "text that is valid Unicode")
    if not isinstance(obj, dict):
        got, hint = ("a list", _LIST_HINT if first else "") if isinstance(obj, list) else (type(obj).__name__, "")
        raise src.fail(lineno, f"expected a JSON object on each line, got {got}{hint}")
    return obj


def first_record(src: Source) -> tuple[int, dict[str, Any]]:
    """(line, object) of the first non-blank line."""
    with src.data_path.open("rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                return lineno, check_line(src, lineno, line, first=True)
    raise src.fail(0, "file is empty; expected JSON lines")


def diagnose_jsonl(src: Source, exc: Exception) -> InputError:
    seen = False
    with src.data_path.open("rb") as fh:
        for lineno, line in enumerate(fh, 1):
            if line.strip():
                check_line(src, lineno, line, first=not seen)
                seen = True
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return src.fail(0, f"could not read as JSON lines ({first[:160]})")


WANT_WORDS = {"number": "a number", "text": "text", "label": "a text label", "list": "a list of strings"}


def _type_error(want: str, got: str | None) -> str:
    return f"expected {WANT_WORDS[want]}, got {TYPE_WORDS.get(got or '', 'a number')}"


def scan_keys(src: Source, keys: dict[str, tuple[str, str]], limits: Limits) -> RawTable:
    """Read ``keys`` (field -> (JSON key, kind)); kinds: number | text | label | list (of strings)."""
    wants_list = any(kind == "list" for _, kind in keys.values())
    sql = f"SELECT {_LISTS if wants_list else _SCALARS} {_FROM}"
    columns = {key: "JSON" for key, _ in keys.values()}
    with _duckdb_path(src.data_path) as path:
        try:
            con = quiet_connect()
            try:
                table = con.sql(sql, params=[path, columns, 2 * limits.max_line_bytes]).to_arrow_table()
            finally:
                con.close()
        except (duckdb.Error, UnicodeDecodeError) as exc:  # DuckDB may cut a UTF-8 char in its message
            raise diagnose_jsonl(src, exc) from None
    df = pl.from_arrow(table)
    assert isinstance(df, pl.DataFrame)
    locate = jsonl_locator(src)
    out: dict[str, pl.Series] = {"_rec": pl.Series("_rec", range(df.height), dtype=pl.Int64)}
    for fld, (key, kind) in keys.items():
        col = df.get_column(key)
        types = col.struct.field("t")
        bad = types.is_not_null() & ~types.is_in(sorted(KIND_TYPES[kind]))
        if bad.any():
            row = int(bad.arg_true()[0])
            raise src.fail(locate(row), f"{key!r}: {_type_error(kind, types[row])}")
        if kind == "list":
            item_types = col.struct.field("lt")
            bad_item = item_types.list.eval(pl.element() != "VARCHAR").list.any().fill_null(False)
            if bad_item.any():
                row = int(bad_item.arg_true()[0])
                raise src.fail(locate(row), f"{key!r}: expected a list of strings")
            out[fld] = col.struct.field("lv").alias(fld)
        else:
            out[fld] = col.struct.field("v").alias(fld)
    if df.height == 0:
        raise src.fail(0, "no JSON records in the file; expected one object per line")
    return RawTable(frame=pl.DataFrame(list(out.values())), columns={f: k for f, (k, _) in keys.items()},
                    locate=locate)
