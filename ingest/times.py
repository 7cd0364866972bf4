"""Times a user gives (``--since``, ``--until``): ISO 8601 (UTC unless it carries an offset) or unix seconds."""

from __future__ import annotations

from datetime import UTC, datetime

from ingest.errors import UsageError


def parse_time(text: str, flag: str) -> float:
    try:
        return float(text)
    except ValueError:
        pass
    try:
        dt = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{flag} {text!r}: expected ISO 8601 (2026-12-01T10:00:00Z) or unix seconds") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()
