"""The pre-scan's file hash (ingest.traces.source): computed on its own thread, equal to hashlib's, and stopped
when the checks fail."""

from __future__ import annotations

import hashlib
import threading
from pathlib import Path

import pytest

from ingest.errors import InputError
from ingest.traces.limits import DEFAULT_LIMITS
from ingest.traces.source import CHUNK, HASH_BLOCK, open_source

ROW = b"2023-11-16 18:15:46.6805900,374,44\n"


def _hash_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "sha256"]


def test_hash_of_a_file_of_many_blocks_equals_hashlibs(tmp_path: Path) -> None:
    body = ROW * (2 * HASH_BLOCK // len(ROW) + 12_345)  # several hash blocks, a short last one
    path = tmp_path / "AzureLLMInferenceTrace_code.csv"
    path.write_bytes(b"TIMESTAMP,ContextTokens,GeneratedTokens\n" + body)
    with open_source(path, DEFAULT_LIMITS) as src:
        assert src.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert not _hash_threads()


def test_a_failed_check_raises_its_error_and_stops_the_hash(tmp_path: Path) -> None:
    # A NUL on line 2 of a file of many hash blocks: the checks' error, named at its line, and no hash thread
    # left running behind it.
    path = tmp_path / "trace.csv"
    path.write_bytes(b"TIMESTAMP,ContextTokens,GeneratedTokens\n1,2\x003\n" + ROW * (3 * HASH_BLOCK // len(ROW)))
    with pytest.raises(InputError) as exc, open_source(path, DEFAULT_LIMITS):
        pass
    assert exc.value.line == 2 and "NUL byte" in str(exc.value)
    assert not _hash_threads()


def test_an_error_past_the_first_chunk_also_stops_the_hash(tmp_path: Path) -> None:
    rows = ROW * (CHUNK // len(ROW) + 10)
    path = tmp_path / "trace.csv"
    path.write_bytes(b"TIMESTAMP,ContextTokens,GeneratedTokens\n" + rows + b"\xff\xfe,1,2\n" + rows)
    with pytest.raises(InputError, match="invalid UTF-8"), open_source(path, DEFAULT_LIMITS):
        pass
    assert not _hash_threads()
