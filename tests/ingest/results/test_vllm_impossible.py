"""Values no vLLM run can write are refused on their line, and a dimension gets the same check whether it comes
by ``--set`` or by the file's metadata."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from ingest.errors import InputError, UsageError
from ingest.results import ReadOptions, read_file
from ingest.results.dims import parse_sets
from tests.ingest.results.conftest import SAMPLES

SAMPLE = SAMPLES / "vllm_bench_eagle3_qwen_code.json"


def _doc() -> dict[str, Any]:
    doc = json.loads(SAMPLE.read_text())
    doc["latencies"] = [t + sum(row) for t, row in zip(doc["ttfts"], doc["itls"], strict=True)]
    return doc


def _ok(doc: dict[str, Any]) -> int:
    return next(i for i, e in enumerate(doc.get("errors") or [""] * len(doc["ttfts"])) if not e)


def _write(tmp: Path, doc: dict[str, Any], replace: tuple[str, str] | None = None) -> Path:
    text = json.dumps(doc, indent=1)  # one key per line: the error line is the key's line
    if replace:
        assert replace[0] in text
        text = text.replace(replace[0], replace[1], 1)
    path = tmp / "bench.json"
    path.write_text(text)
    return path


def _refused(path: Path, key: str, match: str) -> None:
    with pytest.raises(InputError, match=match) as exc:
        read_file(path, "auto", ReadOptions())
    key_line = next(i for i, ln in enumerate(path.read_text().splitlines(), 1) if ln.strip().startswith(f'"{key}"'))
    assert exc.value.line == key_line, exc.value.one_line()


def test_the_unchanged_sample_with_latencies_is_accepted(tmp_path: Path) -> None:
    parsed = read_file(_write(tmp_path, _doc()), "auto", ReadOptions())
    assert parsed.cells and (parsed.cells[0].requests["tpot_ms"].drop_nulls() >= 0).all()


def test_ttft_longer_than_the_latency_is_refused(tmp_path: Path) -> None:
    doc = _doc()
    i = _ok(doc)
    doc["ttfts"][i] = doc["latencies"][i] + 0.5
    _refused(_write(tmp_path, doc), "ttfts", "longer than the request's latency")


@pytest.mark.parametrize("literal", ["1e400", "Infinity", "NaN", "-Infinity"])
def test_a_non_finite_ttft_on_a_successful_request_is_refused(tmp_path: Path, literal: str) -> None:
    doc = _doc()
    i = _ok(doc)
    doc["ttfts"][i] = 12345.678  # a marker replaced by the literal in the text
    path = _write(tmp_path, doc, ("12345.678", literal))
    _refused(path, "ttfts", "not a finite number on a successful request")


@pytest.mark.parametrize("value", ["99", 99, "3.5", "²", "٣", True])
def test_metadata_depth_gets_the_check_set_gets(tmp_path: Path, value: Any) -> None:
    doc = _doc()
    doc["num_speculative_tokens"] = value
    _refused(_write(tmp_path, doc), "num_speculative_tokens", "expected a whole number ≤ 64")
    with pytest.raises(UsageError, match="expected a whole number ≤ 64"):
        parse_sets([f"depth={value}"])


@pytest.mark.parametrize("model", ["Qwen\u202e3", "Qwen\x07", "Qwen\nInjected", "A" * 300])
def test_model_ids_get_the_check_set_gets(tmp_path: Path, model: str) -> None:
    doc = _doc()
    doc["model_id"] = model
    _refused(_write(tmp_path, doc), "model_id", "expected a printable value")
    with pytest.raises(UsageError, match="expected a printable value"):
        parse_sets([f"model={model}"])


def test_far_more_itls_than_output_tokens_is_refused(tmp_path: Path) -> None:
    doc = _doc()
    i = _ok(doc)
    doc["itls"][i] = [0.0] * 200_000
    doc["latencies"][i] = doc["ttfts"][i]
    _refused(_write(tmp_path, doc), "itls", "gaps for")


@pytest.mark.parametrize("rate", ['"fast"', "-2", "0", "true", '"nan"'])
def test_a_request_rate_that_is_not_a_rate_is_refused(tmp_path: Path, rate: str) -> None:
    path = _write(tmp_path, _doc(), ('"request_rate": "inf"', f'"request_rate": {rate}'))
    _refused(path, "request_rate", "'request_rate' must be a positive number")


@pytest.mark.parametrize("key", ["output_throughput", "request_throughput", "total_token_throughput"])
def test_a_nan_throughput_is_refused_not_recomputed(tmp_path: Path, key: str) -> None:
    doc = _doc()
    doc[key] = math.nan  # json.dumps writes NaN
    _refused(_write(tmp_path, doc), key, "expected a finite number")
