"""The default store follows the embedded default data: changed Parquet replaces the default runs, keeps the rest."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from ingest import default_data, default_stamp, open_store, sql, store
from ingest.records import CellKey, RunInfo
from tests.conftest import REPO

KEY = CellKey("eagle3", 3, "Qwen", "Qwen/Qwen3.5-397B-A17B", "code", "MI355X", 16)


@pytest.fixture(scope="module")
def small_default(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The default Parquet cut to one family on one GPU (same files, same format), and a store built from it."""
    base = tmp_path_factory.mktemp("small_default")
    folder = base / "default"
    folder.mkdir()
    cells = pl.read_parquet(default_data.DEFAULT_DIR / "cells.parquet").filter(
        (pl.col("family") == "Qwen") & (pl.col("gpu") == "MI355X"))
    keys = cells.select("run_id", "cell_id")
    for name in default_data.TABLES:
        frame = pl.read_parquet(default_data.DEFAULT_DIR / f"{name}.parquet")
        frame = frame.join(keys, on=["run_id", "cell_id"], how="semi") if "cell_id" in frame.columns else frame
        frame.write_parquet(folder / f"{name}.parquet")
    path = base / "spectune.duckdb"
    default_data.build_default_db(path, folder)
    return path, folder


@pytest.fixture
def built(tmp_path: Path, small_default: tuple[Path, Path]) -> tuple[Path, Path]:
    """A copy of the small default Parquet and of the store built from it, plus one user run."""
    folder = tmp_path / "default"
    shutil.copytree(small_default[1], folder)
    path = tmp_path / "spectune.duckdb"
    shutil.copy(small_default[0], path)
    n = 40
    reqs = pl.DataFrame({"request_index": np.arange(n), "input_tokens": [100] * n, "output_tokens": [50] * n,
                         "ttft_ms": [30.0] * n, "tpot_ms": [10.0] * n, "e2e_ms": [520.0] * n,
                         "start_s": np.arange(n) * 0.1})
    with store.session(path) as con:
        store.write_run(con, RunInfo(run_id="mine", backend="vllm", source="test"))
        store.write_cell(con, "mine", KEY, reqs, window_s=4.0, gpu_count=1)
    return path, folder


SIMULATED = "run_id <> 'mine' AND run_id IN (SELECT run_id FROM runs WHERE backend = 'sim')"
PUBLISHED = "run_id IN (SELECT run_id FROM runs WHERE backend = 'import')"  # data/published/, imported at build


def _sum(path: Path, where: str = SIMULATED) -> tuple:
    with store.session(path, read_only=True) as con:
        return sql.one(con, f"SELECT count(*), round(sum(output_throughput), 6) FROM cells WHERE {where}")


def test_changed_default_data_replaces_the_default_runs_and_keeps_the_users(built):
    path, folder = built
    before, mine, published = _sum(path), _sum(path, "run_id = 'mine'"), _sum(path, PUBLISHED)
    assert published[0] == 352  # the post's 324 cells and 28 baselines, beside the simulated runs
    assert not default_data.refresh_if_stale(path, folder)  # freshly built: nothing to do
    cells = pl.read_parquet(folder / "cells.parquet")
    cells.with_columns(pl.col("output_throughput") * 2).write_parquet(folder / "cells.parquet")
    assert default_data.refresh_if_stale(path, folder)
    after = _sum(path)
    assert after[0] == before[0] and after[1] == pytest.approx(2 * before[1], rel=1e-6)
    assert _sum(path, "run_id = 'mine'") == mine
    assert _sum(path, PUBLISHED) == published  # replaced by the same rows, never doubled
    assert not default_data.refresh_if_stale(path, folder)  # once


def test_a_rewrite_with_the_same_bytes_changes_nothing(built):
    path, folder = built
    data = (folder / "cells.parquet").read_bytes()
    time.sleep(0.01)
    (folder / "cells.parquet").write_bytes(data)  # new mtime, same content
    before = path.stat().st_mtime_ns
    assert not default_data.refresh_if_stale(path, folder)
    assert path.stat().st_mtime_ns == before


def test_a_store_not_built_from_the_default_data_is_never_touched(tmp_path, built):
    _, folder = built
    other = tmp_path / "other.duckdb"
    with store.session(other) as con:
        store.write_run(con, RunInfo(run_id="x", backend="sim", source="test"))
    assert not default_data.refresh_if_stale(other, folder)
    with store.session(other, read_only=True) as con:
        assert sql.one(con, "SELECT count(*) FROM cells")[0] == 0


def test_opening_the_default_path_refreshes_it(built, monkeypatch):
    path, folder = built
    monkeypatch.setenv("SPECTUNE_DB", str(path))
    monkeypatch.setattr(default_stamp, "DEFAULT_DIR", folder)
    runs = pl.read_parquet(folder / "runs.parquet")
    runs.with_columns(pl.lit("regenerated").alias("notes")).write_parquet(folder / "runs.parquet")
    with open_store.session(None, read_only=True) as con:
        notes = {r[0] for r in con.execute("SELECT notes FROM runs WHERE run_id <> 'mine' AND backend = 'sim'")
                 .fetchall()}
    assert notes == {"regenerated"}


def test_a_store_held_by_another_process_is_left_as_it_is_with_a_note(built, capsys):
    path, folder = built
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from ingest import store\n"
                               f"con = store.connect({str(path)!r})\nprint('held', flush=True)\ntime.sleep(60)"],
                              cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        cells = pl.read_parquet(folder / "cells.parquet")
        cells.with_columns(pl.col("output_throughput") * 2).write_parquet(folder / "cells.parquet")
        assert not default_data.refresh_if_stale(path, folder)
        assert "open in another process" in capsys.readouterr().err
    finally:
        holder.kill()
        holder.wait()
    assert default_data.refresh_if_stale(path, folder)  # the next start does it


def test_a_changed_published_table_refreshes_its_runs(built, tmp_path, monkeypatch):
    """The shipped published tables are default data too: a changed file replaces their runs, once."""
    from ingest import published_default

    path, folder = built
    root = tmp_path / "published"
    shutil.copytree(published_default.PUBLISHED_DIR, root)
    monkeypatch.setattr(published_default, "PUBLISHED_DIR", root)
    assert not default_data.refresh_if_stale(path, folder)  # new mtimes, the same bytes: nothing to do
    before = _sum(path, PUBLISHED)
    cells = root / "vllm-amd-2026-08" / "cells.csv"
    text = cells.read_text(encoding="utf-8")
    cells.write_text(text.replace(",2.54,5945,2344,", ",2.56,6001,2344,", 1), encoding="utf-8")  # a corrected figure
    assert default_data.refresh_if_stale(path, folder)
    after = _sum(path, PUBLISHED)
    assert after[0] == before[0] == 352 and after[1] == pytest.approx(before[1] + 56)  # replaced, not added
    assert not default_data.refresh_if_stale(path, folder)
