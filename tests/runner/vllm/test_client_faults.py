"""The load client against a misbehaving local server: every fault is a failed request, never a crash."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import polars as pl
import pytest

from ingest.records import REQUEST_SCHEMA
from runner.vllm.client import LoadResult, Prompt, run_load
from runner.vllm.server import free_port
from tests.runner.vllm.fake_openai import FakeServer


@pytest.fixture()
def fake() -> Iterator[FakeServer]:
    with FakeServer() as server:
        yield server


def load(base_url: str, kinds: list[str], **kw: object) -> LoadResult:
    prompts = [Prompt(text=k) for k in kinds]
    kw.setdefault("concurrency", 3)
    kw.setdefault("max_tokens", 5)
    kw.setdefault("stall_timeout_s", 0.5)
    kw.setdefault("timeout_s", 10.0)
    return asyncio.run(run_load(base_url, "fake", prompts, **kw))  # type: ignore[arg-type]


def test_each_fault_fails_its_request_and_the_load_goes_on(fake: FakeServer) -> None:
    kinds = ["ok", "error500", "ok", "hang", "ok", "truncate", "ok", "crash", "badjson", "sse-error", "ok"]
    t0 = time.monotonic()
    res = load(fake.base_url, kinds)
    assert time.monotonic() - t0 < 5.0, "a hang must cost about stall_timeout_s, not more"
    by_kind = dict(zip(kinds, res.requests, strict=True))
    errors = {k: r.error for k, r in by_kind.items() if k != "ok"}
    assert errors["error500"] is not None and errors["error500"].startswith("http 500: ")
    assert "boom: engine dead" in errors["error500"]
    assert errors["hang"] == "hang: no token for 0.5 s"
    assert errors["truncate"] == "truncated stream: no [DONE]"
    assert errors["crash"] is not None and errors["crash"].startswith("connection error: ")
    assert errors["badjson"] is not None and errors["badjson"].startswith("bad stream: invalid JSON")
    assert errors["sse-error"] == "server error: engine overloaded"
    for kind, r in by_kind.items():
        assert r.ok == (kind == "ok"), (kind, r)
        assert r.tpot_ms is None or r.ok
    oks = [r for k, r in zip(kinds, res.requests, strict=True) if k == "ok"]
    assert len(oks) == 5 and all(r.output_tokens == 5 and r.input_tokens == 7 for r in oks)
    assert res.ok_count == 5 and res.failed_count == 6
    assert [r.request_index for r in res.requests] == list(range(len(kinds)))
    # the hung request got its two chunks before it stalled: TTFT is known, the request still failed
    assert by_kind["hang"].ttft_ms is not None and by_kind["hang"].output_tokens == 2


def test_ok_request_timings_and_itl(fake: FakeServer) -> None:
    res = load(fake.base_url, ["ok"] * 6, concurrency=2)
    assert res.ok_count == 6
    for r in res.requests:
        assert r.ttft_ms is not None and r.ttft_ms > 0
        assert r.e2e_ms is not None and r.e2e_ms >= r.ttft_ms
        assert r.tpot_ms is not None and r.tpot_ms >= 0
        assert r.tpot_ms == pytest.approx((r.e2e_ms - r.ttft_ms) / 4)
    assert len(res.itl_ms) == 6 * 4  # 5 text chunks per request → 4 gaps
    assert res.window_s > 0
    assert res.output_tokens == 30


def test_overall_timeout_bounds_a_trickling_request(fake: FakeServer) -> None:
    t0 = time.monotonic()
    res = load(fake.base_url, ["slow", "ok"], timeout_s=0.6, stall_timeout_s=5.0)
    assert time.monotonic() - t0 < 3.0
    assert res.requests[0].error == "timeout: request exceeded 0.6 s"
    assert res.requests[1].ok


def test_missing_usage_falls_back_to_chunk_count(fake: FakeServer) -> None:
    res = load(fake.base_url, ["nousage"], max_tokens=4)
    r = res.requests[0]
    assert r.ok and r.output_tokens == 4 and r.input_tokens is None


def test_chat_endpoint_skips_the_role_chunk(fake: FakeServer) -> None:
    prompts = [Prompt(messages=[{"role": "user", "content": "ok"}]), Prompt(text="ok", max_tokens=3)]
    res = asyncio.run(run_load(fake.base_url, "fake", prompts, 2, endpoint="chat", max_tokens=5))
    assert [r.output_tokens for r in res.requests] == [5, 3]
    assert all(r.ok for r in res.requests)
    assert len(res.itl_ms) == 4 + 2  # the empty role chunk is not a token, so not a gap either


def test_connection_refused_is_a_failed_request() -> None:
    res = load(f"http://127.0.0.1:{free_port()}", ["ok", "ok"])
    assert [r.ok for r in res.requests] == [False, False]
    assert all((r.error or "").startswith("connection error: ") for r in res.requests)


def test_trace_replay_sends_at_arrival_times(fake: FakeServer) -> None:
    res = load(fake.base_url, ["ok"] * 3, arrival_times_s=[100.0, 100.3, 100.6], concurrency=3)
    starts = [r.start_s for r in res.requests]
    assert starts[0] < 0.1
    assert starts[1] == pytest.approx(0.3, abs=0.1)
    assert starts[2] == pytest.approx(0.6, abs=0.1)
    assert res.window_s >= 0.6


def test_requests_frame_has_the_store_schema(fake: FakeServer) -> None:
    res = load(fake.base_url, ["ok", "error500"])
    frame = res.requests_frame()
    assert frame.schema == pl.Schema(REQUEST_SCHEMA)
    assert frame["ok"].to_list() == [True, False]
    assert frame["drafted_tokens"].null_count() == 2
    assert frame["tpot_ms"][1] is None
    assert LoadResult(requests=[]).requests_frame().schema == pl.Schema(REQUEST_SCHEMA)


def test_bad_arguments_raise() -> None:
    with pytest.raises(ValueError):
        asyncio.run(run_load("http://127.0.0.1:1", "m", [Prompt(text="a")], 0))
    with pytest.raises(ValueError):
        asyncio.run(run_load("http://127.0.0.1:1", "m", [Prompt(text="a")], 1, arrival_times_s=[0, 1]))
    with pytest.raises(ValueError):
        Prompt()
