"""Spec-decode counters from Prometheus text, on a /metrics page captured from the real vLLM 0.32 server.

fixtures/metrics_ngram.txt: the tiny Llama served with ngram, depth 3, after 10 completions.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.records import SpecCounters
from runner.vllm.metrics import delta, parse_spec_counters

FIXTURE = Path(__file__).parent / "fixtures" / "metrics_ngram.txt"


def test_real_capture_parses() -> None:
    text = FIXTURE.read_text()
    counters = parse_spec_counters(text)
    assert counters == SpecCounters(drafts=45, draft_tokens=130, accepted_tokens=85, accepted_per_pos=[34, 31, 20])
    # vLLM's invariants hold on the real page: per-position counts add up to the accepted total,
    # each position is accepted at most once per draft, and acceptance is monotone in position.
    assert sum(counters.accepted_per_pos) == counters.accepted_tokens
    assert all(p <= counters.drafts for p in counters.accepted_per_pos)
    assert counters.accepted_per_pos == sorted(counters.accepted_per_pos, reverse=True)


def test_labels_are_summed_and_created_samples_ignored() -> None:
    text = "\n".join(
        [
            "# TYPE vllm:spec_decode_num_drafts counter",
            'vllm:spec_decode_num_drafts_total{engine="0",model_name="m"} 10.0',
            'vllm:spec_decode_num_drafts_total{engine="1",model_name="m"} 5.0',
            'vllm:spec_decode_num_drafts_created{engine="0",model_name="m"} 1.7e+09',
            "# TYPE vllm:spec_decode_num_draft_tokens counter",
            'vllm:spec_decode_num_draft_tokens_total{engine="0"} 30.0',
            "# TYPE vllm:spec_decode_num_accepted_tokens counter",
            'vllm:spec_decode_num_accepted_tokens_total{engine="0"} 12.0',
            "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter",
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="1"} 4.0',
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="1",position="1"} 1.0',
            'vllm:spec_decode_num_accepted_tokens_per_pos_total{engine="0",position="0"} 7.0',
            "",
        ]
    )
    assert parse_spec_counters(text) == SpecCounters(15, 30, 12, [7, 5])


def test_untyped_total_names_parse_too() -> None:
    # Without "# TYPE" lines the parser keeps "_total" in the family name; same numbers either way.
    text = (
        "vllm:spec_decode_num_drafts_total 3\n"
        "vllm:spec_decode_num_draft_tokens_total 9\n"
        "vllm:spec_decode_num_accepted_tokens_total 4\n"
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="2"} 1\n'
    )
    assert parse_spec_counters(text) == SpecCounters(3, 9, 4, [0, 0, 1])


def test_no_speculation_is_zero_counters() -> None:
    text = FIXTURE.read_text()
    baseline = "\n".join(ln for ln in text.splitlines() if "spec_decode" not in ln) + "\n"
    assert parse_spec_counters(baseline) == SpecCounters(0, 0, 0, [])
    assert parse_spec_counters("") == SpecCounters(0, 0, 0, [])


def test_delta() -> None:
    before = SpecCounters(10, 30, 20, [9, 7, 4])
    after = SpecCounters(15, 45, 26, [13, 9, 4])
    assert delta(before, after) == SpecCounters(5, 15, 6, [4, 2, 0])
    assert delta(SpecCounters(0, 0, 0, []), after) == after
    assert delta(SpecCounters(0, 0, 0, []), SpecCounters(0, 0, 0, [])) == SpecCounters(0, 0, 0, [])
    with pytest.raises(ValueError, match="backwards"):
        delta(after, before)
