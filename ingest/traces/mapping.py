"""Column mapping for generic CSV / JSONL / Parquet traces: which source column feeds which field.

A :class:`TraceMapping` names the source column (CSV header, JSON key, Parquet column) for each
normalised field; ``None`` means the file has no such column. When no mapping is given, generic
files are mapped by *well-known names* (our own schema names plus the OpenAI usage names
``prompt_tokens`` / ``completion_tokens``); a field with two candidate columns is ambiguous and is an
error rather than a guess.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, fields

TIMESTAMP_UNITS: tuple[str, ...] = ("s", "ms", "us", "datetime")
# Internal: a bare "timestamp" column whose unit is decided from its values (date-time text only).
AUTO_UNIT = "auto"
MAX_NAME_CHARS = 256


@dataclass(frozen=True, slots=True)
class TraceMapping:
    """Source column names for each normalised field (``None``: the file has no such column)."""

    input_tokens: str | None = None
    output_tokens: str | None = None
    timestamp: str | None = None
    timestamp_unit: str = "s"  # s | ms | us | datetime
    workload: str | None = None
    shard: str | None = None
    prompt: str | None = None
    drafted_tokens: str | None = None
    accepted_tokens: str | None = None

    def columns(self) -> dict[str, str]:
        """field -> source column, for the fields that are mapped."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name != "timestamp_unit" and getattr(self, f.name) is not None
        }

    def problems(self) -> list[str]:
        """What is wrong with the mapping itself (empty when it is usable)."""
        out: list[str] = []
        if self.timestamp_unit not in (*TIMESTAMP_UNITS, AUTO_UNIT):
            out.append(f"timestamp_unit must be one of {', '.join(TIMESTAMP_UNITS)}, got {self.timestamp_unit!r}")
        for fld, col in self.columns().items():
            if not isinstance(col, str) or not col.strip() or len(col) > MAX_NAME_CHARS:
                out.append(f"mapping for {fld} must be a non-empty column name of at most {MAX_NAME_CHARS} chars")
            elif any(ord(ch) < 32 for ch in col):
                out.append(f"mapping for {fld} contains control characters")
        if self.input_tokens is None and self.prompt is None:
            out.append("mapping needs input_tokens or prompt (to estimate input tokens from)")
        return out


# Well-known column names (compared after lower-casing and turning spaces/dashes into "_").
KNOWN_NAMES: dict[str, tuple[str, ...]] = {
    "input_tokens": ("input_tokens", "prompt_tokens", "input_length", "num_input_tokens", "prompt_len"),
    "output_tokens": ("output_tokens", "completion_tokens", "output_length", "num_output_tokens", "output_len"),
    "workload": ("workload",),
    "shard": ("shard", "tenant", "tenant_id", "endpoint"),
    "prompt": ("prompt", "prompt_text"),
    "drafted_tokens": ("drafted_tokens", "draft_tokens", "num_draft_tokens"),
    "accepted_tokens": ("accepted_tokens", "num_accepted_tokens"),
}
# Timestamp names carry their unit; a bare name is only accepted when its values are date-times.
KNOWN_TIMESTAMPS: dict[str, str] = {
    "timestamp_s": "s", "arrival_s": "s", "arrival_time_s": "s",
    "timestamp_ms": "ms", "arrival_ms": "ms", "arrival_time_ms": "ms",
    "timestamp_us": "us", "arrival_us": "us",
    "timestamp": AUTO_UNIT, "arrival_time": AUTO_UNIT, "created_at": AUTO_UNIT,
}


def canonical(name: str) -> str:
    """Lower-case, trimmed, spaces and dashes as underscores: how headers are compared."""
    return re.sub(r"[\s\-]+", "_", name.strip().lower())


class AmbiguousMapping(ValueError):
    """Two columns could feed the same field."""


def infer_mapping(columns: list[str]) -> TraceMapping | None:
    """Map well-known column names; ``None`` when neither input tokens nor prompt can be found.

    Raises :class:`AmbiguousMapping` when a field has more than one candidate column.
    """
    by_canon: dict[str, list[str]] = {}
    for col in columns:
        by_canon.setdefault(canonical(col), []).append(col)

    def pick(field_name: str, names: tuple[str, ...]) -> str | None:
        hits = [col for n in names for col in by_canon.get(n, [])]
        if len(hits) > 1:
            raise AmbiguousMapping(
                f"columns {', '.join(repr(h) for h in hits)} could all be {field_name}; pass a mapping"
            )
        return hits[0] if hits else None

    found = {fld: pick(fld, names) for fld, names in KNOWN_NAMES.items()}
    ts_hits = [(col, unit) for n, unit in KNOWN_TIMESTAMPS.items() for col in by_canon.get(n, [])]
    if len(ts_hits) > 1:
        raise AmbiguousMapping(
            f"columns {', '.join(repr(c) for c, _ in ts_hits)} could all be the timestamp; pass a mapping"
        )
    if found["input_tokens"] is None and found["prompt"] is None:
        return None
    ts_col, ts_unit = ts_hits[0] if ts_hits else (None, "s")
    return TraceMapping(timestamp=ts_col, timestamp_unit=ts_unit, **found)
