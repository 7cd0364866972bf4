"""The shape fit's grid tables (analysis/calibration.py ``_log_tau_at``, ``_series_sse_of``) are computed by blocks
and one position at a time, for speed: they must equal the plain whole-grid formulas bit for bit, so every fitted
decay, depth exponent and winners answer stays exactly what it was."""

from __future__ import annotations

import numpy as np
import pytest

from analysis import calibration
from analysis.calibration import ALPHA_GRID, BLOCK_GRID, DECAY_GRID


def plain_log_tau(k: int) -> np.ndarray:
    i = np.arange(1, k + 1)
    shape = ALPHA_GRID[:, None, None] * DECAY_GRID[None, :, None] ** (i - 1)[None, None, :]
    out = np.empty((len(ALPHA_GRID), len(DECAY_GRID), len(BLOCK_GRID)))
    for j, b in enumerate(BLOCK_GRID):
        p = np.clip(shape * float(k) ** (-float(b)), 0.0, 0.98)
        out[:, :, j] = np.log(1.0 + np.cumprod(p, axis=2).sum(axis=2))
    return out


@pytest.mark.parametrize("k", [1, 2, 3, 7, 8, 9, 16, 17])  # numpy's summation changes its order at 8 terms
def test_expected_length_table_equals_the_plain_formula(k: int) -> None:
    assert np.array_equal(calibration._log_tau_at(k), plain_log_tau(k))


def test_series_error_equals_the_plain_formula_on_every_reference_series() -> None:
    series = [s for m in ("mtp", "eagle3", "dflash", "ngram") for s in calibration._depth_series(m, None)]
    assert len(series) >= 10  # the committed reference tables have many
    for s in series[:12]:
        points = tuple((int(r.depth), float(r.value)) for r in s)
        sse = np.zeros((len(ALPHA_GRID), len(DECAY_GRID), len(BLOCK_GRID)))
        for k, value in points:
            sse += (plain_log_tau(k) - np.log(value)) ** 2
        assert np.array_equal(calibration._series_sse_of(points), sse.min(axis=0))
