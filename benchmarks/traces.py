"""Synthetic traffic traces for benchmarks: realistic Azure-shaped CSV or Parquet of n requests, fast.

Owns one thing: :func:`make_trace`, the generator ``benchmarks/run.py`` and the re-scoring tests use
to build large traces (1 M-row CSV, 10 M-row Parquet) in seconds. Everything is vectorised numpy +
polars (no per-row Python). Shapes follow the public Azure LLM inference traces (2023 release):

* ``code``: context tokens lognormal, median ~1,900 (long files as context), generated median ~15
  (completions are short); ``chat`` (the "conv" file): context median ~1,000, generated median ~130;
* arrivals are a Poisson process whose rate follows a daily-ish sine (peak/trough ≈ 2), ~5 req/s;
* ``fmt="csv"`` writes ``TIMESTAMP,ContextTokens,GeneratedTokens`` with 2023's 7-digit fractions;
  ``fmt="parquet"`` writes a generic trace (``timestamp`` Datetime, ``input_tokens``,
  ``output_tokens``, ``workload``) that the generic Parquet reader maps by well-known names.

    python benchmarks/traces.py N PATH [--format csv|parquet] [--workload code|chat|mixed]
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

import numpy as np
import polars as pl

START = datetime(2023, 11, 16, 18, 15, 0)
SHAPES = {  # workload -> (context median, context sigma, generated median, generated sigma)
    "code": (1900.0, 0.9, 15.0, 1.1),
    "chat": (1000.0, 0.8, 130.0, 0.9),
}
MEAN_RATE = 5.0  # requests per second, about the Azure 2023 hour


def _lengths(rng: np.random.Generator, median: float, sigma: float, n: int, hi: int) -> np.ndarray:
    return np.clip(np.round(median * rng.lognormal(0.0, sigma, n)), 1, hi).astype(np.int32)


def _arrivals(rng: np.random.Generator, n: int, rate: float) -> np.ndarray:
    """Seconds from the start: exponential gaps, rate modulated by a slow sine (a day's swing)."""
    gaps = rng.exponential(1.0 / rate, n)
    t = np.cumsum(gaps)
    swing = 1.0 + 0.33 * np.sin(2 * np.pi * t / 86_400.0)
    return np.cumsum(gaps / swing)


def make_frame(n: int, workload: str = "mixed", seed: int = 0) -> pl.DataFrame:
    """n requests: arrival seconds, input/output tokens and workload (``mixed``: ~half code, half chat)."""
    rng = np.random.default_rng(seed)
    if workload == "mixed":
        is_code = rng.random(n) < 0.5
    elif workload in SHAPES:
        is_code = np.full(n, workload == "code")
    else:
        raise ValueError(f"workload must be code, chat or mixed, got {workload!r}")
    cm, cs, gm, gs = SHAPES["code"]
    vm, vs, hm, hs = SHAPES["chat"]
    ctx = np.where(is_code, _lengths(rng, cm, cs, n, 30_000), _lengths(rng, vm, vs, n, 30_000))
    gen = np.where(is_code, _lengths(rng, gm, gs, n, 4_000), _lengths(rng, hm, hs, n, 4_000))
    return pl.DataFrame({
        "arrival_s": _arrivals(rng, n, MEAN_RATE),
        "input_tokens": ctx.astype(np.int32),
        "output_tokens": gen.astype(np.int32),
        "workload": np.where(is_code, "code", "chat"),
    })


def make_trace(n: int, path: str | Path, fmt: str = "csv", *, workload: str = "mixed", seed: int = 0) -> Path:
    """Write an Azure-shaped trace of ``n`` requests to ``path`` (``fmt`` csv or parquet); returns the path."""
    path = Path(path)
    df = make_frame(n, workload, seed)
    stamp = pl.lit(START) + pl.duration(microseconds=(pl.col("arrival_s") * 1e6).cast(pl.Int64))
    if fmt == "csv":
        # Azure 2023 prints 7 fractional digits: microseconds plus a trailing 0.
        out = df.select(
            (stamp.dt.strftime("%Y-%m-%d %H:%M:%S.%6f") + pl.lit("0")).alias("TIMESTAMP"),
            pl.col("input_tokens").alias("ContextTokens"),
            pl.col("output_tokens").alias("GeneratedTokens"),
        )
        out.write_csv(path)
    elif fmt == "parquet":
        df.select(stamp.alias("timestamp"), "input_tokens", "output_tokens", "workload").write_parquet(path)
    else:
        raise ValueError(f"fmt must be csv or parquet, got {fmt!r}")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("n", type=int)
    ap.add_argument("path", type=Path)
    ap.add_argument("--format", default="csv", choices=["csv", "parquet"])
    ap.add_argument("--workload", default="mixed", choices=["code", "chat", "mixed"])
    args = ap.parse_args(argv)
    make_trace(args.n, args.path, args.format, workload=args.workload)
    print(args.path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
