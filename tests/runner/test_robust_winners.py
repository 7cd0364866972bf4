"""On the default (simulated) data, a clear winner is robust: it stays the winner under every model draw.

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
        n_draw_cells = sql.one(con, "SELECT count(DISTINCT cell_id) FROM model_draws")[0]
    return cells, doc, model, n_draw_cells


def test_every_spec_sim_cell_has_model_draws(loaded):
    cells, _doc, model, n = loaded
    spec = cells.filter(pl.col("method") != "none")
    assert n == spec.height and model.shape[1] >= 100
    none_rows = np.flatnonzero((cells["method"] == "none").to_numpy())
    assert (model[none_rows] == 1.0).all()


def test_clear_winners_survive_every_model_draw(loaded, capsys):
    cells, doc, model, _n = loaded
    key = {(r["run_id"], r["cell_id"]): i
           for i, r in enumerate(cells.select("run_id", "cell_id").iter_rows(named=True))}
    values = cells["output_throughput"].to_numpy().astype(float)
    clear = [c for c in doc["cells"] if c["clear"]]
    for c in clear:
        grp = cells.with_row_index("_i").filter(
            (pl.col("gpu") == c["gpu"]) & (pl.col("model") == c["model"]) & (pl.col("workload") == c["workload"])
            & (pl.col("concurrency") == c["concurrency"]))
        w = key[(c["run_id"], c["cell_id"])]
        others = [i for i in grp["_i"].to_list() if i != w and np.isfinite(values[i])]
        under = values[w] * model[w][None, :] - values[others][:, None] * model[others]
        assert (under > 0).all(), f"{c['gpu']}/{c['family']}/{c['workload']}/c{c['concurrency']} flips under a draw"
    with capsys.disabled():
        print(f"\nclear winners on the default data (output throughput): {len(clear)} of {len(doc['cells'])}")
        by_c = {}
        for c in doc["cells"]:
            by_c.setdefault(c["concurrency"], [0, 0])[0 if c["clear"] else 1] += 1
        print("  by concurrency (clear, tie):", dict(sorted(by_c.items())))
    assert get_metric("output_throughput").higher_is_better
