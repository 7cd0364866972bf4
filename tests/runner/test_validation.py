"""Leave-one-source-out validation of the acceptance model (analysis/validation.py).

``pytest -s`` prints the table (by depth and by method × depth) and every left-out row. The table in
docs/simulator.md must equal the computed one (regenerate with ``python scripts/validation_table.py``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analysis import calibration, validation

DOC = Path(__file__).resolve().parents[2] / "docs" / "simulator.md"


def test_table_is_printed_and_covers_every_source(capsys):
    preds = validation.leave_one_source_out()
    with capsys.disabled():
        print("\nleave-one-source-out: fit without the source, predict its rows (acceptance length)")
        print(f"{'line':>4} {'method':<7} {'family':<8} {'model':<28} {'workload':<9} {'k':>2} "
              f"{'published':>9} {'predicted':>9} {'error':>7} via")
        for p in sorted(preds, key=lambda p: (p.row.depth, p.row.method, p.row.line)):
            r = p.row
            print(f"{r.line:>4} {r.method:<7} {r.family:<8} {r.model[:28]:<28} {r.workload:<9} {r.depth:>2} "
                  f"{r.value:>9.2f} {p.predicted:>9.2f} {p.error:>7.1%} {p.kind}")
        print(validation.markdown_table())
        print("\nlevel or shape: the error once each left-out source's own level is fitted (diagnostic only)")
        print(validation.diagnosis_table())
    sources = {r.source_url for r in validation.evaluable_rows()}
    assert {p.row.source_url for p in preds} == sources and len({calibration.study(s) for s in sources}) >= 8
    assert len(preds) == len(validation.evaluable_rows())


def test_left_out_source_does_not_reach_its_own_prediction():
    """Out of sample for real: removing a source changes the fit that predicts it."""
    src = "https://github.com/deepseek-ai/DeepSpec/blob/main/DSpark_paper.pdf"
    with_all = calibration.alpha_source("dspark", "Gemma", "code", moe=False)
    without = calibration.alpha_source("dspark", "Gemma", "code", moe=False, exclude=src)
    assert with_all.kind == "fitted" and any(r.source_url == src for r in with_all.rows)
    assert all(r.source_url != src for r in without.rows) and without.alpha != with_all.alpha


def test_a_secondary_report_is_left_out_with_its_primary_source():
    """AI Weekly re-reports the GLM-5.2 preview card: leaving the card's study out leaves out both."""
    secondary, primary = next(iter(calibration.SAME_STUDY.items()))
    assert any(r.source_url == secondary for r in validation.evaluable_rows())
    fit = calibration.alpha_fit(primary)
    left = [r for rows in fit.groups.values() for _, r in rows]
    assert left and all(calibration.study(r.source_url) != primary for r in left)
    assert all(p.row.source_url in (secondary, primary) for p in validation.leave_one_source_out()
               if calibration.study(p.row.source_url) == primary)


def test_docs_carry_the_computed_table():
    doc = DOC.read_text()
    table = validation.doc_table(doc)
    assert table is not None, "docs/simulator.md lacks the validation-table markers"
    assert table == validation.markdown_table(), "docs/simulator.md is stale: run python scripts/validation_table.py"
    diag = validation.doc_table(doc, validation.DIAG_START, validation.DIAG_END)
    assert diag is not None, "docs/simulator.md lacks the validation-diagnosis markers"
    assert diag == validation.diagnosis_table(), "docs/simulator.md is stale: run python scripts/validation_table.py"


def test_the_error_is_mostly_the_sources_level():
    """What docs/simulator.md claims: one level number per left-out source removes most of the error at every
    depth with data, so the misses are in the level a source's drafter reaches, not in the depth shape."""
    after = validation.after_shift_by_depth()
    for d, c in MEDIANS.items():
        assert after[d] < c.median / 1.5, f"depth {d}: {after[d]:.1%} after the level vs {c.median:.1%}"
    assert after[3] <= validation.TOLERANCE


MEDIANS = validation.by_depth()
OVER = {d: c.median for d, c in MEDIANS.items() if c.median > validation.TOLERANCE}


@pytest.mark.xfail(bool(OVER), strict=True, reason=(
    "NOT MET: median out-of-sample error above 15 % at depths "
    + ", ".join(f"{d} ({m:.0%})" for d, m in sorted(OVER.items()))
    + f" (n={', '.join(str(MEDIANS[d].n) for d in sorted(OVER))}): the left-out sources' drafters differ in level "
      "by more than (method, family, workload, depth) predicts — one level number per source brings the "
      "medians to " + ", ".join(f"{d}: {validation.after_shift_by_depth()[d]:.0%}" for d in sorted(OVER))
    + " (docs/simulator.md, 'Validation'); strict, so it turns red the day the model meets the bar"))
def test_median_out_of_sample_error_within_tolerance_at_every_depth_with_data():
    assert MEDIANS, "no depth has data"
    for d, c in MEDIANS.items():
        assert c.median <= validation.TOLERANCE, f"depth {d}: median error {c.median:.1%} over {c.n} rows"


def test_residuals_feed_the_model_draws():
    res = validation.residuals_by_method()
    assert res["*"].size == len(validation.leave_one_source_out())
    assert np.isfinite(res["*"]).all()
