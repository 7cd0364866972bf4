"""A cell's metrics by vLLM's definitions, checked on hand-computed cases, and the acceptance replicates checked
against the point estimate and against a second, direct implementation of the Poisson bootstrap."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest

from analysis.gains import interval
from ingest import cellstats
from ingest.records import SpecCounters


def _requests(ok: list[bool] | None = None) -> pl.DataFrame:
    """Three successful requests (and optionally a failed fourth) with per-request draft counts, depth 3."""
    frame = pl.DataFrame({
        "output_tokens": [10, 20, 30], "ttft_ms": [100.0, 200.0, 300.0], "e2e_ms": [1000.0, 2000.0, 3000.0],
        "tpot_ms": [900 / 9, 1800 / 19, 2700 / 29], "drafted_tokens": [9, 18, 27], "accepted_tokens": [6, 9, 18],
        "ok": [True, True, True],
    })
    if ok is not None:
        frame = pl.concat([frame, pl.DataFrame({
            "output_tokens": [500], "ttft_ms": [9e9], "e2e_ms": [9e9], "tpot_ms": [9e9], "drafted_tokens": [900],
            "accepted_tokens": [0], "ok": [False]}).cast(frame.schema)])
    return frame


def test_metrics_of_a_hand_computed_cell():
    v = cellstats.derive(_requests(ok=[False]), depth=3, window_s=2.0, gpu_count=2).values
    assert (v["n_requests"], v["n_failed"], v["gpu_count"]) == (4, 1, 2)  # the failed request counts nowhere else
    assert v["output_tokens"] == 60.0
    assert v["output_throughput"] == pytest.approx(30.0)  # 60 tokens / 2 s
    assert v["output_throughput_per_gpu"] == pytest.approx(15.0)
    assert v["request_throughput"] == pytest.approx(1.5)
    assert v["mean_e2e_ms"] == pytest.approx(2000.0) and v["mean_ttft_ms"] == pytest.approx(200.0)
    assert v["p50_ttft_ms"] == pytest.approx(200.0)
    assert v["p99_ttft_ms"] == pytest.approx(298.0)  # linear: rank 0.99·2 = 1.98 → 200 + 0.98·100
    assert v["p90_e2e_ms"] == pytest.approx(2800.0)
    # 54 drafted tokens at depth 3 = 18 drafts; 33 accepted
    assert v["drafts"] == pytest.approx(18.0) and v["draft_tokens"] == 54.0 and v["accepted_tokens"] == 33.0
    assert v["acceptance_rate"] == pytest.approx(33 / 54)
    assert v["acceptance_length"] == pytest.approx(1 + 33 / 18)
    assert v["acceptance_source"] == "per-request"  # per-request drafted/accepted counts, without verify steps


def test_no_gpu_count_no_per_gpu_throughput_and_no_drafts_no_acceptance_figures():
    req = _requests().with_columns(pl.lit(0).alias("drafted_tokens"), pl.lit(0).alias("accepted_tokens"))
    m = cellstats.derive(req, depth=3, window_s=2.0, gpu_count=0)
    assert m.values["output_throughput"] == pytest.approx(30.0) and m.values["output_throughput_per_gpu"] is None
    assert m.values["drafts"] is None and m.values["acceptance_length"] is None and m.positions == []


def test_counters_take_precedence_and_give_per_position_rates():
    m = cellstats.derive(_requests(), depth=3, window_s=2.0, gpu_count=1,
                         counters=SpecCounters(drafts=10, draft_tokens=30, accepted_tokens=12,
                                               accepted_per_pos=[6, 4, 2]))
    assert m.values["acceptance_rate"] == pytest.approx(0.4)
    assert m.values["acceptance_length"] == pytest.approx(2.2)  # 1 + 12/10 = 1 + Σ r_i
    assert m.positions == pytest.approx([0.6, 0.4, 0.2])
    assert m.values["acceptance_source"] == "counters" and m.values["drafts"] == 10


def test_no_window_no_throughput_and_no_drafts_no_acceptance():
    v = cellstats.derive(_requests(), depth=0, window_s=None, gpu_count=1).values
    assert v["output_throughput"] is None and v["request_throughput"] is None
    assert v["acceptance_rate"] is None and v["acceptance_length"] is None


def _cell(n: int, seed: int, depth: int) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    tokens = rng.integers(20, 400, n)
    e2e = tokens * rng.uniform(8, 14, n)
    drafted = tokens * depth
    return pl.DataFrame({"output_tokens": tokens, "ttft_ms": e2e * 0.1, "e2e_ms": e2e, "tpot_ms": e2e * 0.9 / tokens,
                         "drafted_tokens": drafted, "accepted_tokens": rng.binomial(drafted, 0.55), "ok": [True] * n})


@pytest.mark.parametrize("depth", [1, 3, 5])
def test_acceptance_replicates_contain_their_point_and_equal_a_direct_bootstrap(depth: int):
    req = _cell(300, depth, depth)
    drafted, accepted = req["drafted_tokens"].to_numpy(), req["accepted_tokens"].to_numpy()
    tau = 1 + accepted.sum() / (drafted.sum() / depth)  # computed here, not read from derive()
    rate = accepted.sum() / drafted.sum()
    metrics = cellstats.derive(req, depth=depth, window_s=60.0, gpu_count=1)
    assert metrics.values["acceptance_length"] == pytest.approx(tau)
    reps = cellstats.bootstrap(req, metrics, depth=depth, seed=1234)
    for key, point in (("acceptance_length", tau), ("acceptance_rate", rate)):
        lo, hi = interval(reps[key])
        assert lo < point < hi, key
        assert abs(np.median(reps[key]) - point) < (hi - lo) / 4, key
    # the Poisson bootstrap written out: one Poisson(1) weight per request and replicate, shared by all metrics
    w = cellstats.poisson1(np.random.default_rng(1234), (req.height, cellstats.BOOTSTRAP_REPLICATES)).astype(float)
    want_tau = 1 + (accepted @ w) / ((drafted @ w) / depth)
    assert reps["acceptance_length"] == pytest.approx(want_tau, rel=1e-12)
    assert reps["acceptance_rate"] == pytest.approx((accepted @ w) / (drafted @ w), rel=1e-12)
    tput = metrics.values["output_throughput"]
    tokens, e2e = req["output_tokens"].to_numpy(), req["e2e_ms"].to_numpy()
    want_tput = tput * ((tokens @ w) / (e2e @ w)) / (tokens.sum() / e2e.sum())
    assert reps["output_throughput"] == pytest.approx(want_tput, rel=1e-12)


def test_without_per_request_drafts_acceptance_replicates_stay_missing():
    req = _cell(50, 0, 3).with_columns(pl.lit(None, dtype=pl.Int64).alias("drafted_tokens"),
                                       pl.lit(None, dtype=pl.Int64).alias("accepted_tokens"))
    metrics = cellstats.derive(req, depth=3, window_s=60.0, gpu_count=1)
    reps = cellstats.bootstrap(req, metrics, depth=3, seed=7)
    assert np.isnan(reps["acceptance_length"]).all() and np.isnan(reps["acceptance_rate"]).all()
    assert np.isfinite(reps["output_throughput"]).all()


def test_tpot_window_and_unflagged_requests_of_a_hand_computed_cell():
    # an imported file may leave ``ok`` null: such a request succeeded; a window under a second still counts
    req = _requests().with_columns(pl.Series("ok", [None, True, None], dtype=pl.Boolean))
    v = cellstats.derive(req, depth=3, window_s=0.5, gpu_count=1).values
    assert (v["n_requests"], v["n_failed"], v["window_s"]) == (3, 0, 0.5)
    assert v["output_throughput"] == pytest.approx(120.0)  # 60 tokens / 0.5 s
    tpot = [900 / 9, 1800 / 19, 2700 / 29]  # (e2e − ttft) / (tokens − 1)
    assert v["mean_tpot_ms"] == pytest.approx(sum(tpot) / 3)
    assert v["p50_tpot_ms"] == pytest.approx(1800 / 19)  # the middle of three
    assert v["p99_tpot_ms"] == pytest.approx(900 / 9 - 0.02 * (900 / 9 - 1800 / 19))  # rank 1.98 of the sorted three


def test_a_cell_without_requests_has_no_latencies():
    v = cellstats.derive(_requests().head(0), depth=3, window_s=2.0, gpu_count=1).values
    assert (v["n_requests"], v["n_failed"], v["output_tokens"], v["output_throughput"]) == (0, 0, 0.0, 0.0)
    for name in ("ttft_ms", "tpot_ms", "e2e_ms", "itl_ms"):
        assert v[f"p50_{name}"] is None and v[f"p99_{name}"] is None, name
    assert v["mean_ttft_ms"] is None and v["mean_tpot_ms"] is None and v["mean_e2e_ms"] is None
    assert v["acceptance_rate"] is None and v["acceptance_length"] is None


def _spec_requests(steps: list[int], drafted: list[int], accepted: list[int], per_pos: list[list[int]]
                   ) -> pl.DataFrame:
    """Requests carrying vLLM's per-request spec-decode metrics (verify steps and accepted-per-position)."""
    n = len(steps)
    return pl.DataFrame({
        "output_tokens": [10] * n, "ttft_ms": [100.0] * n, "e2e_ms": [1000.0] * n, "tpot_ms": [100.0] * n,
        "drafted_tokens": drafted, "accepted_tokens": accepted, "spec_steps": steps,
        "accepted_per_pos": per_pos, "ok": [True] * n,
    }, schema_overrides={"accepted_per_pos": pl.List(pl.Int64)})


