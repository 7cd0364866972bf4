"""Scoring one candidate (method, depth) on one shard of a trace: throughput, p99 e2e, goodput.

Owns the per-request model, applied to buckets of requests (analysis.rescore.trace), never to single
requests in Python:

* a request of ``L`` output tokens and ``I`` input tokens at concurrency ``c`` takes
  e2e = TTFT·s_T(I) + (L − 1)·TPOT·s_P, with (TTFT, TPOT) the measured per-request samples of the
  cell (workload, c) — of the requests in the same output-length bucket when the cell has ≥ 30 of them,
  else of its 30 requests nearest in log-length — s_T the cost model's prefill ratio for the bucket's
  input length against the cell's mean input, and s_P its step-time ratio for this shard's mean
  context on that workload (input + output/2) against the cell's (both 1 without a cost model);
* load comes from the arrival rate (Little's law): in each time bucket the concurrency per server is
  c = λ · mean e2e(c), solved by bisection for the user's current config (today's operating point);
  between measured concurrencies the prediction is the mix of the two neighbouring cells weighted
  linearly in log c; above the largest it is held there and counted as ``saturated``. Without
  timestamps a fixed concurrency is used;
* every candidate is compared at that same concurrency: output throughput = output tokens /
  server-seconds, a request holding 1/c of a server for its e2e — the benchmark's definition with this
  trace's lengths and load, i.e. tokens per server at today's batch size, whose ratio is the fleet a
  candidate saves. (Each candidate's own open-loop fixed point would give every candidate the offered
  load λ·L as throughput, which says nothing.) p99 e2e is the weighted 99th percentile over all
  (bucket, sample) pairs at that load; goodput = requests meeting the SLO per server-second;
* bootstrap replicates: each cell's replicate/point ratios, weighted by the cell's share of the server
  time (throughput, goodput) or of the requests (p99) — a first-order propagation of the benchmark noise.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from analysis.rescore import fill
from analysis.rescore.matrix import CellSamples
from analysis.rescore.trace import bucket_bounds

MIN_SAMPLES_PER_BUCKET = 30
LOAD_LEVELS = 64
P99 = 0.99


@dataclass(slots=True)
class ShardInput:
    """A shard's buckets as arrays, already split over the store's workloads (candidate-independent)."""

    t: np.ndarray  # time bucket per row
    wi: np.ndarray  # store-workload index per row
    lb: np.ndarray  # output-length bucket per row
    n: np.ndarray  # requests (weighted when a row was split over workloads)
    out: np.ndarray  # output tokens (same weighting)
    inp: np.ndarray  # input tokens
    n_t: np.ndarray  # requests per time bucket
    rate: np.ndarray | None  # arrival rate per server per time bucket (req/s); None: fixed concurrency
    fixed_c: float | None
    grid: list[int]  # measured concurrencies usable for this shard


@dataclass(slots=True)
class Prediction:
    output_throughput: float
    p99_e2e_ms: float
    goodput: float | None
    reps: dict[str, np.ndarray]
    mean_concurrency: float
    saturated_share: float
    requests: float
    tokens: float
    server_s: float
    provenance: dict[str, float] = field(default_factory=dict)  # share of requests per cell provenance
    load: tuple[np.ndarray, np.ndarray] | None = None  # concurrency and saturation per time bucket


def _bucket_of(out: np.ndarray, cache: dict) -> tuple[np.ndarray, int, np.ndarray] | None:
    """(bucket per sample, lowest bucket, samples per bucket) of a cell's output lengths, computed once per
    array; None unless every sample lies in its bucket's bounds exactly as :func:`bucket_bounds` draws them
    (the buckets do not overlap, so then ``bucket == lb`` selects exactly ``lo <= out < hi``)."""
    key = ("buckets", id(out))
    if key not in cache:
        got = None
        if out.size and bool(np.isfinite(out).all()):
            lbv = np.floor(np.log2(np.maximum(out, 1.0)) * 2).astype(np.int64)
            low = int(lbv.min())
            bounds = [bucket_bounds(lb) for lb in range(low, int(lbv.max()) + 1)]
            lo, hi = np.array([b[0] for b in bounds]), np.array([b[1] for b in bounds])
            if bool(((out >= lo[lbv - low]) & (out < hi[lbv - low])).all()):
                got = (lbv, low, np.bincount(lbv - low))
        cache[key] = (got, out)  # ``out`` held so that its id is not reused while the cache lives
    return cache[key][0]


def _rows(out: np.ndarray, lb: int, cache: dict) -> np.ndarray:
    """Which of a cell's samples stand for output-length bucket ``lb``: shared by every cell with these
    samples' lengths (a model-filled cell keeps its source's ``out``)."""
    key = ("rows", id(out), lb)
    got = cache.get(key)
    if got is None:
        lo, hi = bucket_bounds(lb)
        buckets = _bucket_of(out, cache)
        if buckets is None:
            mask = (out >= lo) & (out < hi)
            n = int(mask.sum())
        else:
            lbv, low, counts = buckets
            n = int(counts[lb - low]) if 0 <= lb - low < counts.size else 0
            mask = lbv == lb if n >= MIN_SAMPLES_PER_BUCKET else None
        if n < MIN_SAMPLES_PER_BUCKET and out.size > MIN_SAMPLES_PER_BUCKET:
            # Too few measured requests of this length: the nearest ones in log-length stand in (a short
            # request's TPOT averages over few steps and is noisier than a long one's).
            dist = np.abs(np.log(np.maximum(out, 1.0)) - np.log(np.sqrt(lo * hi)))
            mask = np.zeros(out.size, dtype=bool)
            mask[np.argsort(dist, kind="stable")[:MIN_SAMPLES_PER_BUCKET]] = True
        elif n < MIN_SAMPLES_PER_BUCKET:
            mask = np.ones(out.size, dtype=bool)
        got = (mask, out)
        cache[key] = got
    return got[0]


def _subset(cell: CellSamples, lb: int, cache: dict) -> tuple[np.ndarray, np.ndarray, float, float]:
    """(TTFT, TPOT, their means) of the cell's samples for bucket ``lb``; ``cache`` may span many score calls
    (one shard's candidates share cells: the reference is scored twice, schedules reuse static cells)."""
    key = ("subset", id(cell), lb)
    got = cache.get(key)
    if got is None:
        mask = _rows(cell.out, lb, cache)
        tt, tp = cell.ttft[mask], cell.tpot[mask]
        # np.mean is this sum over the size (called directly: no per-call checks); ``cell`` held: its id stays its own
        got = (tt, tp, np.add.reduce(tt) / tt.size, np.add.reduce(tp) / tp.size, cell)
        cache[key] = got
    return got[:4]


def _interp(c: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lower grid index and weight of the upper neighbour, linear in log c (c already clamped)."""
    if grid.size == 1:
        return np.zeros(c.shape, dtype=int), np.zeros(c.shape)
    i = np.clip(np.searchsorted(grid, c, side="right") - 1, 0, grid.size - 2)
    lg = np.log(grid)
    w = (np.log(c) - lg[i]) / (lg[i + 1] - lg[i])
    return i, np.clip(w, 0.0, 1.0)


def _solve_load(si: ShardInput, a_tg: np.ndarray, grid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Concurrency per time bucket from c = λ·mean e2e(c); also whether the bucket saturated."""
    n_t = np.maximum(si.n_t, 1e-12)
    if si.rate is None:
        c = np.full(n_t.shape, float(np.clip(si.fixed_c or grid[0], grid[0], grid[-1])))
        return c, np.zeros(n_t.shape, dtype=bool)

    def excess(c: np.ndarray) -> np.ndarray:
        i, w = _interp(c, grid)
        rows = np.arange(c.size)
        mean_e2e_s = ((1 - w) * a_tg[rows, i] + w * a_tg[rows, np.minimum(i + 1, grid.size - 1)]) / n_t / 1e3
        return si.rate * mean_e2e_s - c

    lo, hi = np.full(n_t.shape, float(grid[0])), np.full(n_t.shape, float(grid[-1]))
    saturated = excess(hi) > 0
    idle = excess(lo) <= 0
    for _ in range(40):  # bisection in log c
        mid = np.sqrt(lo * hi)
        up = excess(mid) > 0
        lo, hi = np.where(up, mid, lo), np.where(up, hi, mid)
    c = np.where(saturated, grid[-1], np.where(idle, grid[0], np.sqrt(lo * hi)))
    return c, saturated


def score(cells: list[list[CellSamples | None]], si: ShardInput, *, method: str, depth: int | list[int],
          workloads: list[str],
          dep, slo: tuple[float, float] | None, n_rep: int,
          load: tuple[np.ndarray, np.ndarray] | None = None, cache: dict | None = None) -> Prediction:
    """Predict one candidate on one shard. ``cells[w][g]``: the (filled) cell per store workload × grid.

    ``load`` (concurrency and saturation per time bucket) is the operating point every candidate is
    compared at; None solves it from this candidate's own latency (done once, for the reference config).
    ``depth`` may be one depth per grid load (a depth schedule per batch size). ``cache``: the cells'
    per-bucket samples, kept between calls on the same cells (see :func:`_subset`).
    """
    grid = np.asarray(si.grid, dtype=float)
    n_w, n_g, n_r = len(workloads), grid.size, si.n.size
    cache = {} if cache is None else cache
    L = si.out / np.maximum(si.n, 1e-12)
    inp = si.inp / np.maximum(si.n, 1e-12)
    # Context per workload (mean input + half the mean output over the shard): TPOT moves with how much
    # longer this trace's contexts are than the cell's on average; the per-request spread is already in
    # the cell's samples, so scaling each row by its own context would count it twice.
    ctx_w = {w: float((si.inp[si.wi == w].sum() + si.out[si.wi == w].sum() / 2) / max(si.n[si.wi == w].sum(), 1e-12))
             for w in range(n_w)}
    p0, p1 = fill.prefill_line(dep)
    codes, pair_of_row = np.unique(si.wi * 256 + si.lb, return_inverse=True)  # lb < 64 for any int32 length
    pairs = [(int(c // 256), int(c % 256)) for c in codes]
    # Per (pair, g): mean TTFT and TPOT of the samples; per (w, g): the cost-model scaling lines.
    m_ttft, m_tpot = np.empty((len(pairs), n_g)), np.empty((len(pairs), n_g))
    for p, (w, lb) in enumerate(pairs):
        for g in range(n_g):
            m_ttft[p, g], m_tpot[p, g] = _subset(cells[w][g], lb, cache)[2:]
    s_t = np.empty((n_r, n_g))
    s_p = np.empty((n_r, n_g))
    for g in range(n_g):
        for w in range(n_w):
            rows = si.wi == w
            cell = cells[w][g]
            if cell is None or not rows.any():
                continue
            t0, t1 = fill.step_line(method, workloads[w], depth[g] if isinstance(depth, list) else depth, dep,
                                    grid[g])
            cell_in = cell.in_mean if np.isfinite(cell.in_mean) else 1500.0
            cell_ctx = cell_in + float(np.mean(cell.out)) / 2
            s_p[rows, g] = (t0 + t1 * ctx_w[w]) / (t0 + t1 * cell_ctx)
            s_t[rows, g] = (p0 + p1 * inp[rows]) / (p0 + p1 * cell_in)
    e2e_rg = m_ttft[pair_of_row] * s_t + np.maximum(L - 1, 0)[:, None] * m_tpot[pair_of_row] * s_p  # mean ms
    n_t_buckets = si.n_t.size
    a_tg = np.zeros((n_t_buckets, n_g))
    for g in range(n_g):
        a_tg[:, g] = np.bincount(si.t, weights=si.n * e2e_rg[:, g], minlength=n_t_buckets)
    c_t, sat_t = _solve_load(si, a_tg, grid) if load is None else load
    i_t, w_t = _interp(c_t, grid)
    i_r, w_r, c_r = i_t[si.t], w_t[si.t], c_t[si.t]
    rows = np.arange(n_r)
    j_r = np.minimum(i_r + 1, n_g - 1)
    e2e_r = (1 - w_r) * e2e_rg[rows, i_r] + w_r * e2e_rg[rows, j_r]
    server_ms = si.n * e2e_r / c_r
    tokens, requests = float(si.out.sum()), float(si.n.sum())
    server_s = float(server_ms.sum()) / 1e3
    thr = tokens / server_s if server_s > 0 else float("nan")
    # Component weights: (row, lower g) and (row, upper g); samples per (pair, g).
    comp_w = np.concatenate([si.n * (1 - w_r), si.n * w_r])
    comp_pair = np.concatenate([pair_of_row, pair_of_row])
    comp_g = np.concatenate([i_r, j_r])
    comp_row = np.concatenate([rows, rows])
    keep = comp_w > 0
    comp_w, comp_pair, comp_g, comp_row = comp_w[keep], comp_pair[keep], comp_g[keep], comp_row[keep]
    # Group components by (pair, g): rows in a group share samples; their L and scalings are averaged.
    key = comp_pair * n_g + comp_g
    n_keys = len(pairs) * n_g
    wsum = np.bincount(key, weights=comp_w, minlength=n_keys)
    safe = np.where(wsum > 0, wsum, 1.0)
    lbar = np.bincount(key, weights=comp_w * np.maximum(L[comp_row] - 1, 0), minlength=n_keys) / safe
    st = np.bincount(key, weights=comp_w * s_t[comp_row, comp_g], minlength=n_keys) / safe
    sp = np.bincount(key, weights=comp_w * s_p[comp_row, comp_g], minlength=n_keys) / safe
    values, weights, meeting = [], [], 0.0
    for k in np.flatnonzero(wsum > 0):
        p, g = int(k // n_g), int(k % n_g)
        tt, tp = _subset(cells[pairs[p][0]][g], pairs[p][1], cache)[:2]
        e2e = tt * st[k] + lbar[k] * tp * sp[k]
        values.append(e2e)
        weights.append(np.full(e2e.size, wsum[k] / e2e.size))
        if slo is not None:
            meeting += wsum[k] * float(np.mean((tt * st[k] <= slo[0]) & (tp * sp[k] <= slo[1])))
    vals, wts = np.concatenate(values), np.concatenate(weights)
    order = np.argsort(vals, kind="stable")
    cum = np.cumsum(wts[order])
    p99 = float(vals[order][np.searchsorted(cum, P99 * cum[-1])])
    goodput = meeting / server_s if slo is not None and server_s > 0 else None
    # Shares per cell (w, g) for replicate propagation and provenance.
    cell_idx = si.wi[comp_row] * n_g + comp_g
    st_share = np.bincount(cell_idx, weights=np.concatenate([server_ms * (1 - w_r), server_ms * w_r])[keep],
                           minlength=n_w * n_g)
    rq_share = np.bincount(cell_idx, weights=comp_w, minlength=n_w * n_g)
    flat = [cells[w][g] for w in range(n_w) for g in range(n_g)]
    thr_rep = np.full(n_rep, thr)
    p99_rep = np.full(n_rep, p99)
    if n_rep:
        used = [i for i in range(len(flat)) if st_share[i] > 0 or rq_share[i] > 0]
        with np.errstate(invalid="ignore", divide="ignore"):
            inv = sum(st_share[i] / 1e3 / _reps(flat[i].thr_ratio, n_rep) for i in used)
            thr_rep = tokens / inv
            p99_rep = p99 * sum(rq_share[i] / requests * _reps(flat[i].p99_ratio, n_rep) for i in used)
    reps = {"output_throughput": thr_rep, "p99_e2e_ms": p99_rep}
    if goodput is not None:
        reps["goodput"] = goodput * thr_rep / thr
    prov: dict[str, float] = {}
    for i, cell in enumerate(flat):
        if rq_share[i] > 0:
            prov[cell.provenance] = prov.get(cell.provenance, 0.0) + float(rq_share[i]) / requests
    return Prediction(output_throughput=thr, p99_e2e_ms=p99, goodput=goodput, reps=reps,
                      mean_concurrency=float((si.n * c_r).sum() / requests),
                      saturated_share=float(si.n_t[sat_t].sum() / requests), requests=requests, tokens=tokens,
                      server_s=server_s, provenance={k: round(v, 6) for k, v in sorted(prov.items())},
                      load=(c_t, sat_t))


def collapse(si: ShardInput, load: tuple[np.ndarray, np.ndarray], levels: int = LOAD_LEVELS
             ) -> tuple[ShardInput, tuple[np.ndarray, np.ndarray]]:
    """The shard regrouped by load level instead of time: same requests, ~50× fewer rows to score.

    Once the operating point is known, time matters only through the concurrency it puts each bucket
    at, so buckets are pooled on ``levels`` log-spaced concurrencies (±3 % at 64 levels over 1–64).
    """
    c_t, sat_t = load
    grid = np.asarray(si.grid, dtype=float)
    span = float(np.log(grid[-1] / grid[0]))
    q_t = np.rint((np.log(c_t / grid[0]) / span) * (levels - 1)).astype(int) if span > 0 else np.zeros(c_t.size, int)
    codes, level_of_t = np.unique(q_t * 2 + sat_t.astype(int), return_inverse=True)
    c_lv = grid[0] * np.exp(codes // 2 / max(levels - 1, 1) * span)
    sat_lv = (codes % 2).astype(bool)
    lv = level_of_t.reshape(-1)[si.t]
    keys, row_of = np.unique((lv * 64 + si.wi) * 256 + si.lb, return_inverse=True)
    row_of = row_of.reshape(-1)
    new = ShardInput(t=(keys // (64 * 256)).astype(int), wi=((keys // 256) % 64).astype(int),
                     lb=(keys % 256).astype(int), n=np.bincount(row_of, weights=si.n),
                     out=np.bincount(row_of, weights=si.out), inp=np.bincount(row_of, weights=si.inp),
                     n_t=np.bincount(lv, weights=si.n, minlength=codes.size), rate=None, fixed_c=None, grid=si.grid)
    return new, (c_lv, sat_lv)


def _reps(ratio: np.ndarray, n_rep: int) -> np.ndarray:
    return ratio if ratio.size == n_rep else np.full(n_rep, np.nan)
