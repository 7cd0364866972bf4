"""File-size caps as settings (ingest.caps): flag > environment > default, an error that names the setting, and an
export that always imports back — tested at a small cap instead of writing a 1 GiB file: the exporter splits any
table over the cap in force into parts below it, and the importer reads the parts."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest import caps, sql, store
from ingest.errors import UsageError
from runner.execute import RunOptions, run_matrix
from runner.matrix import load_matrix
from tests.conftest import cli
from tests.ingest.results.test_reimport import MATRIX

CAP_ENV = caps.IMPORT_CAP.env


def test_sizes_parse_with_units_and_bad_ones_name_the_setting() -> None:
    assert caps.parse_size("1073741824", "x") == 1 << 30
    assert caps.parse_size("1GiB", "x") == caps.parse_size("1024 MiB", "x") == 1 << 30
    assert caps.parse_size("2GB", "x") == 2_000_000_000 and caps.parse_size("1.5k", "x") == 1500
    for bad in ("", "ten", "-5", "5 parsecs", "0"):
        with pytest.raises(UsageError, match="--max-file-bytes"):
            caps.parse_size(bad, "--max-file-bytes")


def test_flag_beats_environment_beats_default(monkeypatch) -> None:
    monkeypatch.delenv(CAP_ENV, raising=False)
    assert caps.resolve(caps.IMPORT_CAP) == (1 << 30, "default")
    monkeypatch.setenv(CAP_ENV, "2GiB")
    assert caps.resolve(caps.IMPORT_CAP) == (2 << 30, f"${CAP_ENV}")
    caps.set_from_flag(caps.IMPORT_CAP, "300MiB")
    try:
        assert caps.resolve(caps.IMPORT_CAP) == (300 << 20, "--max-file-bytes")
    finally:
        caps.set_from_flag(caps.IMPORT_CAP, None)


def test_an_export_over_the_cap_is_split_and_imports_back_and_a_lower_cap_is_named(tmp_path: Path) -> None:
    matrix = tmp_path / "m.toml"
    matrix.write_text(MATRIX.replace("requests_per_cell = 10", "requests_per_cell = 1000"))
    db = tmp_path / "s.duckdb"
    run_matrix(load_matrix(matrix), RunOptions(db=db, run_id="R"))
    whole = tmp_path / "whole"
    res = cli("ingest", "export", "--run", "R", "--out", str(whole), "--db", str(db))
    assert res.returncode == 0, res.stderr
    size = (whole / "requests.parquet").stat().st_size
    cap = size // 3  # the 1 GiB case in small: requests.parquet is 3x over this cap
    env = {CAP_ENV: str(cap)}
    # importing the unsplit export under that cap: refused, naming the cap, its source and how to raise it
    fresh = tmp_path / "fresh.duckdb"
    res = cli("ingest", "results", str(whole), "--db", str(fresh), env=env)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert f"over the {cap}-byte import limit (${CAP_ENV}); raise it with --max-file-bytes SIZE" in res.stderr
    # exporting under the cap splits the table; the parts import back and land every row
    split = tmp_path / "split"
    res = cli("ingest", "export", "--run", "R", "--out", str(split), "--json", "--db", str(db), env=env)
    assert res.returncode == 0, res.stderr
    parts = sorted(split.glob("requests.part-*.parquet"))
    assert len(parts) >= 3 and not (split / "requests.parquet").exists()
    assert all(p.stat().st_size <= cap for p in parts)
    res = cli("ingest", "results", str(split), "--db", str(fresh), env=env)
    assert res.returncode == 0, res.stderr
    with store.session(db, read_only=True) as a, store.session(fresh, read_only=True) as b:
        for table in ("cells", "requests", "positions"):
            q = f"SELECT count(*) FROM {table} WHERE run_id = ?"
            assert sql.one(a, q, ["R"]) == sql.one(b, q, ["R"]) and sql.one(b, q, ["R"])[0] > 0
    # the command-line flag wins over the environment and is named when it is the one in force
    res = cli("ingest", "results", str(split), "--max-file-bytes", str(cap // 4), "--db", str(tmp_path / "x.duckdb"),
              env=env)
    assert res.returncode == 2 and f"over the {cap // 4}-byte import limit (--max-file-bytes)" in res.stderr