def test_per_request_spec_metrics_give_rates_per_position_and_agree_with_the_counters():
    req = _spec_requests([3, 6, 9], [9, 18, 27], [6, 9, 18], [[3, 2, 1], [5, 3, 1], [8, 6, 4]])
    counters = SpecCounters(drafts=18, draft_tokens=54, accepted_tokens=33, accepted_per_pos=[16, 11, 6])
    m = cellstats.derive(req, depth=3, window_s=2.0, gpu_count=1, counters=counters)
    v = m.values
    assert v["acceptance_source"] == "per-request"
    assert (v["drafts"], v["draft_tokens"], v["accepted_tokens"]) == (18, 54, 33)
    assert m.positions == pytest.approx([16 / 18, 11 / 18, 6 / 18])  # r_i = accepted at i / verify steps
    assert v["acceptance_rate"] == pytest.approx(33 / 54) and v["acceptance_length"] == pytest.approx(1 + 33 / 18)
    assert (v["acceptance_checked"], v["acceptance_suspect"]) == (True, None)
    assert (v["counter_drafts"], v["counter_draft_tokens"], v["counter_accepted_tokens"]) == (18, 54, 33)
    assert v["output_throughput"] == v["output_throughput_per_gpu"] == pytest.approx(15.0)  # 30 tokens / 2 s, one GPU


