"""On the default (simulated) data, a clear winner is robust: it is the best in ≥ 95 % of the joint draws (model
draw j × bootstrap replicate j, paired across its group) — recomputed here from the stored replicates.

Also prints how many cells are clear, and checks the plumbing the rule stands on: every speculative
simulated cell has model draws, no-spec cells have none.
"""

from __future__ import annotations

import numpy as np
import polars as pl
import pytest

from analysis import frames, winners
from analysis.metrics import get_metric
from ingest import sql, store


@pytest.fixture(scope="module")
def loaded(default_db):
    with store.session(default_db, read_only=True) as con:
        sim = frames.Filters(backends=("sim",))  # the simulated matrix (the store also ships published cells)
        cells = frames.cells(con, sim)
        doc = winners.winners(con, "output_throughput", sim)
        model = frames.model_factors(con, cells, "output_throughput")
        reps = frames.replicates(con, cells, get_metric("output_throughput").value_column)
        n_draw_cells = sql.one(con, "SELECT count(DISTINCT cell_id) FROM model_draws")[0]
    return cells, doc, model, n_draw_cells, reps


def test_every_spec_sim_cell_has_model_draws(loaded):
    cells, _doc, model, n, _reps = loaded
    spec = cells.filter(pl.col("method") != "none")
    assert n == spec.height and model.shape[1] >= 100
    none_rows = np.flatnonzero((cells["method"] == "none").to_numpy())
    assert (model[none_rows] == 1.0).all()


def test_clear_winners_are_best_in_95_percent_of_the_joint_draws(loaded, capsys):
    cells, doc, model, _n, reps = loaded
    steady = get_metric("output_throughput").value_column
    key = {(r["run_id"], r["cell_id"]): i
           for i, r in enumerate(cells.select("run_id", "cell_id").iter_rows(named=True))}
    values = cells[steady].to_numpy().astype(float)
    clear = [c for c in doc["cells"] if c["clear"]]
    spec = np.flatnonzero((cells["method"] != "none").to_numpy())
    with np.errstate(invalid="ignore", divide="ignore"):  # the draws really are inside the replicates
        assert not np.allclose((reps / model[:, : reps.shape[1]])[spec], reps[spec], equal_nan=True)
    for c in clear:
        grp = cells.with_row_index("_i").filter(
            (pl.col("gpu") == c["gpu"]) & (pl.col("model") == c["model"]) & (pl.col("workload") == c["workload"])
            & (pl.col("concurrency") == c["concurrency"]))
        w = key[(c["run_id"], c["cell_id"])]
        others = [i for i in grp["_i"].to_list() if i != w and np.isfinite(values[i])]
        ahead = (reps[w][None, :] > reps[others]).all(axis=0)
        share = ahead[np.isfinite(reps[w])].mean()
        where = f"{c['gpu']}/{c['family']}/{c['workload']}/c{c['concurrency']}"
        assert share >= 0.95 - 1e-9, f"{where}: best in {share:.2f}"
    with capsys.disabled():
        print(f"\nclear winners on the default data (output throughput): {len(clear)} of {len(doc['cells'])}")
        by_c = {}
        for c in doc["cells"]:
            by_c.setdefault(c["concurrency"], [0, 0])[0 if c["clear"] else 1] += 1
        print("  by concurrency (clear, tie):", dict(sorted(by_c.items())))
    assert get_metric("output_throughput").higher_is_better
