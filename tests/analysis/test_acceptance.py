"""The acceptance model: E(k), its i.i.d. closed form, and the fits from counters and positions."""

from __future__ import annotations

import numpy as np
import pytest

from analysis import acceptance


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.6, 0.85, 0.97])
@pytest.mark.parametrize("k", [1, 2, 3, 5, 8])
def test_iid_closed_form_matches_the_general_sum(alpha, k):
    assert acceptance.expected_tokens([alpha] * k) == pytest.approx(acceptance.expected_tokens_iid(alpha, k))


def test_cumulative_and_conditional_round_trip():
    cond = np.array([0.8, 0.7, 0.6, 0.5])
    r = acceptance.cumulative(cond)
    assert r == pytest.approx([0.8, 0.56, 0.336, 0.168])
    assert acceptance.conditional_from_cumulative(r) == pytest.approx(cond)
    # τ = 1 + Σ r_i: vLLM's per-position counters sum to the accepted tokens
    assert acceptance.expected_tokens(cond) == pytest.approx(1 + r.sum())


def _alpha_by_polynomial_root(target: float, k: int, decay: float) -> float:
    """The α in (0, 1) with 1 + Σ_i α^i·decay^(i(i−1)/2) = target (p_i = α·decay^(i−1) multiplied out), by np.roots:
    a second implementation of what solve_alpha finds by bisection."""
    coeffs = [decay ** (i * (i - 1) / 2) for i in range(k, 0, -1)] + [1.0 - target]  # highest power first
    roots = [r.real for r in np.roots(coeffs) if abs(r.imag) < 1e-9 and 0 < r.real < 1]
    assert len(roots) == 1
    return roots[0]


@pytest.mark.parametrize("target,k,decay,alpha", [
    (1.6, 1, 1.0, 0.6),  # E = 1 + α
    (1.6, 1, 0.5, 0.6),  # decay does not touch the first position
    (2.0, 2, 1.0, (5 ** 0.5 - 1) / 2),  # 1 + α + α² = 2: the golden ratio's conjugate
    (2.0, 2, 0.5, 3 ** 0.5 - 1),  # 1 + α + α²/2 = 2
    (2.8, 3, 1.0, None), (3.5, 3, 1.0, None), (4.5, 7, 0.95, None), (1.3, 5, 0.9, None),
])
def test_solve_alpha_matches_closed_forms_and_polynomial_roots(target, k, decay, alpha):
    want = alpha if alpha is not None else _alpha_by_polynomial_root(target, k, decay)
    if alpha is not None:
        assert _alpha_by_polynomial_root(target, k, decay) == pytest.approx(alpha, abs=1e-12)
    assert acceptance.solve_alpha(target, k, decay) == pytest.approx(want, abs=1e-9)


def test_solve_alpha_clips_to_what_the_shape_can_reach():
    assert acceptance.solve_alpha(0.5, 3) == pytest.approx(0.0, abs=1e-12)  # τ below 1: no acceptance
    assert acceptance.solve_alpha(99.0, 3) == pytest.approx(0.98, abs=1e-9)  # beyond the cap's E(k): the cap


def test_fit_alpha_from_counters_recovers_alpha():
    alpha, k, drafts = 0.7, 4, 10_000
    accepted = drafts * (acceptance.expected_tokens_iid(alpha, k) - 1)
    assert acceptance.fit_alpha_from_counters(drafts, accepted, k) == pytest.approx(alpha, abs=1e-6)
    assert np.isnan(acceptance.fit_alpha_from_counters(0, 0, k))


def test_fit_from_positions_recovers_shape():
    r = acceptance.cumulative(acceptance.positions(0.8, 0.9, 5))
    a, d = acceptance.fit_from_positions(r)
    assert a == pytest.approx(0.8, rel=1e-6) and d == pytest.approx(0.9, rel=1e-6)
