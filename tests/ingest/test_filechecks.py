"""The one module of file checks (ingest.filechecks) that trace and result readers share: size and kind from
stat, magic bytes, gzip under a cap, text checks under each reader's rules, and the hash beside them."""

from __future__ import annotations

import gzip
import hashlib
import os
import threading
from pathlib import Path

import pytest

from ingest.errors import InputError
from ingest.filechecks import (
    CHUNK,
    TextRules,
    inflate_gzip,
    refusal,
    regular_file_size,
    scan_text,
    sha256_file,
)
from ingest.results.source import TEXT_RULES as RESULT_RULES
from ingest.traces.limits import DEFAULT_LIMITS
from ingest.traces.source import text_rules

TRACE_RULES = text_rules(DEFAULT_LIMITS, json_document=False)


def _write(tmp_path: Path, data: bytes, name: str = "f.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_fifo_and_a_folder_are_refused_from_stat_alone(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="FIFO"):
        regular_file_size(fifo, 10)
    with pytest.raises(InputError, match="a folder"):
        regular_file_size(tmp_path, 10)
    with pytest.raises(InputError, match="no such file"):
        regular_file_size(tmp_path / "absent", 10)


def test_an_over_size_file_names_the_cap(tmp_path: Path) -> None:
    path = _write(tmp_path, b"x" * 11)
    assert regular_file_size(path, 11) == 11
    with pytest.raises(InputError, match="file is 11 bytes, more than the 10-byte limit"):
        regular_file_size(path, 10)


@pytest.mark.parametrize(("head", "word"), [(b"PK\x03\x04rest", "zip archive"), (b"%PDF-1.7", "PDF"),
                                            (b"\xff\xfe\x00\x00", "UTF-32"), (b"\xff\xfea\x00", "UTF-16"),
                                            (b"version https://git-lfs.github.com/spec/v1\nsize 1234\n", "1,234"),
                                            (b"<!DOCTYPE html><html>", "HTML page")])
def test_the_one_table_of_signatures_names_what_a_file_is(head: bytes, word: str) -> None:
    assert word in (refusal(head) or "")


def test_plain_text_and_parquet_are_not_refused() -> None:
    assert refusal(b"timestamp,input_tokens\n") is None
    assert refusal(b"PAR1\x15\x04") is None


def test_gzip_is_inflated_under_a_cap(tmp_path: Path) -> None:
    src = _write(tmp_path, gzip.compress(b"a,b\n" * 1000), "t.csv.gz")
    out = tmp_path / "out"
    inflate_gzip(src, out, 4000)
    assert out.read_bytes() == b"a,b\n" * 1000
    with pytest.raises(InputError, match="inflates to more than 3,999 bytes"):
        inflate_gzip(src, tmp_path / "out2", 3999)
    broken = _write(tmp_path, gzip.compress(b"a,b\n" * 1000)[:-9], "broken.gz")
    with pytest.raises(InputError, match="corrupt or truncated gzip"):
        inflate_gzip(broken, tmp_path / "out3", 10**6)


def test_the_hash_is_hashlibs_over_many_blocks(tmp_path: Path) -> None:
    path = _write(tmp_path, b"0123456789abcdef\n" * (3 * CHUNK // 17 + 5))
    _, digest = scan_text(path, RESULT_RULES)
    _, inline = scan_text(path, RESULT_RULES, background_hash=False)
    assert digest == inline == sha256_file(path) == hashlib.sha256(path.read_bytes()).hexdigest()
    assert not [t for t in threading.enumerate() if t.name == "sha256"]


def test_a_nul_after_a_utf8_error_wins_for_results_not_for_traces(tmp_path: Path) -> None:
    # Results decide as a whole-file read did (the NUL anywhere); traces stop at the first problem.
    path = _write(tmp_path, b"ok\n\xff bad\n" + b"x\n" * (CHUNK // 2) + b"\x00\n")
    with pytest.raises(InputError) as res:
        scan_text(path, RESULT_RULES)
    assert "NUL byte" in str(res.value) and res.value.line == CHUNK // 2 + 3
    with pytest.raises(InputError) as tr:
        scan_text(path, TRACE_RULES)
    assert "invalid UTF-8" in str(tr.value) and tr.value.line == 2
    assert not [t for t in threading.enumerate() if t.name == "sha256"]


def test_each_reader_keeps_its_words(tmp_path: Path) -> None:
    bad = _write(tmp_path, b"a\nb\xc3(\n")
    with pytest.raises(InputError, match=r"^.*:2: invalid UTF-8 \(byte 0xc3\); expected UTF-8 text$"):
        scan_text(bad, RESULT_RULES)
    with pytest.raises(InputError, match=r"^.*:2: invalid UTF-8; expected UTF-8 text$"):
        scan_text(bad, TRACE_RULES)
    cut = _write(tmp_path, b"a\nb\xc3", "cut.txt")
    with pytest.raises(InputError, match="ends inside a UTF-8 character"):
        scan_text(cut, TRACE_RULES)
    with pytest.raises(InputError, match=r"invalid UTF-8 \(byte 0xc3\)"):
        scan_text(cut, RESULT_RULES)


def test_blank_is_judged_on_decoded_text_only_when_asked(tmp_path: Path) -> None:
    nbsp = _write(tmp_path, "\ufeff \u00a0\n".encode())
    with pytest.raises(InputError, match="empty file"):
        scan_text(nbsp, RESULT_RULES)
    check, _ = scan_text(nbsp, TRACE_RULES)  # bytes that are not ASCII space: a parser decides
    assert check.nonblank


def test_line_cap_bare_cr_and_stats_are_opt_in(tmp_path: Path) -> None:
    rules = TextRules(nul="nul", bad_utf8="utf8", truncated_utf8="cut", empty="empty", max_line=8, bare_cr=True,
                      line_stats=True)
    with pytest.raises(InputError, match=r":2: line longer than 8 bytes"):
        scan_text(_write(tmp_path, b"short\n123456789\n"), rules)
    with pytest.raises(InputError, match="bare CR"):
        scan_text(_write(tmp_path, b"a\rb\r", "cr.txt"), rules)
    check, _ = scan_text(_write(tmp_path, b'"a"\n\n\nb\n', "q.txt"), rules)
    assert check.has_quote and check.blank_lines >= 1
    deferred = TextRules(nul="nul", bad_utf8="utf8", truncated_utf8="cut", empty="empty", max_line=8,
                         defer_long_lines=True)
    check, _ = scan_text(_write(tmp_path, b"[" + b"1," * 20 + b"1]\n", "doc.json"), deferred)
    assert check.long_line is not None and check.long_line.line == 1
