"""A cell's stored metrics and bootstrap replicates, derived from its samples when the cell lands.

Every writer (sim runner, vLLM runner, importers) goes through here, so every row in ``cells`` follows
the same definitions — vLLM's own (see docs/metrics.md):

* acceptance rate  = accepted draft tokens / drafted tokens — from vLLM's per-request spec-decode metrics
  summed over the cell's requests when every successful request carries them (``acceptance_source`` =
  per-request, with bootstrap intervals and a cross-check against the counters), else the /metrics counter
  deltas over the cell (``counters``, no interval)
* acceptance length τ = 1 + accepted / drafts (verify steps); per-position r_i = accepted_at_i / drafts
* output throughput = output tokens of successful requests / measured window (s)
* TPOT = (e2e − TTFT)/(output tokens − 1); p50/p90/p99 by linear interpolation (numpy's default,
  as ``vllm bench serve`` computes them)

Bootstrap: ``B`` Poisson-weighted replicates over the cell's successful requests, seeded by the cell id so
replicates are reproducible. Throughput replicates rescale the point estimate by the resampled
tokens-per-second of requests (Σw·tokens / Σw·e2e), the ratio estimator for a closed-loop load.
Simulated cells also carry model-draw factors (table ``model_draws``): replicate j is multiplied by draw j's
factor (:func:`apply_model_factors`), so their intervals hold the model's error, not only its dice.
Acceptance replicates need per-request drafted/accepted counts; without them they stay null and the
winner rule will not call such a difference clear. Up to ``EXACT_MAX_N`` requests the bootstrap is exact
(one weight per request and replicate); bigger cells (bulk imports) use an O(n) scheme — exact-in-distribution
p99s, normal-limit sums — validated against the exact one (docs/metrics.md, tests/ingest/test_bootstrap.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from ingest.records import SpecCounters

BOOTSTRAP_REPLICATES = 200
PERCENTILES = (50, 90, 99)


@dataclass(slots=True)
class CellMetrics:
    values: dict[str, float | int | None]
    positions: list[float]  # r_i for i = 1..k


def _pct(values: np.ndarray, q: float) -> float | None:
    values = values[np.isfinite(values)]
    return float(np.percentile(values, q)) if values.size else None


def _nz(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


def _mean(arr: np.ndarray) -> float | None:
    """Mean of the finite samples; None when there are none (an imported file may carry only NaNs)."""
    finite = arr[np.isfinite(arr)]
    return float(finite.mean()) if finite.size else None


def derive(
    requests: pl.DataFrame,
    *,
    depth: int,
    window_s: float | None,
    gpu_count: int,
    counters: SpecCounters | None = None,
    itl_ms: np.ndarray | None = None,
) -> CellMetrics:
    """Headline metrics of one cell from its per-request samples (and counter deltas when measured)."""
    ok = requests.filter(pl.col("ok").fill_null(True)) if requests.height else requests
    out_tokens = ok["output_tokens"].cast(pl.Float64).to_numpy() if ok.height else np.zeros(0)
    ttft = ok["ttft_ms"].cast(pl.Float64).to_numpy() if ok.height else np.zeros(0)
    tpot = ok["tpot_ms"].cast(pl.Float64).fill_null(np.nan).to_numpy() if ok.height else np.zeros(0)
    e2e = ok["e2e_ms"].cast(pl.Float64).to_numpy() if ok.height else np.zeros(0)
    total_out = float(np.nansum(out_tokens))
    window = float(window_s) if window_s and window_s > 0 else None
    v: dict[str, float | int | None] = {
        "n_requests": int(requests.height),
        "n_failed": int(requests.height - ok.height),
        "window_s": window,
        "gpu_count": int(gpu_count),
        "output_tokens": total_out,
        "output_throughput": total_out / window if window else None,
        "request_throughput": ok.height / window if window else None,
        "mean_ttft_ms": _mean(ttft),
        "mean_tpot_ms": _mean(tpot),
        "mean_e2e_ms": _mean(e2e),
    }
    v["output_throughput_per_gpu"] = (
        v["output_throughput"] / gpu_count if v["output_throughput"] is not None and gpu_count > 0 else None
    )
    itl = np.asarray(itl_ms, dtype=float) if itl_ms is not None else np.zeros(0)
    for name, arr in (("ttft_ms", ttft), ("tpot_ms", tpot), ("itl_ms", itl), ("e2e_ms", e2e)):
        for q in PERCENTILES:
            v[f"p{q}_{name}"] = _pct(arr, q)

    positions: list[float] = []
    drafts = draft_tokens = accepted = None
    source: str | None = None
    sums = per_request_sums(ok) if depth > 0 else None
    if sums is not None and sums.steps > 0:
        drafts, draft_tokens, accepted = sums.steps, sums.drafted, sums.accepted
        positions = [a / sums.steps for a in sums.accepted_per_pos]
        source = "per-request"
    elif counters is not None and counters.drafts > 0:
        source = "counters"
        drafts, draft_tokens, accepted = counters.drafts, counters.draft_tokens, counters.accepted_tokens
        positions = [a / counters.drafts for a in counters.accepted_per_pos]
    elif depth > 0 and ok.height and ok["drafted_tokens"].null_count() < ok.height:
        draft_tokens = float(ok["drafted_tokens"].sum())
        accepted = float(ok["accepted_tokens"].sum())
        drafts = draft_tokens / depth if draft_tokens else None
        source = "per-request"
    v["drafts"], v["draft_tokens"], v["accepted_tokens"] = drafts, draft_tokens, accepted
    v["acceptance_source"] = source if accepted is not None else None
    if counters is not None and depth > 0:
        v["counter_drafts"], v["counter_draft_tokens"] = counters.drafts, counters.draft_tokens
        v["counter_accepted_tokens"] = counters.accepted_tokens
    v["acceptance_checked"], v["acceptance_suspect"] = cross_check(requests, sums, counters) if depth > 0 else (
        None, None)
    v["acceptance_rate"] = accepted / draft_tokens if draft_tokens else None
    v["acceptance_length"] = 1.0 + accepted / drafts if drafts else None
    return CellMetrics(values=v, positions=positions)


# Poisson(1) weights by inverse CDF from 32-bit uniforms: weight = #{k : u ≥ 2³²·F(k−1)}, F the Poisson(1) CDF.
# Exact up to the 2⁻³² resolution of the thresholds (P(weight > 12) ≈ 6·10⁻¹¹ is dropped), ~5× faster than
# Generator.poisson; only the rare u past the 7th threshold are resolved by a search.
_POISSON_CDF = np.cumsum([math.exp(-1.0) / math.factorial(k) for k in range(13)])
_THRESHOLDS = np.array([round(c * 2.0**32) for c in _POISSON_CDF[:12]], dtype=np.uint64).astype(np.uint32)
_DENSE = 6  # thresholds tested on every draw; P(weight ≥ 7) ≈ 8·10⁻⁵

EXACT_MAX_N = 4096  # above this many requests a cell uses the large-n scheme (docs/metrics.md)
QUANTILE = 0.99
TAIL_SDS = 6.0  # the p99 window reaches this many bootstrap SDs of the quantile's rank below it
METRIC_KEYS = ("output_throughput", "p99_e2e_ms", "p99_tpot_ms", "p99_ttft_ms", "acceptance_rate", "acceptance_length")


def poisson1(rng: np.random.Generator, shape: int | tuple[int, ...]) -> np.ndarray:
    """Independent Poisson(1) draws (uint8)."""
    u = rng.integers(0, 1 << 32, size=shape, dtype=np.uint32)
    w = np.zeros(u.shape, dtype=np.uint8)
    for t in _THRESHOLDS[:_DENSE]:
        w += u >= t
    rare = np.flatnonzero(u >= _THRESHOLDS[_DENSE])
    if rare.size:
        w.flat[rare] = np.searchsorted(_THRESHOLDS, u.flat[rare], side="right")
    return w


def _window_size(n: int, q: float) -> tuple[int, int]:
    """(h, k): a weighted q-quantile under Poisson(1) weights lies among the k = n − h largest of n values unless
    the rank falls ``TAIL_SDS`` bootstrap SDs (√(n·q·(1−q))) below its mean."""
    k = min(n, max(1, math.ceil(n * (1 - q) + TAIL_SDS * math.sqrt(n * q * (1 - q)) + 8)))
    return n - k, k


def _window(vals: np.ndarray, q: float) -> tuple[int, np.ndarray]:
    """Head size h and the indices of the n − h largest values, ascending (see :func:`_window_size`)."""
    n = vals.size
    _, k = _window_size(n, q)
    if k == n:
        return 0, np.argsort(vals, kind="stable")
    part = np.argpartition(vals, n - k)[n - k:]
    return n - k, part[np.argsort(vals[part], kind="stable")]


def _window_quantile(tail: np.ndarray, head_w: np.ndarray, win_w: np.ndarray, q: float
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Per replicate (rows): the weighted q-quantile when it lies in the window, and where it does not.

    ``tail`` are the window's values ascending, ``win_w`` (B × k) their weights, ``head_w`` the total weight
    below. The quantile is the first value whose cumulative weight reaches q·total (numpy's inverted-CDF rule,
    as ``vllm bench serve``); it lies in the window exactly when the head's cumulative weight is below that.
    """
    cum = np.cumsum(win_w, axis=1, dtype=np.int64)
    cum += head_w[:, None]
    total = cum[:, -1]
    target = q * total
    idx = (cum < target[:, None]).sum(axis=1)
    out = tail[np.minimum(idx, tail.size - 1)].astype(float)
    out[total == 0] = np.nan
    return out, (head_w >= target) & (total > 0)


