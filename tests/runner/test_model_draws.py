"""Model-uncertainty replicates of simulated cells (analysis/model_draws.py → runner → ingest).

Draw j is one parameter set for every cell (paired); the sim backend hands each cell's factors to ingest,
which multiplies the sampling bootstrap replicate j by draw j's factor and keeps the factors (table
``model_draws``) so a store rebuilt from exported tables (the default data) reproduces the same replicates.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from analysis import model_draws
from ingest import cellstats, sql, store
from ingest.bulk import bootstrap_frames
from runner.execute import RunOptions, run_matrix
from runner.matrix import load_matrix


def test_draws_are_shared_by_every_cell_and_spread_around_the_point():
    a = model_draws.cell_factors("eagle3", 3, "Qwen", "code", "MI355X", 1)
    b = model_draws.cell_factors("eagle3", 5, "Gemma", "chat", "MI300X", 64)
    assert a is not None and b is not None
    assert set(a) == set(cellstats.METRIC_KEYS) and all(v.shape == (model_draws.R,) for v in a.values())
    md = model_draws.method_draws("eagle3")
    assert md is model_draws.method_draws("eagle3")  # one draw set per method: every cell of a group shares it
    # the level error is the same draw for both cells, so their acceptance factors move together
    assert np.corrcoef(a["acceptance_length"], b["acceptance_length"])[0, 1] > 0.5
    assert 0.8 < np.median(a["output_throughput"]) < 1.25
    assert np.percentile(a["output_throughput"], 97.5) / np.percentile(a["output_throughput"], 2.5) > 1.1
    assert model_draws.cell_factors("none", 0, "Qwen", "code", "MI355X", 1) is None


def test_serial_head_prior_range_moves_only_dspark():
    ds = model_draws.method_draws("dspark")
    assert ds.serial_head_ms.min() >= 0.0 and ds.serial_head_ms.max() <= 1.2 and ds.serial_head_ms.std() > 0.1
    assert (model_draws.method_draws("dflash").serial_head_ms == 0.0).all()


def test_sim_cells_carry_model_draws_into_their_replicates(tmp_path, small_matrix):
    db = tmp_path / "m.duckdb"
    run_matrix(load_matrix(small_matrix), RunOptions(backend="sim", db=db, run_id="md"))
    with store.session(db) as con:
        cells = sql.frame(con, "SELECT * EXCLUDE (run_id) FROM cells")
        draws = sql.frame(con, "SELECT * FROM model_draws ORDER BY cell_id, replicate")
        boot = sql.frame(con, "SELECT * FROM cell_bootstrap ORDER BY cell_id, replicate")
        reqs = sql.frame(con, "SELECT * FROM requests ORDER BY cell_id, request_index")
        tables = store.export_tables(con, ["md"])
    spec = set(cells.filter(pl.col("method") != "none")["cell_id"])
    assert set(draws["cell_id"]) == spec  # no-spec cells have no model draws
    # replicate = sampling bootstrap × factor
    plain = bootstrap_frames(cells.with_columns(pl.lit("md").alias("run_id")), reqs)
    cid = sorted(spec)[0]
    got = boot.filter(pl.col("cell_id") == cid)["output_throughput"].to_numpy()
    base = plain.filter(pl.col("cell_id") == cid)["output_throughput"].to_numpy()
    f = draws.filter(pl.col("cell_id") == cid)["output_throughput"].to_numpy()
    np.testing.assert_allclose(got, base * f, rtol=1e-9)
    # a store rebuilt from the exported tables (the default-data path) has the same replicates
    assert "model_draws" in tables and tables["model_draws"].height == draws.height
    db2 = tmp_path / "rebuilt.duckdb"
    with store.session(db2) as con:
        store.write_tables_bulk(con, {k: v for k, v in tables.items()})
        boot2 = sql.frame(con, "SELECT * FROM cell_bootstrap ORDER BY cell_id, replicate")
    np.testing.assert_allclose(boot2["output_throughput"].to_numpy(), boot["output_throughput"].to_numpy(),
                               rtol=1e-9)
