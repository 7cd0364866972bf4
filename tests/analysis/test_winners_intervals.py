"""The vectorised percentile intervals behind the winner rule give np.percentile's numbers, row by row."""

from __future__ import annotations

import numpy as np

from analysis.gains import interval, intervals


def test_vectorised_intervals_equal_numpy_percentile_per_row():
    rng = np.random.default_rng(0)
    for _ in range(300):
        m, b = int(rng.integers(1, 6)), int(rng.integers(1, 60))
        reps = rng.normal(size=(m, b))
        reps[rng.random((m, b)) < rng.random() * 0.9] = np.nan  # rows with few finite values too
        lo, hi = intervals(reps)
        for i in range(m):
            finite = reps[i][np.isfinite(reps[i])]
            if finite.size < 10:
                assert np.isnan(lo[i]) and np.isnan(hi[i])
            else:
                want = np.percentile(finite, [(1 - 0.95) / 2 * 100, (1 + 0.95) / 2 * 100])
                assert (lo[i], hi[i]) == (want[0], want[1])
                assert interval(reps[i]) == (want[0], want[1])


def test_no_replicates_at_all_give_one_missing_interval_per_row():
    lo, hi = intervals(np.empty((3, 0)))
    assert lo.shape == hi.shape == (3,) and np.isnan(lo).all() and np.isnan(hi).all()
    assert lo.dtype == hi.dtype == np.float64


def test_a_bound_exactly_half_way_is_lerped_from_the_upper_neighbour_as_numpy_does():
    # 11 replicates at level 0.5: the 25 % rank is 10 · 0.25 = 2.5, exactly half-way between the 3rd and 4th
    # smallest. numpy's lerp takes b − (b − a)·0.5 there (0.39999999999999997 for 0.1 and 0.7), not
    # a + (b − a)·0.5 (0.4).
    reps = np.array([0.0, 0.05, 0.1, 0.7, 1.0, 1.1, 1.2, 2.1, 2.7, 3.0, 3.1])
    lo, hi = intervals(reps[None, :], level=0.5)
    assert lo[0] == 0.7 - (0.7 - 0.1) * 0.5 == np.percentile(reps, 25)
    assert lo[0] != 0.1 + (0.7 - 0.1) * 0.5  # the two formulas do differ here, so the test can tell them apart
    assert hi[0] == np.percentile(reps, 75)
