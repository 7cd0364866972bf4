"""Constructed request logs for analysis and dashboard tests: one JSON line per request, each response carrying
``metrics.speculative_decoding`` in vLLM 0.32's shape (vllm/v1/metrics/stats.py ``RequestSpecDecodeMetrics``:
histogram of accepted drafts per verify step, its sum the steps, Σ j·h[j] the accepted tokens)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.analysis.production.fleet import T0, _alpha_for_rate


def response(hist: list[int], k: int, *, drafted: int | None = None, completion: int = 200, created: int = 0) -> dict:
    steps = sum(hist)
    accepted = sum(j * h for j, h in enumerate(hist))
    drafted = steps * k if drafted is None else drafted
    return {"id": "cmpl-x", "object": "text_completion", "created": created, "model": "m",
            "choices": [{"index": 0, "text": "…", "finish_reason": "length"}],
            "usage": {"prompt_tokens": 500, "completion_tokens": completion, "total_tokens": 500 + completion},
            "metrics": {"speculative_decoding": {
                "mean_acceptance_length": 1 + accepted / steps if steps else 1.0,
                "draft_acceptance_rate": accepted / drafted if drafted else 0.0,
                "acceptance_histogram": hist, "num_spec_steps": steps, "num_accepted_draft_tokens": accepted,
                "num_draft_tokens": drafted, "num_spec_tokens": k}}}


def lines(labels: dict[str, str], rate: float, k: int, *, n: int = 60, steps: int = 60, seed: int = 0,
          start: float = T0, gap_s: float = 10.0) -> list[dict]:
    """n requests whose draft positions each accept with an i.i.d. α giving acceptance ``rate`` (= E[j]/k)."""
    rng = np.random.default_rng(seed)
    alpha = _alpha_for_rate(rate, k)
    out = []
    for i in range(n):
        ok = rng.random((steps, k)) < alpha
        j = np.where(ok.all(axis=1), k, ok.argmin(axis=1))  # accepted drafts = the run of successes from 1
        hist = np.bincount(j, minlength=k + 1).tolist()
        out.append({"ts": start + i * gap_s, "labels": labels, "response": response(hist, k)})
    return out


def write(path: Path, rows: list[dict]) -> Path:
    rows = sorted(rows, key=lambda r: r["ts"])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
