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


@pytest.mark.parametrize("target,k,decay", [(2.0, 2, 1.0), (2.8, 3, 1.0), (4.5, 7, 0.95), (1.3, 5, 0.9)])
def test_solve_alpha_inverts_expected_tokens(target, k, decay):
    a = acceptance.solve_alpha(target, k, decay)
    assert acceptance.expected_tokens(acceptance.positions(a, decay, k)) == pytest.approx(target, rel=1e-6)


def test_fit_alpha_from_counters_recovers_alpha():
    alpha, k, drafts = 0.7, 4, 10_000
    accepted = drafts * (acceptance.expected_tokens_iid(alpha, k) - 1)
    assert acceptance.fit_alpha_from_counters(drafts, accepted, k) == pytest.approx(alpha, abs=1e-6)
    assert np.isnan(acceptance.fit_alpha_from_counters(0, 0, k))


def test_fit_from_positions_recovers_shape():
    r = acceptance.cumulative(acceptance.positions(0.8, 0.9, 5))
    a, d = acceptance.fit_from_positions(r)
    assert a == pytest.approx(0.8, rel=1e-6) and d == pytest.approx(0.9, rel=1e-6)
