"""Blank-line padding in a CSV trace: read from a compacted copy, requests and error lines unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.errors import InputError
from ingest.traces import read_trace
from ingest.traces.blanklines import COMPACT_ABOVE, compact_csv

HEADER = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def test_many_blank_lines_keep_requests_and_report_the_bad_line_where_it_is(tmp_path: Path) -> None:
    path = tmp_path / "pad.csv"
    pad = "\n" * (2 * COMPACT_ABOVE) + "   \n" * 1000 + "\t\r\n" * 10
    path.write_text(HEADER + "2024-05-10 00:00:00.000,10,20\n" + pad + "2024-05-10 00:00:01.000,11,21\n")
    tf = read_trace(path)
    assert tf.frame.height == 2 and tf.frame["input_tokens"].to_list() == [10, 11]
    bad_line = 3 + len(pad.splitlines())  # header, first row, the padding, then the bad row
    path.write_text(HEADER + "2024-05-10 00:00:00.000,10,20\n" + pad + "2024-05-10 00:00:01.000,1x1,21\n")
    with pytest.raises(InputError) as exc:
        read_trace(path)
    assert exc.value.line == bad_line, exc.value.one_line()


def test_quoted_fields_keep_their_blank_lines(tmp_path: Path) -> None:
    src, out = tmp_path / "q.csv", tmp_path / "out.csv"
    src.write_bytes(b'a,b\n\n\n"x\n\n y",1\n\n  \n"z",2\n')
    compact_csv(src, out, has_quote=True)
    assert out.read_bytes() == b'a,b\n"x\n\n y",1\n"z",2\n'
    plain = tmp_path / "p.csv"
    plain.write_bytes(b"a,b\n\n \n1,2\n\r\n3,4")
    compact_csv(plain, out, has_quote=False)
    assert out.read_bytes() == b"a,b\n1,2\n3,4"