def _weighted_quantile(sorted_vals: np.ndarray, weights_sorted: np.ndarray, q: float) -> np.ndarray:
    """Per replicate (rows of weights, columns in value order), the q-quantile of ``sorted_vals``."""
    zero = np.zeros(weights_sorted.shape[0], dtype=np.int64)
    return _window_quantile(sorted_vals, zero, weights_sorted, q)[0]


def _exact_quantile(vals: np.ndarray, w: np.ndarray, total: np.ndarray, q: float) -> np.ndarray:
    """Weighted q-quantile with every request's weights ``w`` (n × B) drawn: only the window is summed."""
    _, idx = _window(vals, q)
    win_w = np.ascontiguousarray(w[idx].T)
    out, bad = _window_quantile(vals[idx], total - win_w.sum(axis=1, dtype=np.int64), win_w, q)
    if bad.any():  # the quantile fell into the head: sum everything for those replicates
        order = np.argsort(vals, kind="stable")
        out[bad] = _weighted_quantile(vals[order], np.ascontiguousarray(w[order][:, bad].T), q)
    return out


def _tail_quantile(vals: np.ndarray, rng: np.random.Generator, replicates: int, q: float) -> np.ndarray:
    """The weighted q-quantile under Poisson(1) weights, exact in distribution, from 2 draws per replicate.

    Poisson weights are a Poissonised resample: N ~ Poisson(n) requests drawn uniformly with replacement. The
    quantile (the first value whose cumulative weight reaches q·N) is then the m-th smallest of N uniform
    positions, m = ⌈q·N⌉, i.e. position ⌊n·U⌋ with U ~ Beta(m, N − m + 1). Only values in the upper window
    are sorted; a position below it (probability < 10⁻⁹ at ``TAIL_SDS`` = 6) looks into a full sort.
    """
    n = vals.size
    total = rng.poisson(float(n), replicates)
    out = np.full(replicates, np.nan)
    drawn = total > 0
    m = np.ceil(q * total[drawn])
    pos = np.minimum((n * rng.beta(m, total[drawn] - m + 1)).astype(np.int64), n - 1)
    h, _ = _window_size(n, q)
    tail = np.sort(np.partition(vals, h)[h:]) if h else np.sort(vals)
    found = np.empty(pos.size)
    inside = pos >= h
    found[inside] = tail[pos[inside] - h]
    if not inside.all():
        found[~inside] = np.sort(vals)[pos[~inside]]
    out[drawn] = found
    return out


