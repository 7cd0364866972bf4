"""The load generator: streamed OpenAI-compatible requests against vLLM, timed per request and per chunk.

Owns what a cell's per-request samples mean on the vLLM backend: TTFT (send → first non-empty text
chunk), TPOT = (e2e − TTFT)/(output tokens − 1), e2e (send → ``[DONE]``), ITL (gaps between
non-empty chunks; with speculation one chunk may carry several tokens, so token counts come from
``usage``), and how faults become failed requests with a reason while the load goes on.

Load shapes: closed loop (``concurrency`` requests in flight until the prompts run out) or trace
replay (request *i* sent at ``arrival_times_s[i]``, at most ``concurrency`` in flight).

Overhead: one aiohttp session (C HTTP parser, HTTP/1.1 keep-alive, a pool of ``concurrency`` connections),
SSE split on raw bytes, one ``json.loads`` per data line, no per-chunk timers: a stall is aiohttp's socket
read timeout (no byte for ``stall_timeout_s``), the overall bound is one ``asyncio.timeout`` per request.
aiohttp rather than httpx because the client must stay far cheaper than what it measures: at
concurrency 64 httpx cost 1.3 ms of CPU per streamed request here, aiohttp about half that
(``benchmarks/client_overhead.py``).
"""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import aiohttp
import polars as pl

from ingest.records import REQUEST_SCHEMA, conform_requests

Endpoint = Literal["completions", "chat"]
PATHS: dict[str, str] = {"completions": "/v1/completions", "chat": "/v1/chat/completions"}
ERROR_DETAIL_CHARS = 200
KEEPALIVE_S = 3.0  # idle connections are dropped before uvicorn's 5 s keep-alive closes them (run_load)


@dataclass(slots=True)
class Prompt:
    """One request's input: plain text, or chat messages (text alone is sent as one user message).

    ``max_tokens`` overrides the load's default. ``expected_output_tokens`` is what the workload or
    trace says the output should be (not sent; kept for checks and re-scoring).
    """

    text: str | None = None
    messages: list[dict[str, str]] | None = None
    max_tokens: int | None = None
    expected_output_tokens: int | None = None

    def __post_init__(self) -> None:
        if self.text is None and not self.messages:
            raise ValueError("a Prompt needs text or messages")


@dataclass(slots=True)
class RequestResult:
    """One request's outcome. Latencies are ms; ``start_s`` is seconds from the load's start."""

    request_index: int
    start_s: float = 0.0
    ok: bool = False
    error: str | None = None
    input_tokens: int | None = None
    output_tokens: int = 0
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None
    spec: SpecDecodeMetrics | None = None  # vLLM's per-request spec-decode metrics, when the server sent them


@dataclass(slots=True)
class SpecDecodeMetrics:
    """One request's ``metrics.speculative_decoding`` (vLLM 0.32, ``--per-request-spec-decode-metrics``).

    vLLM sends it on the final usage chunk of a stream (vllm/entrypoints/openai/completion/serving.py) as
    ``SpeculativeDecodingMetrics`` (vllm/entrypoints/generate/base/protocol.py): ``acceptance_histogram[j]`` is
    the number of verify steps that accepted exactly j drafts (bonus token excluded), ``num_spec_steps`` their
    sum, ``num_draft_tokens`` / ``num_accepted_draft_tokens`` the totals; ``per_step_*`` only at ``detailed``.
    """

    steps: int
    drafted: int
    accepted: int
    accepted_per_pos: list[int]  # per 1-based position i: steps that accepted i or more drafts
    step_accepted: list[int] | None = None
    step_drafted: list[int] | None = None


def parse_spec_metrics(obj: object) -> SpecDecodeMetrics | None:
    """A response's per-request spec-decode metrics, or None when absent or not of vLLM's shape."""
    if not isinstance(obj, dict):
        return None
    hist = obj.get("acceptance_histogram")
    steps, drafted, accepted = obj.get("num_spec_steps"), obj.get("num_draft_tokens"), obj.get(
        "num_accepted_draft_tokens")
    counts = [steps, drafted, accepted, *(hist if isinstance(hist, list) else [None])]
    if not isinstance(hist, list) or not hist or not all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in counts):
        return None
    # Acceptance is a prefix: a step that accepted j drafts accepted positions 1..j (vLLM's per-position counter
    # does the same: vllm/v1/spec_decode/metrics.py observe_draft), so position i counts the steps with j >= i.
    per_pos = [sum(hist[i:]) for i in range(1, len(hist))]
    out = SpecDecodeMetrics(steps=steps, drafted=drafted, accepted=accepted, accepted_per_pos=per_pos)  # type: ignore[arg-type]
    acc, dr = obj.get("per_step_accepted"), obj.get("per_step_drafted")
    if isinstance(acc, list) and isinstance(dr, list):
        out.step_accepted, out.step_drafted = [int(x) for x in acc], [int(x) for x in dr]
    return out


