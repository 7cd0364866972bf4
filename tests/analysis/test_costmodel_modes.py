"""The cost model's candidate modes (docs/simulator.md, "Modes"): a schedule's depth at a batch size, and vLLM's
adaptive verification budget (the global top-b of survival-scored draft slots that maximises expected tokens per
step time)."""

from __future__ import annotations

import numpy as np

from analysis import costmodel, params

SURV = np.array([[0.95, 0.85, 0.7, 0.55, 0.4, 0.3, 0.2, 0.12]])


def _dep():
    p = params.load()
    return p.deployment("Qwen", "MI300X"), p.methods["dspark"].draft


def test_depth_at_follows_the_ranges_and_carries_the_last_on() -> None:
    sched = ((1, 4, 5), (5, 64, 3))
    assert [costmodel.depth_at(sched, b) for b in (1, 4, 5, 64, 500)] == [5, 5, 3, 3, 3]


def test_the_budget_is_the_best_ratio_of_expected_tokens_to_step_time() -> None:
    dep, draft = _dep()
    for batch in (1, 8, 64, 256):
        got = costmodel.adaptive_budget(dep, draft, batch, SURV)
        # brute force over every budget b: admit the b best slots of the batch (here, like requests)
        best = max(range(SURV.size + 1), key=lambda b: (1 + SURV.ravel()[:b].sum()) / (
            costmodel.draft_ms(dep, draft, batch, 8) + costmodel.verify_ms(dep, batch, 1 + b)))
        assert got.mean_depth == best
        assert got.step_ms == costmodel.draft_ms(dep, draft, batch, 8) + costmodel.verify_ms(dep, batch, 1 + best)


def test_more_load_verifies_fewer_drafts_and_a_cheap_verify_keeps_them_all() -> None:
    dep, draft = _dep()
    depths = [costmodel.adaptive_budget(dep, draft, b, SURV).mean_depth for b in (1, 16, 64, 256)]
    assert depths == sorted(depths, reverse=True) and depths[0] > depths[-1]
    cheap = costmodel.adaptive_budget(dep, draft, 1, np.array([[0.99] * 8]))
    assert cheap.mean_depth == 8 and cheap.threshold == 0.0  # nothing trimmed
    # a mixed batch: the slots of the likelier request are admitted first
    mix = costmodel.adaptive_budget(dep, draft, 64, np.array([[0.95, 0.9, 0.85, 0.8], [0.5, 0.2, 0.05, 0.01]]))
    assert 0.01 < mix.threshold < 0.95
