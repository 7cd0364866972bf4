"""Per-request acceptance in a cell's metrics: sums, bootstrap intervals (rate, length, per position) and the
cross-check against the /metrics counter deltas (``acceptance_suspect``)."""

from __future__ import annotations

import numpy as np
import polars as pl

from ingest import cellstats, sql, store
from ingest.records import CellKey, RunInfo, SpecCounters, conform_requests

KEY = CellKey("ngram", 3, "Tiny", "tiny", "code", "cpu", 2)


def _requests(n: int = 20, failed: int = 0, missing: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for i in range(n):
        hist = rng.integers(0, 4, size=4).tolist()  # steps that accepted j = 0..3 drafts
        steps = sum(hist)
        accepted = sum(j * c for j, c in enumerate(hist))
        per_pos = [sum(hist[p:]) for p in range(1, 4)]
        spec = i >= missing
        rows.append({"request_index": i, "output_tokens": 32, "ttft_ms": 10.0, "tpot_ms": 2.0,
                     "e2e_ms": 80.0 + i, "start_s": 0.0, "ok": i >= failed,
                     "spec_steps": steps if spec else None, "drafted_tokens": 3 * steps if spec else None,
                     "accepted_tokens": accepted if spec else None, "accepted_per_pos": per_pos if spec else None})
    return conform_requests(pl.DataFrame(rows))


def _counters(reqs: pl.DataFrame, extra: int = 0) -> SpecCounters:
    pos = np.sum(np.array(reqs["accepted_per_pos"].drop_nulls().to_list()), axis=0)
    return SpecCounters(drafts=int(reqs["spec_steps"].sum()) + extra, draft_tokens=int(reqs["drafted_tokens"].sum()),
                        accepted_tokens=int(reqs["accepted_tokens"].sum()), accepted_per_pos=[int(p) for p in pos])


def test_per_request_sums_make_the_headline_and_agree_with_counters() -> None:
    reqs = _requests()
    m = cellstats.derive(reqs, depth=3, window_s=10.0, gpu_count=1, counters=_counters(reqs))
    v = m.values
    acc, drafted, steps = reqs["accepted_tokens"].sum(), reqs["drafted_tokens"].sum(), reqs["spec_steps"].sum()
    assert v["acceptance_source"] == "per-request" and v["acceptance_checked"] is True
    assert v["acceptance_suspect"] is None
    assert v["acceptance_rate"] == acc / drafted and v["acceptance_length"] == 1 + acc / steps
    assert v["counter_drafts"] == steps
    assert m.positions == [p / steps for p in np.sum(np.array(reqs["accepted_per_pos"].to_list()), axis=0)]


def test_a_counter_that_moved_more_than_the_requests_is_suspect_with_the_reason() -> None:
    reqs = _requests()
    v = cellstats.derive(reqs, depth=3, window_s=10.0, gpu_count=1, counters=_counters(reqs, extra=5)).values
    assert v["acceptance_checked"] is True
    assert v["acceptance_suspect"].startswith("per-request verify steps sum ")
    assert "another client" in v["acceptance_suspect"]


def test_failed_requests_may_leave_the_sums_lower_but_never_higher() -> None:
    reqs = _requests(failed=2)
    ok = reqs.filter(pl.col("ok"))
    # the failed requests drafted too: the counters are higher than the successful requests' sums
    assert cellstats.derive(reqs, depth=3, window_s=10.0, gpu_count=1,
                            counters=_counters(reqs)).values["acceptance_suspect"] is None
    low = _counters(ok)
    low.accepted_tokens -= 1
    assert "accepted tokens" in cellstats.derive(reqs, depth=3, window_s=10.0, gpu_count=1,
                                                 counters=low).values["acceptance_suspect"]


def test_without_per_request_metrics_the_counters_are_the_source_and_nothing_is_checked() -> None:
    reqs = _requests(missing=20)
    counters = SpecCounters(drafts=100, draft_tokens=300, accepted_tokens=150, accepted_per_pos=[70, 50, 30])
    v = cellstats.derive(reqs, depth=3, window_s=10.0, gpu_count=1, counters=counters).values
    assert v["acceptance_source"] == "counters" and v["acceptance_rate"] == 0.5
    assert v["acceptance_checked"] is None and v["acceptance_suspect"] is None
    assert cellstats.acceptance_replicates(reqs, seed=1) is None
    some = _requests(missing=3)
    v = cellstats.derive(some, depth=3, window_s=10.0, gpu_count=1, counters=counters).values
    assert v["acceptance_source"] == "counters" and "3 of 20" in v["acceptance_suspect"]


def test_acceptance_and_positions_get_bootstrap_intervals_around_the_point() -> None:
    reqs = _requests(n=40)
    m = cellstats.derive(reqs, depth=3, window_s=10.0, gpu_count=1)
    boot = cellstats.bootstrap(reqs, m, depth=3, seed=7)
    for name in ("acceptance_rate", "acceptance_length"):
        lo, hi = np.percentile(boot[name], [2.5, 97.5])
        assert lo < m.values[name] < hi and hi - lo > 0
    ivals = cellstats.position_intervals(reqs, seed=7)
    assert len(ivals) == 3
    for (lo, hi), point in zip(ivals, m.positions, strict=True):
        assert lo < point < hi


def test_a_measured_cell_lands_its_source_check_and_position_intervals(tmp_path) -> None:
    reqs = _requests()
    with store.session(tmp_path / "s.duckdb") as con:
        store.write_run(con, RunInfo("R", "vllm", "m.toml"))
        store.write_cell(con, "R", KEY, reqs, window_s=10.0, gpu_count=1, counters=_counters(reqs, extra=1))
        cell = sql.frame(con, "SELECT * FROM cells").row(0, named=True)
        pos = sql.frame(con, "SELECT * FROM positions ORDER BY position")
        stored = sql.frame(con, "SELECT accepted_per_pos, spec_steps FROM requests ORDER BY request_index")
    assert cell["acceptance_source"] == "per-request" and cell["acceptance_suspect"].startswith("per-request")
    assert pos.height == 3 and (pos["ci_low"] < pos["acceptance"]).all() and (pos["acceptance"] < pos["ci_high"]).all()
    assert stored["accepted_per_pos"].to_list() == reqs["accepted_per_pos"].to_list()


def test_an_older_store_gets_the_new_columns(tmp_path) -> None:
    import duckdb

    path = tmp_path / "old.duckdb"
    with store.session(path) as con:
        con.execute("ALTER TABLE cells DROP COLUMN acceptance_suspect")
        con.execute("ALTER TABLE requests DROP COLUMN accepted_per_pos")
    store._ENSURED.clear()
    with store.session(path, read_only=True) as con:
        assert sql.one(con, "SELECT count(*) FROM information_schema.columns WHERE column_name IN "
                            "('acceptance_suspect', 'accepted_per_pos')")[0] == 2
    assert isinstance(duckdb.__version__, str)
