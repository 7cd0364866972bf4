"""Steady-state throughput: a cell's output tokens per second over the time its load holds its concurrency.

``vllm bench serve`` divides output tokens by the whole window (first send to last finish). At high
concurrency that window includes the ramp-up (slots filling) and the wind-down (the last requests draining
on ever fewer slots, while the GPU batch shrinks), so the figure depends on how many requests a cell ran.
The steady figure leaves both out (docs/metrics.md):

* A request is *in flight* from its send (``start_s``) to its last token (``start_s + e2e``). The **steady
  window** is the set of moments at which at least ``concurrency`` requests are in flight. For a closed loop
  it is one interval: from the send that fills the last slot to the first finish after the last send.
  Moments with a slot idle — ramp-up, wind-down, the drain between adaptive batches, a gap while a client
  sends the next request — are not part of it.
* Tokens in the window: a request's first token counts when it arrives inside the window; its other
  ``output_tokens − 1`` are spread evenly over its decode time (first token to last) and count by the share
  of that time inside the window. Failed requests occupy their slot and add no tokens.
* ``steady_output_throughput`` = tokens in the window / length of the window (``steady_window_s``).
  ``steady_requests`` counts requests that spent more than half their time in flight inside the window.
* At concurrency 1 every moment a request is in flight is steady (nothing to ramp or drain): the figure is
  the whole-window one minus the gaps between requests.
* **Fallback**: with no per-request start times, when the load never had ``concurrency`` requests in flight,
  when fewer than :data:`MIN_REQUESTS` requests lie in the window, or when the window is shorter than
  :data:`MIN_SHARE` of the whole window, the whole-window figure stands in and ``steady_fallback`` says why
  (it is null when the steady figure is the window's own).

Replicates: the whole-window replicates rescaled to the steady point (see :func:`replicates`): both figures
are the slots times a per-slot token rate, whose resampled value the whole-window replicates carry, together
with anything else they carry (the simulator's model uncertainty). A fallback cell's replicates are its
whole-window replicates. :func:`exact_replicates` (the bootstrap of the window's own ratio) validates them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from ingest import cellstats

MIN_REQUESTS = 20  # fewer requests in the window than this: the whole-window figure stands in
MIN_SHARE = 0.25  # a window shorter than this share of the whole window: the whole-window figure stands in
COLUMNS = ("steady_output_throughput", "steady_output_throughput_per_gpu", "steady_window_s", "steady_requests",
           "steady_fallback")
_SEED_SALT = 0x57EAD  # exact_replicates draws its own weights (independent of the other metrics')


@dataclass(slots=True)
class Window:
    """Per request (rows with a start and an e2e): tokens and seconds inside the steady window."""

    tokens_in: np.ndarray
    seconds_in: np.ndarray
    window_s: float  # length of the steady window
    whole_s: float  # first send to last finish
    requests_in: int
    fallback: str | None


def measure(start_s: np.ndarray, e2e_ms: np.ndarray, ttft_ms: np.ndarray, output_tokens: np.ndarray,
            ok: np.ndarray, concurrency: int) -> Window:
    """The steady window of one cell's requests (all of them, failed ones included: they hold a slot)."""
    start = np.asarray(start_s, dtype=float)
    e2e = np.asarray(e2e_ms, dtype=float)
    keep = np.isfinite(start) & np.isfinite(e2e) & (e2e >= 0)
    empty = np.zeros(0)
    if not keep.any():
        return Window(empty, empty, 0.0, 0.0, 0, "no per-request start times")
    s = start[keep]
    e = s + e2e[keep] / 1e3
    ttft = np.asarray(ttft_ms, dtype=float)[keep]
    first = np.where(np.isfinite(ttft), np.minimum(s + np.clip(ttft, 0.0, None) / 1e3, e), s)
    good = np.asarray(ok, dtype=bool)[keep]
    out = np.where(good, np.nan_to_num(np.asarray(output_tokens, dtype=float)[keep], nan=0.0), 0.0)
    # in-flight count between events; at a tie a finish is applied before a send (a slot handed straight on)
    times = np.concatenate([e, s])
    steps = np.concatenate([-np.ones(e.size), np.ones(s.size)])
    order = np.lexsort((steps, times))
    times, steps = times[order], steps[order]
    busy = (np.cumsum(steps) >= max(1, int(concurrency))).astype(float)  # on [times[k], times[k+1])
    cum = np.concatenate([[0.0], np.cumsum(busy[:-1] * np.diff(times))])  # busy seconds up to times[k]
    whole = float(e.max() - s.min())
    window = float(cum[-1])

    def busy_until(t: np.ndarray) -> np.ndarray:
        return np.interp(t, times, cum)

    seconds_in = busy_until(e) - busy_until(s)
    decode = e - first
    with np.errstate(invalid="ignore", divide="ignore"):
        decode_share = np.where(decode > 0, (busy_until(e) - busy_until(first)) / decode, 0.0)
    first_in = busy[np.clip(np.searchsorted(times, first, side="right") - 1, 0, busy.size - 1)]
    # a request with no decode time (one token, or all at once) delivers all its tokens with the first
    tokens_in = np.where(decode > 0, first_in * np.minimum(out, 1.0) + np.maximum(out - 1.0, 0.0) * decode_share,
                         first_in * out)
    requests_in = int((seconds_in > 0.5 * (e - s)).sum())
    fallback = None
    if window <= 0:
        fallback = f"concurrency {concurrency} never reached"
    elif requests_in < MIN_REQUESTS:
        fallback = f"{requests_in} requests in the steady window (fewer than {MIN_REQUESTS})"
    elif whole > 0 and window < MIN_SHARE * whole:
        fallback = f"steady window {window / whole:.0%} of the whole window (less than {MIN_SHARE:.0%})"
    return Window(tokens_in, seconds_in, window, whole, requests_in, fallback)


