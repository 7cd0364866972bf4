"""A trace's columns as named by ``--map FIELD=COLUMN`` flags: the flags turned into a :class:`TraceMapping`,
completed from the file's well-known column names. Used by ``spectune trace`` and ``spectune rescore``."""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from ingest.errors import UsageError
from ingest.trace_store import peek_columns
from ingest.traces.mapping import AmbiguousMapping, TraceMapping, infer_mapping

MAP_FIELDS = tuple(f.name for f in fields(TraceMapping) if f.name != "timestamp_unit")


def mapping_from_args(maps: list[str], unit: str | None, path: Path | None = None) -> TraceMapping | None:
    """``--map`` flags as a TraceMapping (None when no flag was given).

    Flags that name neither ``input_tokens`` nor ``prompt`` (say ``--timestamp-unit ms`` alone, or
    ``--map shard=model``) are completed from the file's well-known column names when ``path`` is
    given, as if no flag had been passed, so a user need not restate every column to fix one; an
    explicit ``--timestamp-unit`` then applies to a bare ``timestamp`` column found that way.
    """
    if not maps and unit is None:
        return None
    given: dict[str, str] = {}
    for item in maps:
        fld, sep, col = item.partition("=")
        fld = fld.strip()
        if not sep or fld not in MAP_FIELDS or not col.strip():
            raise UsageError(f"--map {item!r}: expected FIELD=COLUMN with FIELD one of {', '.join(MAP_FIELDS)}")
        if fld in given:
            raise UsageError(f"--map {fld} given twice")
        given[fld] = col.strip()
    ts_unit = unit or "s"
    if path is not None and "input_tokens" not in given and "prompt" not in given:
        given, ts_unit = _complete(path, given, unit)
    mapping = TraceMapping(timestamp_unit=ts_unit, **given)
    problems = mapping.problems()
    if problems:
        raise UsageError(f"--map: {problems[0]}")
    return mapping


def _complete(path: Path, given: dict[str, str], unit: str | None) -> tuple[dict[str, str], str]:
    """Partial ``--map`` flags plus the file's well-known columns (flags win), and the timestamp unit."""
    try:
        inferred = infer_mapping(peek_columns(path))
    except AmbiguousMapping as exc:
        raise UsageError(f"--map: {exc}") from None
    if inferred is None:  # nothing to complete from: the mapping stays partial and is refused as such
        return given, unit or "s"
    # A timestamp column found by name: an explicit unit wins, else the unit its name carries (a bare
    # "timestamp" stays AUTO_UNIT: date-times are read, plain numbers refused as unit-ambiguous).
    by_name = "timestamp" not in given and inferred.timestamp is not None
    return {**inferred.columns(), **given}, unit or (inferred.timestamp_unit if by_name else "s")
