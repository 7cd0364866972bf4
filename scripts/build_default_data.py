"""Regenerate the embedded default data: run the default matrix on the simulator and export it as Parquet.

    python scripts/build_default_data.py

Writes data/default/{runs,cells,positions,requests}.parquet (the store rebuilds bootstrap replicates).
The run id and timestamps are fixed so the committed data is reproducible from the same code.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import polars as pl

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from ingest import store
from ingest.default_data import write_default_tables
from runner.execute import RunOptions, run_matrix
from runner.matrix import load_matrix

RUN_ID = "default-sim"


def main() -> int:
    matrix = load_matrix(store.REPO_ROOT / "runner" / "matrices" / "default.toml")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "build.duckdb"
        summary = run_matrix(matrix, RunOptions(backend="sim", db=db, run_id=RUN_ID))
        with store.session(db) as con:
            tables = store.export_tables(con, [RUN_ID])
    fixed = pl.datetime(2026, 11, 29)
    tables["runs"] = tables["runs"].with_columns(
        pl.lit("runner/matrices/default.toml").alias("source"), started_at=fixed, finished_at=fixed)
    tables["cells"] = tables["cells"].with_columns(written_at=fixed)
    sizes = write_default_tables(tables)
    print(f"{summary.cells_ok} cells; parquet bytes: {sizes} (total {sum(sizes.values()) / 1e6:.2f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
