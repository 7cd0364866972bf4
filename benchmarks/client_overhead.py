"""Client-side CPU cost of spectune's vLLM load generator (runner/vllm/client.py).

Owns one measurement: a local aiohttp stub (its own process, so its CPU is not counted) streams
``chunks`` SSE events per request instantly; ``run_load`` drives it at ``concurrency`` for
``n_requests``; the client's CPU is ``time.process_time()`` of this process. The baseline in the
same run is the cheapest sensible client: sequential ``httpx.Client`` POSTs reading the whole body
with no SSE parsing or timing. The client must stay cheap so that on a real GPU host the load
generator never becomes the bottleneck it is supposed to measure.

    python benchmarks/client_overhead.py [--requests 2000] [--concurrency 64] [--chunks 32]

Prints one JSON document. ``measure(n_requests, concurrency)`` is the importable entry point.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

if __package__ in (None, ""):
    # Run as a script: make the repo root importable for `runner`.
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.vllm.client import Prompt, run_load
from runner.vllm.server import free_port

STARTUP_TIMEOUT_S = 20.0


def serve(port: int, chunks: int) -> None:
    """The stub: an OpenAI-style streaming /v1/completions that answers instantly."""
    from aiohttp import web

    events = b"".join(
        b'data: {"choices":[{"index":0,"text":"tok%d","finish_reason":null}]}\n\n' % i for i in range(chunks)
    )
    tail = b'data: {"choices":[],"usage":{"prompt_tokens":8,"completion_tokens":%d}}\n\ndata: [DONE]\n\n' % chunks

    async def completions(request: web.Request) -> web.StreamResponse:
        await request.read()
        resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await resp.prepare(request)
        # One write per event: the client sees a real stream of separate SSE events, as from vLLM.
        for line in events.split(b"\n\n")[:-1]:
            await resp.write(line + b"\n\n")
        await resp.write(tail)
        await resp.write_eof()
        return resp

    async def health(_: web.Request) -> web.Response:
        return web.Response(text="ok")

    app = web.Application()
    app.router.add_post("/v1/completions", completions)
    app.router.add_get("/health", health)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


def _start_stub(chunks: int) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--serve", str(port), "--chunks", str(chunks)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"stub server exited: {err[-500:]}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{base}/health", timeout=1.0, trust_env=False).status_code == 200:
                return proc, base
        time.sleep(0.1)
    _stop(proc)
    raise RuntimeError(f"stub server not up after {STARTUP_TIMEOUT_S:g} s")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=5.0)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=5.0)


def _baseline(base: str, n: int, chunks: int) -> dict[str, float]:
    body = {"model": "stub", "prompt": "hello", "max_tokens": chunks, "stream": True}
    cpu0, t0 = time.process_time(), time.perf_counter()
    with httpx.Client(trust_env=False, timeout=30.0) as client:
        for _ in range(n):
            client.post(f"{base}/v1/completions", json=body).raise_for_status()
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    return {"client_cpu_ms_per_request": cpu * 1000.0 / n, "requests_per_s": n / wall, "n_requests": n}


def measure(n_requests: int = 2000, concurrency: int = 64, chunks: int = 32) -> dict[str, object]:
    """Client CPU ms per request and requests/s for ``run_load`` vs the naive baseline, one run."""
    proc, base = _start_stub(chunks)
    try:
        prompts = [Prompt(text="hello", max_tokens=chunks) for _ in range(n_requests)]
        # Warm-up: imports, connection setup and the stub's first requests are not steady state.
        asyncio.run(run_load(base, "stub", prompts[: min(100, n_requests)], concurrency, timeout_s=30))
        cpu0, t0 = time.process_time(), time.perf_counter()
        res = asyncio.run(run_load(base, "stub", prompts, concurrency, timeout_s=60, stall_timeout_s=30))
        cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
        baseline = _baseline(base, n_requests, chunks)
    finally:
        _stop(proc)
    per_req = cpu * 1000.0 / n_requests
    return {
        "client_cpu_ms_per_request": round(per_req, 4),
        "client_cpu_us_per_chunk": round(per_req * 1000.0 / chunks, 3),
        "requests_per_s": round(n_requests / wall, 1),
        "n_requests": n_requests,
        "concurrency": concurrency,
        "chunks_per_request": chunks,
        "ok": res.ok_count,
        "errors": sorted(set(res.errors()))[:5],
        "baseline": {
            "name": "sequential httpx.Client POST, whole body, no SSE parsing or timing",
            "client_cpu_ms_per_request": round(baseline["client_cpu_ms_per_request"], 4),
            "requests_per_s": round(baseline["requests_per_s"], 1),
        },
        "cpu_ratio_vs_baseline": round(per_req / baseline["client_cpu_ms_per_request"], 3),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--chunks", type=int, default=32)
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.serve is not None:
        serve(args.serve, args.chunks)
        return 0
    print(json.dumps(measure(args.requests, args.concurrency, args.chunks), indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
