"""Direct scrapes of vLLM ``/metrics`` endpoints: all targets at once, each bounded by its own timeout.

One slow, dead or broken target never delays or stops the others: every fetch runs concurrently under
``asyncio.wait_for(timeout_s)`` (a server that trickles bytes is cut off too, not just one that never
connects), the page is then parsed in a worker thread against the same deadline (``timeout_s`` covers
fetch and parse: a page that takes longer to parse is a failed scrape), bodies are capped at
:data:`MAX_BODY_BYTES`, and every failure becomes a one-line reason for that target. Bearer tokens are read
from the target's ``token_env`` at request time and only ever put in the request header. HTTPS certificates
are verified unless the target says ``verify = false``.
"""

from __future__ import annotations

import asyncio
import os
import ssl
import time
from dataclasses import dataclass

import aiohttp

from ingest.watch.exposition import BadExposition, ParseDeadline, Sample, parse
from ingest.watch.targets import Target

MAX_BODY_BYTES = 32 << 20


@dataclass(slots=True)
class ScrapeResult:
    target: Target
    ts: float  # unix seconds when the scrape started
    sample: Sample | None
    error: str | None = None
    elapsed_s: float = 0.0


def headers_for(target: Target) -> dict[str, str]:
    if not target.token_env:
        return {}
    token = os.environ.get(target.token_env)
    return {"Authorization": f"Bearer {token}"} if token else {}


def missing_token(target: Target) -> str | None:
    if target.token_env and not os.environ.get(target.token_env):
        return f"token_env {target.token_env} is not set; sending no token"
    return None


def verify_for(target: Target) -> bool | ssl.SSLContext:
    if isinstance(target.verify, str):
        return ssl.create_default_context(cafile=target.verify)
    return target.verify


class HTTPStatus(Exception):
    """A non-200 answer (one line: ``HTTP 500``)."""


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text[:200]


async def fetch_text(session: aiohttp.ClientSession, url: str, headers: dict[str, str]) -> str:
    async with session.get(url, headers=headers, allow_redirects=False) as resp:
        if resp.status != 200:
            raise HTTPStatus(f"HTTP {resp.status}")
        chunks, size = [], 0
        async for chunk in resp.content.iter_chunked(1 << 16):
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise BadExposition(f"body larger than {MAX_BODY_BYTES >> 20} MiB: not a vLLM /metrics page")
            chunks.append(chunk)
    try:
        return b"".join(chunks).decode("utf-8")
    except UnicodeDecodeError:
        raise BadExposition("body is not UTF-8 text") from None


async def scrape_one(session: aiohttp.ClientSession, target: Target) -> ScrapeResult:
    """Fetch and parse one target; ``timeout_s`` covers both (a page that parses for longer is a failed scrape)."""
    ts = time.time()
    t0 = time.monotonic()
    deadline = t0 + target.timeout_s
    try:
        text = await asyncio.wait_for(fetch_text(session, target.url, headers_for(target)), target.timeout_s)
        # Parsed in a worker thread: a page that takes seconds to parse must not hold up the event loop, where
        # the other targets' fetches and timeouts run. The parser itself stops at the deadline (a thread
        # cannot be cancelled from outside).
        sample = await asyncio.to_thread(parse, text, deadline=deadline)
        return ScrapeResult(target, ts, sample, elapsed_s=time.monotonic() - t0)
    except TimeoutError:
        why = f"no complete answer within {target.timeout_s:g} s"
    except ParseDeadline as exc:
        why = f"no complete answer within {target.timeout_s:g} s ({exc})"
    except HTTPStatus as exc:
        why = str(exc)
    except aiohttp.ClientError as exc:
        why = f"{type(exc).__name__}: {_one_line(exc)}"
    except (BadExposition, ssl.SSLError, OSError) as exc:
        why = _one_line(exc)
    return ScrapeResult(target, ts, None, error=why, elapsed_s=time.monotonic() - t0)


class Scraper:
    """A pool of HTTP clients (one per TLS setting) reused across scrape rounds."""

    def __init__(self) -> None:
        self._clients: dict[str, aiohttp.ClientSession] = {}

    def _client(self, target: Target) -> aiohttp.ClientSession:
        # aiohttp rather than httpx here: httpx's connection pool costs O(connections) per request, which at
        # 100 concurrent scrapes was most of a round's CPU (benchmarks/watch_overhead.py).
        key = repr(target.verify)
        if key not in self._clients:
            verify = verify_for(target)
            # trust_env=False: no proxy or .netrc credentials from the environment between us and a fleet
            self._clients[key] = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(limit=256, ssl=verify if verify is not True else None),
                timeout=aiohttp.ClientTimeout(total=None), trust_env=False, auto_decompress=True)
        return self._clients[key]

    async def scrape(self, targets: list[Target]) -> list[ScrapeResult]:
        return list(await asyncio.gather(*(scrape_one(self._client(t), t) for t in targets)))

    async def aclose(self) -> None:
        for c in self._clients.values():
            await c.close()
        self._clients.clear()