def _normal_sums(x: np.ndarray, rng: np.random.Generator, replicates: int) -> np.ndarray:
    """Replicates (columns) of Σ w·x for each row of ``x`` under Poisson(1) weights, by their normal limit.

    Mean Σx and covariance Σ x xᵀ are the bootstrap's exact first two moments; for n > ``EXACT_MAX_N`` the
    resulting percentile intervals match the exact bootstrap (validated in tests/ingest/test_bootstrap.py).
    """
    lam, vec = np.linalg.eigh(np.einsum("in,jn->ij", x, x))
    root = vec * np.sqrt(np.clip(lam, 0.0, None))
    return x.sum(axis=1)[:, None] + np.einsum("ij,jb->ib", root, rng.standard_normal((x.shape[0], replicates)))


def bootstrap_arrays(
    cols: dict[str, np.ndarray], point_tput: float | None, *, depth: int, seed: int,
    replicates: int = BOOTSTRAP_REPLICATES, exact: bool | None = None,
) -> dict[str, np.ndarray]:
    """Poisson-bootstrap replicates from one cell's successful requests as float arrays.

    ``cols`` holds output_tokens (nulls as 0), e2e_ms, ttft_ms, tpot_ms, drafted_tokens, accepted_tokens
    (nulls as NaN). Up to ``EXACT_MAX_N`` requests (or ``exact=True``) every replicate draws one weight per
    request and all metrics share them; above, sums use their normal limit and p99s the exact tail window.
    """
    nan = np.full(replicates, np.nan)
    tokens, e2e = cols["output_tokens"], cols["e2e_ms"]
    n = tokens.size
    if n == 0:
        return {k: nan.copy() for k in METRIC_KEYS}
    exact = n <= EXACT_MAX_N if exact is None else exact
    rng = np.random.default_rng(seed)
    finite = np.isfinite(e2e)
    drafted = cols["drafted_tokens"] if depth > 0 else None
    has_acc = drafted is not None and bool(np.isfinite(drafted).all()) and drafted.sum() > 0
    x = np.zeros((4 if has_acc else 2, n))  # the summed quantities, one row each
    x[0], x[1] = np.where(finite, tokens, 0.0), np.where(finite, e2e, 0.0)
    if has_acc:
        x[2], x[3] = drafted, np.nan_to_num(cols["accepted_tokens"], nan=0.0)
    w = poisson1(rng, (n, replicates)) if exact else None  # one row of weights per request
    # einsum, not BLAS: these products are small, and a threaded BLAS spins against a busy machine's other work
    sums = np.einsum("kn,nb->kb", x, w.astype(np.float64)) if w is not None else _normal_sums(x, rng, replicates)
    out: dict[str, np.ndarray] = {}
    if point_tput is not None and finite.any():
        base = x[0].sum() / x[1].sum()
        with np.errstate(invalid="ignore", divide="ignore"):
            out["output_throughput"] = point_tput * (sums[0] / sums[1]) / base
    else:
        out["output_throughput"] = nan.copy()
    total = w.sum(axis=0, dtype=np.int64) if w is not None else None
    for col, key in (("e2e_ms", "p99_e2e_ms"), ("tpot_ms", "p99_tpot_ms"), ("ttft_ms", "p99_ttft_ms")):
        vals = cols[col]
        keep = np.isfinite(vals)
        if not keep.any():
            out[key] = nan.copy()
        elif w is not None and total is not None:
            all_rows = bool(keep.all())
            wk = w if all_rows else w[keep]
            out[key] = _exact_quantile(vals[keep], wk, total if all_rows else wk.sum(axis=0, dtype=np.int64),
                                       QUANTILE)
        else:
            out[key] = _tail_quantile(vals[keep], rng, replicates, QUANTILE)
    if has_acc:
        with np.errstate(invalid="ignore", divide="ignore"):
            out["acceptance_rate"] = sums[3] / sums[2]
            out["acceptance_length"] = 1.0 + sums[3] / (sums[2] / depth)
    else:
        out["acceptance_rate"] = nan.copy()
        out["acceptance_length"] = nan.copy()
    return out


