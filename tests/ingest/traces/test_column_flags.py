"""``--map FIELD=COLUMN`` flags as a trace mapping (ingest/traces/column_flags.py): checked, and completed from
the file's well-known column names."""

from __future__ import annotations

import pytest

from ingest.errors import UsageError
from ingest.traces.column_flags import MAP_FIELDS, mapping_from_args


def test_no_flag_is_no_mapping():
    assert mapping_from_args([], None) is None


def test_flags_become_the_mapping():
    m = mapping_from_args(["input_tokens=in", "output_tokens = out", "timestamp=t"], "ms")
    assert (m.input_tokens, m.output_tokens, m.timestamp, m.timestamp_unit) == ("in", "out", "t", "ms")


@pytest.mark.parametrize("maps,needle", [
    (["input_tokens"], "expected FIELD=COLUMN"),
    (["colour=x"], "expected FIELD=COLUMN"),
    (["input_tokens="], "expected FIELD=COLUMN"),
    (["input_tokens=a", "input_tokens=b"], "--map input_tokens given twice"),
])
def test_bad_flags_are_usage_errors(maps, needle):
    with pytest.raises(UsageError, match=needle):
        mapping_from_args(maps, None)


def test_the_fields_are_the_mappings_columns():
    assert "input_tokens" in MAP_FIELDS and "prompt" in MAP_FIELDS and "timestamp_unit" not in MAP_FIELDS


def test_one_flag_is_completed_from_the_files_well_known_names(tmp_path):
    trace = tmp_path / "mine.csv"
    trace.write_text("timestamp,prompt_tokens,completion_tokens,model\n0,100,10,a\n1500,200,20,b\n")
    m = mapping_from_args(["shard=model"], "ms", trace)
    assert (m.input_tokens, m.output_tokens, m.timestamp, m.shard, m.timestamp_unit) == (
        "prompt_tokens", "completion_tokens", "timestamp", "model", "ms")
    bare = tmp_path / "bare.csv"
    bare.write_text("a,b\n1,2\n")
    with pytest.raises(UsageError, match="mapping needs input_tokens or prompt"):
        mapping_from_args([], "s", bare)