@dataclass(slots=True)
class LoadResult:
    """All requests of one load, the flat list of inter-chunk gaps, and the measured window."""

    requests: list[RequestResult]
    itl_ms: list[float] = field(default_factory=list)
    window_s: float = 0.0

    @property
    def ok_count(self) -> int:
        return sum(1 for r in self.requests if r.ok)

    @property
    def failed_count(self) -> int:
        return len(self.requests) - self.ok_count

    @property
    def output_tokens(self) -> int:
        return sum(r.output_tokens for r in self.requests if r.ok)

    def errors(self) -> list[str]:
        return [r.error for r in self.requests if r.error]

    def requests_frame(self) -> pl.DataFrame:
        """Per-request rows in the store's :data:`ingest.records.REQUEST_SCHEMA`."""
        rs = self.requests
        frame = pl.DataFrame(
            {
                "request_index": [r.request_index for r in rs],
                "input_tokens": [r.input_tokens for r in rs],
                "output_tokens": [r.output_tokens for r in rs],
                "ttft_ms": [r.ttft_ms for r in rs],
                "tpot_ms": [r.tpot_ms for r in rs],
                "e2e_ms": [r.e2e_ms for r in rs],
                "start_s": [r.start_s for r in rs],
                "drafted_tokens": [r.spec.drafted if r.spec else None for r in rs],
                "accepted_tokens": [r.spec.accepted if r.spec else None for r in rs],
                "spec_steps": [r.spec.steps if r.spec else None for r in rs],
                "accepted_per_pos": [r.spec.accepted_per_pos if r.spec else None for r in rs],
                "step_accepted": [r.spec.step_accepted if r.spec else None for r in rs],
                "step_drafted": [r.spec.step_drafted if r.spec else None for r in rs],
                "ok": [r.ok for r in rs],
                "error": [r.error for r in rs],
            },
            schema=REQUEST_SCHEMA,
        )
        return conform_requests(frame)