# ---- per-request acceptance (vLLM's per-request spec-decode metrics) -----------------------------------------

@dataclass(slots=True)
class AcceptanceSums:
    """Per-request spec-decode metrics summed over a cell's successful requests."""

    steps: int
    drafted: int
    accepted: int
    accepted_per_pos: list[int]
    requests: int


def _spec_rows(ok: pl.DataFrame) -> pl.DataFrame | None:
    """The successful requests' spec columns when every one carries per-request metrics, else None."""
    if ok.height == 0 or "spec_steps" not in ok.columns or ok["spec_steps"].null_count() > 0:
        return None
    return ok.select("spec_steps", "drafted_tokens", "accepted_tokens", "accepted_per_pos")


def _pos_matrix(rows: pl.DataFrame) -> np.ndarray:
    """Requests × positions accepted counts (a request whose histogram is shorter has zeros beyond it)."""
    lists = rows["accepted_per_pos"].to_list()
    width = max((len(x) for x in lists if x), default=0)
    out = np.zeros((len(lists), width))
    for i, x in enumerate(lists):
        if x:
            out[i, : len(x)] = x
    return out


def per_request_sums(ok: pl.DataFrame) -> AcceptanceSums | None:
    rows = _spec_rows(ok)
    if rows is None:
        return None
    pos = _pos_matrix(rows).sum(axis=0)
    return AcceptanceSums(steps=int(rows["spec_steps"].sum()), drafted=int(rows["drafted_tokens"].fill_null(0).sum()),
                          accepted=int(rows["accepted_tokens"].fill_null(0).sum()),
                          accepted_per_pos=[int(x) for x in pos], requests=rows.height)


