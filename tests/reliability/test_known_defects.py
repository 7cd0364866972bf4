"""Defects found by the reliability work, kept as regression tests once fixed.

A defect still open is pinned as ``xfail(strict=True)`` (it FAILS once fixed, so the marker and the entry
under "Known gaps" in docs/reliability.md get removed rather than forgotten).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest.errors import InputError
from ingest.results import ReadOptions, read_file
from tests.conftest import REPO


def test_absurd_latency_is_refused_not_landed_as_infinity(tmp_path: Path) -> None:
    doc = json.loads((REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json").read_text())
    doc["ttfts"][0] = 1e308
    path = tmp_path / "bench.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(InputError, match="not a plausible request time"):
        read_file(path, "auto", ReadOptions())


@pytest.mark.parametrize("label", ["evil\u202etxt.exe", "a\u2067b", "tab\there", "bell\x07x"])
def test_trace_labels_with_bidi_or_control_characters_are_refused(tmp_path: Path, label: str) -> None:
    from ingest.traces import read_trace

    path = tmp_path / "t.csv"
    path.write_text(f"input_tokens,output_tokens,tenant\n10,20,acme\n11,21,\"{label}\"\n", encoding="utf-8")
    with pytest.raises(InputError, match="control or bidi-override") as exc:
        read_trace(path)
    assert exc.value.line == 3


def test_a_lone_surrogate_in_jsonl_is_reported_on_its_line(tmp_path: Path) -> None:
    from ingest.traces import read_trace

    path = tmp_path / "t.jsonl"
    path.write_text('{"timestamp": 1, "input_length": 5, "output_length": 3, "hash_ids": []}\n\n'
                    '{"timestamp": 2, "input_length": 5, "output_length": 3, "hash_ids": [], "x": "\\ud800"}\n')
    with pytest.raises(InputError, match="lone surrogate") as exc:
        read_trace(path)
    assert exc.value.line == 3


@pytest.mark.parametrize(("stamps", "years"), [(("1970-05-10 00:00:00", "2024-05-10 00:00:01"), "54.0"),
                                               (("0001-01-01 00:00:00", "9999-01-01 00:00:00"), "9,997.8")])
def test_a_trace_spanning_absurd_time_ranges_warns(tmp_path: Path, stamps: tuple[str, str], years: str) -> None:
    from ingest.traces import read_trace

    path = tmp_path / "t.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(f"{s}.000,10,20\n" for s in stamps))
    tf = read_trace(path)
    assert any(f"requests span {years} years" in w for w in tf.warnings), tf.warnings


@pytest.mark.parametrize("lead", ["\u200b", "\ufeff", "\u200b\u200d ", "\u00a0", "\u2060"])
def test_labels_starting_with_invisible_characters_then_a_formula_are_escaped(lead: str) -> None:
    import polars as pl

    from dashboard.export import csv_bytes

    out = csv_bytes(pl.DataFrame({"tenant": [f"{lead}=HYPERLINK(\"http://x\")", "plain"]})).decode()
    assert out.splitlines()[1].startswith("\"'") or out.splitlines()[1].startswith("'"), out
    assert out.splitlines()[2] == "plain"