def test_a_single_verify_step_still_gives_per_position_rates_at_depth_one():
    one = cellstats.derive(_spec_requests([1], [3], [2], [[1, 1, 0]]), depth=3, window_s=1.0, gpu_count=1)
    assert one.positions == pytest.approx([1.0, 1.0, 0.0]) and one.values["acceptance_length"] == pytest.approx(3.0)
    d1 = cellstats.derive(_spec_requests([4, 6], [4, 6], [1, 3], [[1], [3]]), depth=1, window_s=1.0, gpu_count=1)
    assert d1.positions == pytest.approx([0.4]) and d1.values["acceptance_rate"] == pytest.approx(0.4)


def test_without_speculation_or_verify_steps_acceptance_comes_from_elsewhere_or_nowhere():
    # depth 0: no acceptance even if the rows carry spec counts
    v0 = cellstats.derive(_spec_requests([3], [9], [6], [[3, 2, 1]]), depth=0, window_s=1.0, gpu_count=1).values
    assert v0["acceptance_source"] is None and v0["acceptance_rate"] is None and v0["acceptance_length"] is None
    # per-request metrics with no verify step at all: the counters decide
    zero = _spec_requests([0, 0], [0, 0], [0, 0], [[0, 0, 0], [0, 0, 0]])
    counters = SpecCounters(drafts=1, draft_tokens=3, accepted_tokens=2, accepted_per_pos=[1, 1, 0])
    m = cellstats.derive(zero, depth=3, window_s=1.0, gpu_count=1, counters=counters)
    assert m.values["acceptance_source"] == "counters" and m.positions == pytest.approx([1.0, 1.0, 0.0])
    assert m.values["acceptance_length"] == pytest.approx(3.0) and m.values["drafts"] == 1
    # counters that saw no drafts, and no per-request drafts: no acceptance
    bare = _requests().with_columns(pl.lit(None, dtype=pl.Int64).alias("drafted_tokens"),
                                    pl.lit(None, dtype=pl.Int64).alias("accepted_tokens"))
    v = cellstats.derive(bare, depth=3, window_s=1.0, gpu_count=1,
                         counters=SpecCounters(drafts=0, draft_tokens=0, accepted_tokens=0)).values
    assert v["acceptance_source"] is None and v["acceptance_rate"] is None and v["drafts"] is None


