"""Counter increases (resets, gaps, baselines) and acceptance windows with intervals, on constructed samples."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import numpy as np
import polars as pl
import pytest

from analysis.production import deltas
from analysis.production.windows import TOO_FEW, WindowSpec, acceptance_windows, iso_utc, ratio_interval, wilson

T = datetime(2026, 12, 1, 12, 0, 0)


def _frame(rows: list[dict]) -> pl.DataFrame:
    base = {"segment": "s", "family": "F", "method": "ngram", "depth": 3, "gpu": "g", "gpu_count": 1,
            "workload": "code", "source": "metrics", "generation_tokens": 0.0, "prompt_tokens": 0.0,
            "requests_ok": 0.0, "process_start_s": 1.0}
    return pl.DataFrame([{**base, **r} for r in rows], infer_schema_length=None)


def _row(target: str, i: int, drafts: float, accepted: float, **kw) -> dict:
    return {"target": target, "ts": T + timedelta(seconds=15 * i), "drafts": drafts, "draft_tokens": drafts * 3,
            "accepted_tokens": accepted, **kw}


def test_first_sample_is_the_baseline_and_increases_follow() -> None:
    iv = deltas.intervals(_frame([_row("a", 0, 100, 50), _row("a", 1, 150, 80), _row("a", 2, 200, 90)]))
    assert iv["drafts"].to_list() == [50, 50] and iv["accepted_tokens"].to_list() == [30, 10]
    assert iv["dt_s"].to_list() == [15.0, 15.0] and not iv["reset"].any() and not iv["gap"].any()


def test_a_restart_counts_from_zero_and_a_start_time_change_is_a_restart_too() -> None:
    rows = [_row("a", 0, 100, 50), _row("a", 1, 20, 10),  # went backwards
            _row("a", 2, 30, 15), _row("a", 3, 40, 20, process_start_s=9.0)]  # grew, but a new process
    iv = deltas.intervals(_frame(rows))
    assert iv["reset"].to_list() == [True, False, True]
    assert iv["drafts"].to_list() == [20, 10, 40]
    assert iv["accepted_tokens"].to_list() == [10, 5, 20]


def test_a_gap_is_flagged_but_its_increase_is_kept() -> None:
    rows = [_row("a", i, 10 * i, 5 * i) for i in range(6)] + [_row("a", 20, 300, 150)]
    iv = deltas.intervals(_frame(rows))
    assert iv["gap"].to_list() == [False] * 5 + [True]
    assert iv["drafts"].sum() == 300


def test_targets_do_not_mix_and_labels_come_from_the_later_sample() -> None:
    rows = [_row("a", 0, 0, 0), _row("b", 0, 1000, 900), _row("a", 1, 10, 5, segment="new"),
            _row("b", 1, 1010, 905)]
    iv = deltas.intervals(_frame(rows)).sort("target")
    assert iv["drafts"].to_list() == [10, 10] and iv["segment"].to_list() == ["new", "s"]


def test_windows_give_vllms_definitions_and_an_interval_around_them() -> None:
    rng = np.random.default_rng(3)
    rows, d, a = [], 0.0, 0.0
    for i in range(60):
        step = float(rng.poisson(300))
        d += step
        a += float(rng.binomial(int(step * 3), 0.4))
        rows.append(_row("a", i, d, a))
    iv = deltas.intervals(_frame(rows))
    (w,) = acceptance_windows(iv, None, WindowSpec(window_s=86_400))
    assert w["acceptance_rate"] == pytest.approx(iv["accepted_tokens"].sum() / iv["draft_tokens"].sum())
    assert w["acceptance_length"] == pytest.approx(1 + iv["accepted_tokens"].sum() / iv["drafts"].sum())
    lo, hi = w["acceptance_rate_ci"]
    assert lo < 0.4 < hi and hi - lo < 0.02
    hourly = acceptance_windows(iv, None, WindowSpec(window_s=300))
    assert len(hourly) >= 3 and sum(h["drafts"] for h in hourly) == w["drafts"]


def test_per_position_rates_and_too_few_intervals_have_no_interval() -> None:
    rows = [_row("a", 0, 0, 0), _row("a", 1, 100, 150)]
    iv = deltas.intervals(_frame(rows))
    pos = pl.DataFrame({"target": ["a"] * 6, "ts": [T, T, T, T + timedelta(seconds=15)] * 1 + [T + timedelta(
        seconds=15)] * 2, "position": [1, 2, 3, 1, 2, 3], "v": [0.0, 0.0, 0.0, 80.0, 50.0, 20.0]})
    pos_iv = deltas.keyed_intervals(pos, ["position"], iv.select("target", "ts", "reset"))
    (w,) = acceptance_windows(iv, pos_iv, WindowSpec())
    assert w["per_position"] == [0.8, 0.5, 0.2]
    assert w["acceptance_length"] == pytest.approx(1 + sum(w["per_position"]))
    assert w["acceptance_rate_ci"] == [None, None]
    assert ratio_interval(np.array([1.0, 2.0]), np.array([2.0, 2.0])) == (None, None)


def test_wilson_matches_the_textbook_interval() -> None:
    # 50 of 100: the Wilson score interval is [0.4038, 0.5962]; at 0 of 20 it still reaches 0.161 (not a point)
    assert wilson(0.5, 100) == pytest.approx((0.4038, 0.5962), abs=1e-4)
    lo, hi = wilson(0.0, 20)
    assert lo == 0.0 and hi == pytest.approx(0.1611, abs=1e-4)


def test_a_tiny_window_has_no_interval_and_says_too_few_tokens() -> None:
    # four scrape intervals with two drafts each: a rate, but far too few drafts to tell it from anything else
    rows = [_row("a", i, 2.0 * i, 6.0 * i) for i in range(5)]
    (w,) = acceptance_windows(deltas.intervals(_frame(rows)), None, WindowSpec(window_s=86_400))
    assert w["acceptance_rate"] == pytest.approx(1.0) and w["drafts"] == 8
    assert w["acceptance_rate_ci"] == [None, None] and w["acceptance_length_ci"] == [None, None]
    assert w["interval"] == TOO_FEW == "too few tokens to tell"


def test_one_busy_interval_among_idle_ones_is_not_an_exact_point() -> None:
    # ten intervals, only one drafted: every bootstrap replicate that has it gives the same ratio (zero width)
    rows, d, a = [], 0.0, 0.0
    for i in range(11):
        if i == 6:
            d, a = d + 500, a + 600
        rows.append(_row("a", i, d, a))
    (w,) = acceptance_windows(deltas.intervals(_frame(rows)), None, WindowSpec(window_s=86_400))
    assert w["drafts"] == 500 and w["interval"] == TOO_FEW and w["acceptance_rate_ci"] == [None, None]


def test_an_all_accepted_window_gets_a_width_from_its_drafts() -> None:
    # every draft fully accepted in 5 intervals of 10 drafts: the bootstrap alone says [1, 1]; 50 drafts cannot
    # tell 1.0 from 0.93
    rows = [_row("a", i, 10.0 * i, 30.0 * i) for i in range(6)]
    iv = deltas.intervals(_frame(rows))
    assert ratio_interval(iv["accepted_tokens"].to_numpy(), iv["draft_tokens"].to_numpy()) == (1.0, 1.0)
    (w,) = acceptance_windows(iv, None, WindowSpec(window_s=86_400))
    lo, hi = w["acceptance_rate_ci"]
    assert w["interval"] == "95 %" and hi == 1.0 and lo == pytest.approx(wilson(1.0, 50)[0], abs=1e-6) and lo < 0.95
    llo, lhi = w["acceptance_length_ci"]
    assert lhi == pytest.approx(4.0) and llo == pytest.approx(1 + 3 * lo, abs=1e-5)


def test_window_starts_are_utc_with_their_offset() -> None:
    rows = [_row("a", i, 100.0 * i, 120.0 * i) for i in range(5)]
    (w,) = acceptance_windows(deltas.intervals(_frame(rows)), None, WindowSpec(window_s=3600))
    assert w["window"] == "2026-12-01T12:00:00+00:00"
    assert iso_utc(datetime(2026, 12, 1, 13, 0, tzinfo=timezone(timedelta(hours=1)))) == "2026-12-01T12:00:00+00:00"
