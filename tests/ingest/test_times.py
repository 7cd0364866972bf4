"""Times a user gives on the command line (ingest/times.py): ISO 8601 or unix seconds, UTC unless stated."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from ingest.errors import UsageError
from ingest.times import parse_time


def test_unix_seconds_and_iso_8601_with_z_or_an_offset():
    at = datetime(2026, 12, 1, 10, 0, tzinfo=UTC).timestamp()
    assert parse_time(str(at), "--since") == at
    assert parse_time("2026-12-01T10:00:00Z", "--since") == at
    assert parse_time("2026-12-01T12:00:00+02:00", "--since") == at


def test_a_time_without_an_offset_is_utc():
    assert parse_time("2026-12-01T10:00:00", "--until") == datetime(2026, 12, 1, 10, tzinfo=UTC).timestamp()


def test_anything_else_is_a_usage_error_naming_the_flag():
    with pytest.raises(UsageError, match=r"--until 'yesterday': expected ISO 8601"):
        parse_time("yesterday", "--until")
