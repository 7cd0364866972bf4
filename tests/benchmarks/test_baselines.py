"""The honest baselines (benchmarks/baselines.py) compute what spectune computes: the three engines' per-cell
moments agree with each other, the replicates built from them equal the store's, and the verdicts equal
spectune's winners on a store whose cells take the large-cell bootstrap (the session's 12.1 M-row store)."""

from __future__ import annotations

import itertools
from pathlib import Path

import duckdb
import numpy as np
import pytest

from analysis.winners import winners
from benchmarks import baselines
from benchmarks.baseline_pandas import agreement
from benchmarks.generate import make_export
from ingest import store
from tests.conftest import cli


def test_duckdb_baseline_gives_spectunes_verdicts_and_replicates(big_store: tuple[Path, dict]):
    db, _ = big_store
    with store.session(db, read_only=True) as con:
        doc = winners(con)
    res = baselines.winners_from_rows("duckdb", db)
    assert agreement(doc, res) == {"groups": 72, "same_winner": 72, "same_verdict": 72}
    assert 0 < sum(v["clear"] for v in res.values()) < 72  # both clear winners and ties: the rule is exercised
    m, cells = baselines.moments_duckdb(db)
    con = duckdb.connect(str(db), read_only=True)
    try:
        stored = dict(con.execute("SELECT cell_id, list(output_throughput ORDER BY replicate) FROM cell_bootstrap "
                                  "GROUP BY cell_id").fetchall())
    finally:
        con.close()
    row = {c: j for j, c in enumerate(cells["cell_id"])}
    flips = [np.array(s) for s in itertools.product((1.0, -1.0), repeat=4)]
    exact = 0
    for i, cell in enumerate(m["cell_id"]):
        j = row[cell]
        point, depth, want = float(m["tok"][i]) / float(cells["window_s"][j]), int(cells["depth"][j]), stored[cell]
        close = [np.allclose(baselines.replicates(m, i, depth, point, s), want, rtol=1e-7, atol=0) for s in flips]
        exact += close[0]
        assert any(close), cell  # the same draws, up to the sign of an eigenvector (see baselines.replicates)
    assert exact >= 0.9 * len(m["cell_id"])


@pytest.fixture(scope="module", params=[1, 3], ids=["one export", "three parts"])
def small(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A small export (~10 requests per cell) and its store; in three parts of disjoint cells, imported one by
    one, as benchmarks/scaling.py builds its biggest stores."""
    folder = tmp_path_factory.mktemp("baselines")
    make_export(30_000, folder / "export", parts=request.param)
    db = folder / "s.duckdb"
    parts = [folder / "export"] if request.param == 1 else sorted((folder / "export").glob("part*"))
    for part in parts:
        proc = cli("ingest", "results", str(part), "--db", str(db), "--json")
        assert proc.returncode == 0, proc.stderr
    with store.session(db, read_only=True) as con:
        assert len(winners(con)["cells"]) == 72  # every group, whether landed at once or in parts
    return folder / "export", db


def test_the_three_engines_compute_the_same_moments(small: tuple[Path, Path]):
    export, db = small
    ref, _ = baselines.moments_duckdb(db)
    order = np.argsort(ref["cell_id"])
    for scan in (baselines.moments_pandas, baselines.moments_polars):
        m, cells = scan(export)
        o = np.argsort(m["cell_id"])
        assert list(m["cell_id"][o]) == list(ref["cell_id"][order]) and len(cells["cell_id"]) == len(o)
        assert (m["drafted_missing"][o] == ref["drafted_missing"][order]).all()
        full = ref["drafted_missing"][order] == 0  # sums over drafted counts are used (and defined) only here
        assert 0 < full.sum() < len(full)
        for col in baselines.MOMENTS[2:]:
            rows = full if "2" in col[1:] else slice(None)
            np.testing.assert_allclose(m[col][o][rows].astype(float), ref[col][order][rows].astype(float),
                                       rtol=1e-9, err_msg=f"{scan.__name__}: {col}")


def test_cells_bootstrapped_exactly_are_refused(small: tuple[Path, Path]):
    _, db = small
    with pytest.raises(ValueError, match="exactly"):
        baselines.winners_from_rows("duckdb", db)