def cross_check(requests: pl.DataFrame, sums: AcceptanceSums | None, counters: SpecCounters | None
                ) -> tuple[bool | None, str | None]:
    """(checked, suspect reason): the per-request sums against the /metrics counter deltas of the same window.

    They count the same verify steps (vLLM's scheduler feeds both), so they agree exactly — unless something
    else ran on the server in the window (another client of an attached endpoint), a counter was reset, or some
    requests' metrics went missing. Failed requests drafted without reporting: then the sums may only be lower.
    No check (None, None) without both sources."""
    if counters is None:
        return None, None
    ok = requests.filter(pl.col("ok").fill_null(True)) if requests.height else requests
    have = int(ok["spec_steps"].is_not_null().sum()) if ok.height and "spec_steps" in ok.columns else 0
    if sums is None:
        if have == 0:
            return None, None  # the server sent no per-request metrics at all: counters are the only source
        return True, f"{ok.height - have} of {ok.height} successful requests carried no per-request metrics"
    n_failed = requests.height - ok.height
    pairs = [("verify steps", sums.steps, counters.drafts), ("drafted tokens", sums.drafted, counters.draft_tokens),
             ("accepted tokens", sums.accepted, counters.accepted_tokens)]
    width = max(len(sums.accepted_per_pos), len(counters.accepted_per_pos))
    for i in range(width):
        mine = sums.accepted_per_pos[i] if i < len(sums.accepted_per_pos) else 0
        theirs = counters.accepted_per_pos[i] if i < len(counters.accepted_per_pos) else 0
        pairs.append((f"accepted at position {i + 1}", mine, theirs))
    # Counters are integers sent as floats: "beyond rounding" is any difference at all.
    bad = [(what, a, b) for what, a, b in pairs if (a > b if n_failed else a != b)]
    if not bad:
        return True, None
    what, a, b = bad[0]
    more = f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""
    return True, (f"per-request {what} sum {a} != /metrics counter delta {b}{more}: another client on the "
                  f"server, or a counter reset, during the cell?")