def _one_line(text: str, limit: int = ERROR_DETAIL_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def _fmt_s(seconds: float) -> str:
    return f"{seconds:g}"


def build_body(
    prompt: Prompt,
    model: str,
    endpoint: Endpoint,
    max_tokens: int,
    temperature: float,
    ignore_eos: bool,
    extra_body: dict[str, Any] | None,
) -> bytes:
    body: dict[str, Any] = {"model": model}
    if endpoint == "chat":
        body["messages"] = prompt.messages or [{"role": "user", "content": prompt.text}]
    else:
        if prompt.text is None:
            raise ValueError("the completions endpoint needs Prompt.text")
        body["prompt"] = prompt.text
    body["max_tokens"] = prompt.max_tokens if prompt.max_tokens is not None else max_tokens
    body["temperature"] = temperature
    body["stream"] = True
    body["stream_options"] = {"include_usage": True}
    if ignore_eos:
        # vLLM extension: generate exactly max_tokens, so output length is a controlled variable.
        body["ignore_eos"] = True
    if extra_body:
        body.update(extra_body)
    return json.dumps(body, separators=(",", ":")).encode()


async def _request(
    session: aiohttp.ClientSession,
    url: str,
    body: bytes,
    index: int,
    t0: float,
    chat: bool,
    timeout_s: float,
    stall_timeout_s: float,
    itl_sink: list[float],
) -> RequestResult:
    res = RequestResult(request_index=index)
    start = time.perf_counter()
    res.start_s = start - t0
    first: float | None = None
    last = 0.0
    chunks = 0
    done = False
    usage_out: int | None = None
    gaps: list[float] = []
    try:
        async with asyncio.timeout(timeout_s), session.post(url, data=body) as resp:
            if resp.status != 200:
                detail = (await resp.read()).decode("utf-8", errors="replace")
                res.error = f"http {resp.status}: {_one_line(detail)}"
            else:
                buf = b""
                async for data in resp.content.iter_any():
                    now = time.perf_counter()
                    buf += data
                    if b"\n" not in data:
                        continue
                    lines = buf.split(b"\n")
                    buf = lines.pop()
                    for line in lines:
                        if not line.startswith(b"data:"):
                            continue
                        payload = line[5:].strip()
                        if payload == b"[DONE]":
                            done = True
                            continue
                        obj = json.loads(payload)
                        choices = obj.get("choices")
                        if choices:
                            choice = choices[0]
                            if chat:
                                delta = choice.get("delta") or {}
                                piece = (
                                    delta.get("content")
                                    or delta.get("reasoning_content")
                                    or delta.get("reasoning")
                                )
                            else:
                                piece = choice.get("text")
                            if piece:
                                chunks += 1
                                if first is None:
                                    first = now
                                else:
                                    gaps.append((now - last) * 1000.0)
                                last = now
                        metrics = obj.get("metrics")
                        if isinstance(metrics, dict) and "speculative_decoding" in metrics:
                            res.spec = parse_spec_metrics(metrics["speculative_decoding"])
                        usage = obj.get("usage")
                        if usage:
                            res.input_tokens = usage.get("prompt_tokens")
                            usage_out = usage.get("completion_tokens")
                        if "error" in obj and res.error is None:
                            err = obj["error"]
                            msg = err.get("message", err) if isinstance(err, dict) else err
                            res.error = f"server error: {_one_line(str(msg))}"
                if res.error is None and not done:
                    res.error = "truncated stream: no [DONE]"
    # aiohttp's timeouts are TimeoutErrors too: the socket read timeout is a stall, the others are not.
    except aiohttp.SocketTimeoutError:
        res.error = f"hang: no token for {_fmt_s(stall_timeout_s)} s"
    except aiohttp.ConnectionTimeoutError:
        res.error = "connection error: timed out connecting to the server"
    except TimeoutError:
        res.error = f"timeout: request exceeded {_fmt_s(timeout_s)} s"
    except aiohttp.ClientError as exc:
        res.error = f"connection error: {_one_line(str(exc) or type(exc).__name__)}"
    except json.JSONDecodeError as exc:
        res.error = f"bad stream: invalid JSON in a data line ({exc.msg})"
    except (KeyError, TypeError, AttributeError, ValueError) as exc:
        res.error = f"bad stream: {type(exc).__name__}: {_one_line(str(exc))}"
    end = time.perf_counter()
    res.e2e_ms = (end - start) * 1000.0
    res.output_tokens = usage_out if usage_out is not None else chunks
    if first is not None:
        res.ttft_ms = (first - start) * 1000.0
    if res.error is None:
        res.ok = True
        if res.ttft_ms is not None and res.output_tokens > 1:
            res.tpot_ms = (res.e2e_ms - res.ttft_ms) / (res.output_tokens - 1)
        itl_sink.extend(gaps)
    return res


async def run_load(
    base_url: str,
    model: str,
    prompts: list[Prompt],
    concurrency: int,
    *,
    endpoint: Endpoint = "completions",
    max_tokens: int = 128,
    temperature: float = 0.0,
    ignore_eos: bool = True,
    timeout_s: float = 600.0,
    stall_timeout_s: float = 60.0,
    arrival_times_s: list[float] | None = None,
    extra_body: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> LoadResult:
    """Send every prompt once (streamed) and time it. Failed requests are recorded, never raised.

    ``arrival_times_s`` switches to trace replay: request *i* is sent at ``arrival_times_s[i]``
    seconds (shifted so the earliest is 0) after the load starts, with ``concurrency`` as the cap on
    requests in flight. ``headers`` carries e.g. an ``Authorization`` read from the environment by
    the caller.
    """
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    if endpoint not in PATHS:
        raise ValueError(f"endpoint must be one of {sorted(PATHS)}")
    if arrival_times_s is not None and len(arrival_times_s) != len(prompts):
        raise ValueError("arrival_times_s must have one time per prompt")
    n = len(prompts)
    if n == 0:
        return LoadResult(requests=[])
    url = base_url.rstrip("/") + PATHS[endpoint]
    chat = endpoint == "chat"
    bodies = [
        build_body(p, model, endpoint, max_tokens, temperature, ignore_eos, extra_body) for p in prompts
    ]
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=min(10.0, timeout_s), sock_read=stall_timeout_s)
    slots = min(concurrency, n)
    all_headers = {"Content-Type": "application/json", "Accept": "text/event-stream", **(headers or {})}
    results: list[RequestResult | None] = [None] * n
    itl: list[float] = []
    # trust_env=False: an environment proxy must never sit between us and a local server.
    # keepalive_timeout below the server's: vLLM's uvicorn closes an idle keep-alive connection after 5 s, and
    # aiohttp (15 s by default) would reuse one the server is closing at that moment -> "Server disconnected" on a
    # request sent after an arrival gap of about 5 s (seen on a real CPU vLLM, tests/ingest/watch/test_real_ab.py).
    connector = aiohttp.TCPConnector(limit=slots, limit_per_host=slots, ttl_dns_cache=None,
                                     keepalive_timeout=KEEPALIVE_S)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, headers=all_headers, trust_env=False, auto_decompress=False
    ) as session:
        t0 = time.perf_counter()

        async def send(i: int) -> None:
            results[i] = await _request(
                session, url, bodies[i], i, t0, chat, timeout_s, stall_timeout_s, itl
            )

        if arrival_times_s is None:
            indices = iter(range(n))

            async def worker() -> None:
                # One shared iterator: each next() runs to completion on the event loop, no lock needed.
                for i in indices:
                    await send(i)

            await asyncio.gather(*(worker() for _ in range(slots)))
        else:
            origin = min(arrival_times_s)
            # FIFO slots, not the connector's limit, so a late slot goes to the earliest waiting arrival.
            free = asyncio.Semaphore(slots)

            async def timed(i: int) -> None:
                delay = t0 + (arrival_times_s[i] - origin) - time.perf_counter()
                if delay > 0:
                    await asyncio.sleep(delay)
                async with free:
                    await send(i)

            await asyncio.gather(*(timed(i) for i in range(n)))

    done = [r for r in results if r is not None]
    first_send = min(r.start_s for r in done)
    last_end = max(r.start_s + (r.e2e_ms or 0.0) / 1000.0 for r in done)
    return LoadResult(requests=done, itl_ms=itl, window_s=last_end - first_send)
