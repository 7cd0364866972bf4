"""Per-request spec-decode metrics: vLLM 0.32's response shape parsed, the server flag placed, schedules and
synthetic rates in --speculative-config exactly as vLLM reads them.

The payload below is what the real vLLM 0.32 CPU server sent on the final usage chunk of a streamed
completion (draft_model drafting for itself, depth 3, ``--per-request-spec-decode-metrics detailed``).
"""

from __future__ import annotations

import json

import polars as pl

from runner.vllm.client import LoadResult, RequestResult, parse_spec_metrics
from runner.vllm.server import PER_REQUEST_FLAG, build_server_args

REAL_FINAL_CHUNK = (
    '{"id":"cmpl-b2f8a7b2c7ca28ec","object":"text_completion","created":1796130797,"model":"/work/vllm-cpu/tiny-'
    'llama","choices":[],"usage":{"prompt_tokens":28,"total_tokens":44,"completion_tokens":16},"system_fingerprint"'
    ':"vllm-0.32.0-03069e14","metrics":{"speculative_decoding":{"mean_acceptance_length":4.0,"draft_acceptance_rate'
    '":1.0,"acceptance_histogram":[0,0,0,4],"num_spec_steps":4,"num_accepted_draft_tokens":12,"num_draft_tokens":12'
    ',"num_spec_tokens":3,"per_step_accepted":[3,3,3,3],"per_step_drafted":[3,3,3,3]}}}'
)


def test_vllms_real_payload_parses_to_steps_tokens_and_positions() -> None:
    spec = parse_spec_metrics(json.loads(REAL_FINAL_CHUNK)["metrics"]["speculative_decoding"])
    assert spec is not None
    assert (spec.steps, spec.drafted, spec.accepted) == (4, 12, 12)
    assert spec.accepted_per_pos == [4, 4, 4]
    assert spec.step_accepted == [3, 3, 3, 3] and spec.step_drafted == [3, 3, 3, 3]


def test_positions_come_from_the_histogram_as_prefix_counts() -> None:
    # 5 steps: 2 accepted nothing, 1 accepted one, 2 accepted all three -> position i counts steps with j >= i
    spec = parse_spec_metrics({"acceptance_histogram": [2, 1, 0, 2], "num_spec_steps": 5, "num_draft_tokens": 15,
                               "num_accepted_draft_tokens": 7, "num_spec_tokens": 3})
    assert spec is not None and spec.accepted_per_pos == [3, 2, 2] and spec.step_accepted is None


def test_a_malformed_payload_is_no_metrics_rather_than_a_crash() -> None:
    for bad in (None, [], {"acceptance_histogram": "x"}, {"acceptance_histogram": [1, -1], "num_spec_steps": 0,
                                                          "num_draft_tokens": 0, "num_accepted_draft_tokens": 0},
                {"acceptance_histogram": [1], "num_spec_steps": True, "num_draft_tokens": 1,
                 "num_accepted_draft_tokens": 0}):
        assert parse_spec_metrics(bad) is None


def test_request_rows_carry_the_per_request_counts() -> None:
    spec = parse_spec_metrics(json.loads(REAL_FINAL_CHUNK)["metrics"]["speculative_decoding"])
    res = LoadResult(requests=[RequestResult(0, ok=True, output_tokens=16, spec=spec),
                               RequestResult(1, ok=True, output_tokens=16)])
    frame = res.requests_frame()
    row = frame.row(0, named=True)
    assert (row["spec_steps"], row["drafted_tokens"], row["accepted_tokens"]) == (4, 12, 12)
    assert row["accepted_per_pos"] == [4, 4, 4] and row["step_drafted"] == [3, 3, 3, 3]
    assert frame.row(1, named=True)["spec_steps"] is None
    assert frame.schema["accepted_per_pos"] == pl.List(pl.Int64)


def _spec(args: list[str]) -> dict:
    return json.loads(args[args.index("--speculative-config") + 1])


def test_the_per_request_flag_goes_to_speculating_servers_only() -> None:
    args = build_server_args("ngram", 3, per_request="summary")
    assert args[args.index(PER_REQUEST_FLAG) + 1] == "summary"
    assert PER_REQUEST_FLAG not in build_server_args("none", 0, per_request="summary"), "vLLM refuses it there"
    assert PER_REQUEST_FLAG not in build_server_args("ngram", 3, per_request="off")
    given = build_server_args("ngram", 3, per_request="summary", extra_flags=[PER_REQUEST_FLAG, "detailed"])
    assert given.count(PER_REQUEST_FLAG) == 1, "a flag the family already passes is not repeated"


def test_a_schedule_and_synthetic_rates_are_vllms_own_keys() -> None:
    args = build_server_args("draft_model", 5, draft_model="/m", schedule=((1, 8, 5), (9, 64, 3)),
                             synthetic_rates=(0.9, 0.7, 0.5, 0.3, 0.1))
    spec = _spec(args)
    assert spec["num_speculative_tokens"] == 5 and spec["model"] == "/m"
    assert spec["num_speculative_tokens_per_batch_size"] == [[1, 8, 5], [9, 64, 3]]
    assert spec["rejection_sample_method"] == "synthetic"
    assert spec["synthetic_acceptance_rates"] == [0.9, 0.7, 0.5, 0.3, 0.1]