def test_inter_token_latency_percentiles_only_when_measured():
    v = cellstats.derive(_requests(), depth=3, window_s=2.0, gpu_count=1, itl_ms=[10, 20, 30, 40]).values
    assert (v["p50_itl_ms"], v["p90_itl_ms"], v["p99_itl_ms"]) == pytest.approx((25.0, 37.0, 39.7))
    none = cellstats.derive(_requests(), depth=3, window_s=2.0, gpu_count=1).values
    assert none["p50_itl_ms"] is None and none["p99_itl_ms"] is None


def test_counter_figures_and_the_cross_check_exist_only_for_speculative_cells():
    counters = SpecCounters(drafts=6, draft_tokens=6, accepted_tokens=3, accepted_per_pos=[3])
    v1 = cellstats.derive(_spec_requests([4, 2], [4, 2], [2, 1], [[2], [1]]), depth=1, window_s=1.0, gpu_count=1,
                          counters=counters).values
    assert (v1["counter_drafts"], v1["counter_draft_tokens"], v1["counter_accepted_tokens"]) == (6, 6, 3)
    assert (v1["acceptance_checked"], v1["acceptance_suspect"]) == (True, None)
    v0 = cellstats.derive(_requests(), depth=0, window_s=1.0, gpu_count=1, counters=counters).values
    assert "counter_drafts" not in v0 and (v0["acceptance_checked"], v0["acceptance_suspect"]) == (None, None)
    v0 = cellstats.derive(_spec_requests([4, 2], [4, 2], [2, 1], [[2], [1]]), depth=0, window_s=1.0, gpu_count=1,
                          counters=counters).values
    assert (v0["acceptance_checked"], v0["acceptance_suspect"]) == (None, None)


def _direct(cols: dict[str, np.ndarray], seed: int, depth: int) -> tuple[np.ndarray, np.ndarray]:
    """Throughput ratio and τ replicates of the Poisson bootstrap written out (one weight per request)."""
    w = cellstats.poisson1(np.random.default_rng(seed), (cols["e2e_ms"].size, cellstats.BOOTSTRAP_REPLICATES))
    w = w.astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = (cols["output_tokens"] @ w) / (cols["e2e_ms"] @ w)
        tau = 1 + (cols["accepted_tokens"] @ w) / ((cols["drafted_tokens"] @ w) / depth)
    return ratio, tau


def test_the_exact_bootstrap_up_to_its_size_limit_and_only_when_asked_above_or_below():
    n = cellstats.EXACT_MAX_N  # the limit itself is still exact
    rng = np.random.default_rng(3)
    tokens = rng.integers(20, 400, n).astype(float)
    cols = {"output_tokens": tokens, "e2e_ms": tokens * rng.uniform(8, 14, n), "ttft_ms": tokens,
            "tpot_ms": tokens, "drafted_tokens": 3 * tokens, "accepted_tokens": np.floor(1.5 * tokens)}
    base = tokens.sum() / cols["e2e_ms"].sum()
    ratio, tau = _direct(cols, 5, 3)
    got = cellstats.bootstrap_arrays(cols, 2.0, depth=3, seed=5)
    assert got["output_throughput"] == pytest.approx(2.0 * ratio / base, rel=1e-12)
    assert got["acceptance_length"] == pytest.approx(tau, rel=1e-12)
    small = {k: v[:200] for k, v in cols.items()}
    ratio, _ = _direct(small, 5, 3)
    base = small["output_tokens"].sum() / small["e2e_ms"].sum()
    assert cellstats.bootstrap_arrays(small, 2.0, depth=3, seed=5, exact=True)["output_throughput"] == pytest.approx(
        2.0 * ratio / base, rel=1e-12)
    normal = cellstats.bootstrap_arrays(small, 2.0, depth=3, seed=5, exact=False)["output_throughput"]
    assert not np.allclose(normal, 2.0 * ratio / base)  # exact=False takes the large-n scheme