def _window_of(requests: pl.DataFrame, concurrency: int | None) -> Window:
    if requests.height == 0 or "start_s" not in requests.columns or concurrency is None:
        empty = np.zeros(0)
        why = ("no per-request start times" if requests.height == 0 or "start_s" not in requests.columns
               else "load not stated")
        return Window(empty, empty, 0.0, 0.0, 0, why)

    if "request_index" in requests.columns and not requests["request_index"].is_sorted():
        requests = requests.sort("request_index", maintain_order=True)  # replicates follow request order

    def col(name: str) -> np.ndarray:
        return requests[name].cast(pl.Float64).fill_null(np.nan).to_numpy()

    ok = requests["ok"].fill_null(True).to_numpy() if "ok" in requests.columns else np.ones(requests.height, bool)
    return measure(col("start_s"), col("e2e_ms"), col("ttft_ms"), col("output_tokens"), ok, concurrency)


def values(requests: pl.DataFrame, *, concurrency: int | None, gpu_count: int, whole_window: float | None
           ) -> tuple[dict[str, float | int | str | None], Window]:
    """The cell's steady columns (see :data:`COLUMNS`) and the window they came from."""
    w = _window_of(requests, concurrency)
    steady = float(w.tokens_in.sum() / w.window_s) if w.fallback is None else whole_window
    out: dict[str, float | int | str | None] = {
        "steady_output_throughput": steady,
        "steady_output_throughput_per_gpu": steady / gpu_count if steady is not None and gpu_count > 0 else None,
        "steady_window_s": w.window_s if w.whole_s > 0 else None,
        "steady_requests": w.requests_in,
        "steady_fallback": w.fallback,
    }
    return out, w


def replicates(fallback: str | None, point: float | None, whole_point: float | None, whole_replicates: np.ndarray
               ) -> np.ndarray:
    """Replicates of the steady figure ``point``: the whole-window replicates rescaled to it.

    Both figures are a per-slot token rate times the slots; a replicate of the whole-window figure is its point
    times the resampled rate Σw·tokens / Σw·e2e over the requests, so the steady figure's replicate is the steady
    point times the same factor. The steady window holds most requests whole, so this matches the bootstrap of
    the window's own ratio (:func:`exact_replicates`; interval widths within ~15 %, tests/ingest/test_steady.py),
    and whatever else the whole-window replicates carry (e.g. the simulator's model uncertainty, paired across a
    group) carries over. A fallback cell's replicates are its whole-window replicates."""
    whole = np.asarray(whole_replicates, dtype=float)
    if fallback is not None or point is None or not whole_point:
        return whole.copy()
    return point * whole / whole_point


def exact_replicates(w: Window, point: float, *, seed: int, replicates: int = cellstats.BOOTSTRAP_REPLICATES,
                     exact: bool | None = None) -> np.ndarray:
    """The Poisson bootstrap of the window's own ratio Σw·tokens_in / Σw·seconds_in (validates :func:`replicates`):
    exact weights up to ``cellstats.EXACT_MAX_N`` requests, the normal limit above."""
    x = np.vstack([w.tokens_in, w.seconds_in])
    n = x.shape[1]
    exact = n <= cellstats.EXACT_MAX_N if exact is None else exact
    rng = np.random.default_rng([seed, _SEED_SALT])
    if exact:
        sums = np.einsum("kn,nb->kb", x, cellstats.poisson1(rng, (n, replicates)).astype(np.float64))
    else:
        sums = cellstats._normal_sums(x, rng, replicates)
    base = x[0].sum() / x[1].sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        return point * (sums[0] / sums[1]) / base


def cell(requests: pl.DataFrame, *, concurrency: int | None, gpu_count: int, whole_window: float | None,
         whole_replicates: np.ndarray | None, replicated_point: float | None
         ) -> tuple[dict[str, float | int | str | None], np.ndarray]:
    """A landing cell's steady columns and its replicates (``whole_replicates`` None: no replicates;
    ``replicated_point``: the whole-window figure those replicates were drawn around)."""
    vals, w = values(requests, concurrency=concurrency, gpu_count=gpu_count, whole_window=whole_window)
    if whole_replicates is None:
        return vals, np.zeros(0)
    point = vals["steady_output_throughput"]
    return vals, replicates(w.fallback, point if isinstance(point, float) else None, replicated_point,
                            whole_replicates)