def acceptance_replicates(requests: pl.DataFrame, seed: int, replicates: int = BOOTSTRAP_REPLICATES
                          ) -> dict[str, np.ndarray] | None:
    """Poisson-bootstrap replicates over requests of acceptance rate, length and each per-position rate
    (``positions``: replicates × k), from per-request spec-decode metrics; None without them."""
    ok = requests.filter(pl.col("ok").fill_null(True)) if requests.height else requests
    rows = _spec_rows(ok)
    if rows is None or int(rows["spec_steps"].sum()) == 0:
        return None
    rng = np.random.default_rng(seed ^ 0x5EC)  # its own stream: the other metrics' replicates stay as they were
    w = poisson1(rng, (rows.height, replicates)).astype(np.float64)
    steps = rows["spec_steps"].cast(pl.Float64).to_numpy()
    drafted = rows["drafted_tokens"].cast(pl.Float64).fill_null(0.0).to_numpy()
    accepted = rows["accepted_tokens"].cast(pl.Float64).fill_null(0.0).to_numpy()
    s_steps, s_drafted, s_acc = (np.einsum("n,nb->b", x, w) for x in (steps, drafted, accepted))
    s_pos = np.einsum("nk,nb->bk", _pos_matrix(rows), w)
    with np.errstate(invalid="ignore", divide="ignore"):
        return {"acceptance_rate": s_acc / s_drafted, "acceptance_length": 1.0 + s_acc / s_steps,
                "positions": s_pos / s_steps[:, None]}


def position_intervals(requests: pl.DataFrame, seed: int, level: float = 0.95) -> list[tuple[float, float]]:
    """Each per-position rate's percentile interval over the bootstrap (empty without per-request metrics)."""
    reps = acceptance_replicates(requests, seed)
    if reps is None:
        return []
    out = []
    for col in reps["positions"].T:
        col = col[np.isfinite(col)]
        lo, hi = np.percentile(col, [(1 - level) / 2 * 100, (1 + level) / 2 * 100]) if col.size >= 10 else (
            np.nan, np.nan)
        out.append((float(lo), float(hi)))
    return out


def request_arrays(ok: pl.DataFrame) -> dict[str, np.ndarray]:
    """The float columns :func:`bootstrap_arrays` reads, from a frame of successful requests."""
    return {c: ok[c].cast(pl.Float64).fill_null(0.0 if c == "output_tokens" else np.nan).to_numpy()
            for c in ("output_tokens", "e2e_ms", "ttft_ms", "tpot_ms", "drafted_tokens", "accepted_tokens")}


def bootstrap(
    requests: pl.DataFrame, metrics: CellMetrics, *, depth: int, seed: int, replicates: int = BOOTSTRAP_REPLICATES
) -> dict[str, np.ndarray]:
    """Poisson-bootstrap replicates (length ``replicates``) of the cell's headline metrics."""
    ok = requests.filter(pl.col("ok").fill_null(True)) if requests.height else requests
    if ok.height == 0:
        return {k: np.full(replicates, np.nan) for k in METRIC_KEYS}
    if "request_index" in ok.columns and not ok["request_index"].is_sorted():
        ok = ok.sort("request_index", maintain_order=True)  # replicates do not depend on the rows' order
    out = bootstrap_arrays(request_arrays(ok), metrics.values.get("output_throughput"), depth=depth, seed=seed,
                           replicates=replicates)
    if depth > 0 and (acc := acceptance_replicates(ok, seed, replicates)) is not None:
        out["acceptance_rate"], out["acceptance_length"] = acc["acceptance_rate"], acc["acceptance_length"]
    return out


def apply_model_factors(boot: dict[str, np.ndarray], factors: dict[str, np.ndarray] | None
                        ) -> dict[str, np.ndarray]:
    """Replicate j × model draw j's factor, per metric (simulated cells; None leaves ``boot`` as it is).

    The factors come from the simulator (runner → analysis.model_draws) as data: ingest only multiplies."""
    if not factors:
        return boot
    return {k: v * np.asarray(factors[k], dtype=float) if k in factors else v for k, v in boot.items()}


def seed_for(cell_id: str) -> int:
    return int(cell_id[:12], 16)