def test_no_requests_no_replicates_and_one_request_or_one_draft_still_some():
    empty = {k: np.zeros(0) for k in ("output_tokens", "e2e_ms", "ttft_ms", "tpot_ms", "drafted_tokens",
                                      "accepted_tokens")}
    got = cellstats.bootstrap_arrays(empty, 1.0, depth=3, seed=1, replicates=50)
    assert set(got) == set(cellstats.METRIC_KEYS) and all(v.shape == (50,) and np.isnan(v).all() for v in got.values())
    one = {"output_tokens": np.array([10.0]), "e2e_ms": np.array([1000.0]), "ttft_ms": np.array([100.0]),
           "tpot_ms": np.array([100.0]), "drafted_tokens": np.array([1.0]), "accepted_tokens": np.array([1.0])}
    got = cellstats.bootstrap_arrays(one, 10.0, depth=1, seed=1)
    drawn = np.isfinite(got["output_throughput"])  # a replicate that drew the request zero times has no value
    assert 0 < drawn.sum() < drawn.size and got["output_throughput"][drawn] == pytest.approx(10.0)
    assert got["acceptance_length"][drawn] == pytest.approx(2.0) and got["p99_e2e_ms"][drawn] == pytest.approx(1000.0)
    # no speculation: no acceptance replicates even though the columns are there
    assert np.isnan(cellstats.bootstrap_arrays(one, 10.0, depth=0, seed=1)["acceptance_length"]).all()


def _weighted_p99(vals: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Per replicate (columns of ``w``): the first value, ascending, whose cumulative weight reaches 0.99 of the
    total (numpy's inverted-CDF rule), by a plain loop."""
    order = np.argsort(vals, kind="stable")
    out = np.full(w.shape[1], np.nan)
    for b in range(w.shape[1]):
        cum = np.cumsum(w[order, b])
        if cum[-1] > 0:
            out[b] = vals[order][np.argmax(cum >= 0.99 * cum[-1])]
    return out


def test_replicates_with_missing_latencies_equal_a_direct_bootstrap():
    n, seed = 60, 11
    rng = np.random.default_rng(4)
    tokens = rng.integers(20, 400, n).astype(float)
    e2e = tokens * rng.uniform(8, 14, n)
    e2e[[3, 17, 40]] = np.nan  # requests without an end-to-end latency
    accepted = np.floor(1.5 * tokens)
    accepted[5] = np.nan  # one request without an accepted count: counts as 0 accepted
    cols = {"output_tokens": tokens, "e2e_ms": e2e, "ttft_ms": tokens * 0.5, "tpot_ms": np.full(n, np.nan),
            "drafted_tokens": 3 * tokens, "accepted_tokens": accepted}
    got = cellstats.bootstrap_arrays(cols, 7.0, depth=3, seed=seed)
    w = cellstats.poisson1(np.random.default_rng(seed), (n, cellstats.BOOTSTRAP_REPLICATES)).astype(float)
    fin = np.isfinite(e2e)
    tok, lat = np.where(fin, tokens, 0.0), np.where(fin, e2e, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        want_tput = 7.0 * ((tok @ w) / (lat @ w)) / (tok.sum() / lat.sum())
    assert got["output_throughput"] == pytest.approx(want_tput, rel=1e-12, nan_ok=True)
    assert got["p99_e2e_ms"] == pytest.approx(_weighted_p99(e2e[fin], w[fin]), nan_ok=True)
    assert got["p99_ttft_ms"] == pytest.approx(_weighted_p99(tokens * 0.5, w), nan_ok=True)
    assert got["p99_tpot_ms"].shape == (cellstats.BOOTSTRAP_REPLICATES,) and np.isnan(got["p99_tpot_ms"]).all()
    acc = np.nan_to_num(accepted, nan=0.0)
    assert got["acceptance_rate"] == pytest.approx((acc @ w) / ((3 * tokens) @ w), rel=1e-12)
    without_point = cellstats.bootstrap_arrays(cols, None, depth=3, seed=seed)["output_throughput"]
    assert without_point.shape == (cellstats.BOOTSTRAP_REPLICATES,) and np.isnan(without_point).all()


def test_poisson_weights_are_the_inverse_cdf_of_32_bit_uniforms():
    # the documented scheme written out: weight = #{k : u ≥ round(2³²·F(k))}, F the Poisson(1) CDF, k = 0..11
    shape = (2000, 500)
    u = np.random.default_rng(9).integers(0, 2**32, size=shape, dtype=np.uint32).astype(np.int64)
    cdf = np.cumsum([math.exp(-1.0) / math.factorial(k) for k in range(12)])
    want = sum((u >= round(c * 2.0**32)).astype(np.int64) for c in cdf)
    got = cellstats.poisson1(np.random.default_rng(9), shape)
    assert got.dtype == np.uint8 and np.array_equal(got, want)
    assert (want >= 7).sum() > 0  # the rare weights (past the dense thresholds) are in the sample
    assert abs(got.mean() - 1.0) < 0.005 and abs(got.var() - 1.0) < 0.01  # Poisson(1): mean = variance = 1
