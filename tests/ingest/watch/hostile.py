"""Hostile exposition pages for the watch's memory and time bounds, served by the tests' own HTTP server on
127.0.0.1 (tests/ingest/watch/faults.py): a vLLM-shaped page whose counters grow every scrape, plus series
the watch must not let grow it — fresh long labels every scrape, many series, a series with many labels."""

from __future__ import annotations

from tests.ingest.watch.faults import exposition


def counters(n: int) -> str:
    """The n-th scrape of a well-behaved vLLM server (spec-decode counters growing by one step each scrape)."""
    return exposition(100 * (n + 1), [60 * (n + 1), 40 * (n + 1), 20 * (n + 1)])


def fresh_long_labels(n: int, salt: str, *, series: int, label_chars: int) -> str:
    """``series`` prompt-token series whose labels (``label_chars`` long) were never sent before: new each scrape."""
    pad = "x" * label_chars
    return "".join(f'vllm:prompt_tokens_total{{tenant="{salt}-{n}-{i}-{pad}"}} 1\n' for i in range(series))


def many_series(count: int, salt: str) -> str:
    """``count`` short prompt-token series (one per tenant): cheap to send, ~50 us each to parse."""
    return "".join(f'vllm:prompt_tokens_total{{tenant="{salt}{i}",route="r{i}"}} 1\n' for i in range(count))


def many_labels(count: int) -> str:
    """One prompt-token series with ``count`` labels."""
    return "vllm:prompt_tokens_total{" + ",".join(f'a{i}="v{i}"' for i in range(count)) + "} 1\n"
