"""Spec-Bench, SGLang bench_speculative, the published-results CSV and spectune Parquet exports, via the real CLI."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import duckdb
import numpy as np
import pytest

from tests.conftest import cli
from tests.ingest.results.conftest import REPO, SAMPLES, counts

SPEC = SAMPLES / "specbench_qwen3-8b-eagle3.jsonl"
VANILLA = SAMPLES / "specbench_qwen3-8b-vanilla.jsonl"
SGLANG = SAMPLES / "sglang_bench_speculative.jsonl"
PUBLISHED = REPO / "data" / "published_results.csv"
WORKLOADS = {"coding": "code", "math_reasoning": "reasoning", "math": "reasoning", "reasoning": "reasoning",
             "writing": "chat", "roleplay": "chat", "extraction": "chat", "stem": "chat", "humanities": "chat"}


def _import(db: Path, *args: str) -> dict:
    res = cli("ingest", "results", *args, "--db", str(db), "--json")
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def _rows(db: Path, sql: str) -> list[dict]:
    con = duckdb.connect(str(db), read_only=True)
    try:
        return con.sql(sql).pl().to_dicts()
    finally:
        con.close()


def _answers(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_specbench_acceptance_per_category_and_speedup(empty_db: Path) -> None:
    out = _import(empty_db, str(SPEC), "--baseline", str(VANILLA), "--set", "depth=5", "--set", "gpu=H100")
    spec, base = out["files"]
    assert (spec["format"], base["format"]) == ("specbench", "specbench")
    answers, vanilla = _answers(SPEC), _answers(VANILLA)
    # Spec-Bench's own figures, recomputed here from the raw lines (evaluation/speed.py's definitions)
    per_cat = {c["category"]: c for c in spec["summary"]["categories"]}
    for cat in {a["category"] for a in answers}:
        mine = [a["choices"][0] for a in answers if a["category"] == cat]
        theirs = [a["choices"][0] for a in vanilla if a["category"] == cat]
        tps = np.mean([sum(c["new_tokens"]) / sum(c["wall_time"]) for c in mine])
        btps = np.mean([sum(c["new_tokens"]) / sum(c["wall_time"]) for c in theirs])
        assert per_cat[cat]["acceptance_length"] == pytest.approx(
            np.mean([v for c in mine for v in c["accept_lengths"]]), rel=1e-12)
        assert per_cat[cat]["tokens_per_s"] == pytest.approx(tps, rel=1e-12)
        assert per_cat[cat]["speedup"] == pytest.approx(tps / btps, rel=1e-12)
    assert per_cat["overall"]["answers"] == len(answers)
    # cells: one per workload; method from the model_id naming, the baseline as `none`
    cells = _rows(empty_db, "SELECT * FROM cells ORDER BY method, workload")
    spec_cells = {c["workload"]: c for c in cells if c["method"] == "eagle3"}
    none_cells = {c["workload"]: c for c in cells if c["method"] == "none"}
    assert set(spec_cells) == set(none_cells) == {"code", "chat", "reasoning", "translation", "summarization",
                                                  "qa", "rag"}
    by_wl: dict[str, list[dict]] = defaultdict(list)
    for a in answers:
        by_wl[WORKLOADS.get(a["category"], a["category"])].append(a["choices"][0])
    for wl, chosen in by_wl.items():
        c = spec_cells[wl]
        tau = np.mean([v for ch in chosen for v in ch["accept_lengths"]])
        assert (c["depth"], c["concurrency"], c["gpu"], c["family"]) == (5, 1, "H100", "Qwen")
        assert c["acceptance_length"] == pytest.approx(tau, rel=1e-12)
        assert c["acceptance_rate"] == pytest.approx((tau - 1) / 5, rel=1e-12)
        tokens = sum(sum(ch["new_tokens"]) for ch in chosen)
        seconds = sum(sum(ch["wall_time"]) for ch in chosen)
        assert c["output_throughput"] == pytest.approx(tokens / seconds, rel=1e-12)
        assert c["n_requests"] == sum(len(ch["new_tokens"]) for ch in chosen)


def test_specbench_speedup_shows_up_in_winners(empty_db: Path) -> None:
    from analysis.frames import Filters
    from analysis.winners import winners
    from ingest import store

    _import(empty_db, str(SPEC), "--baseline", str(VANILLA), "--set", "depth=5", "--set", "gpu=H100")
    with store.session(empty_db, read_only=True) as con:
        res = winners(con, "output_throughput", Filters(workloads=("code",)))
    (group,) = res["cells"]
    assert group["winner"]["method"] == "eagle3" and group["clear"]
    assert group["gain_vs_none_pct"] > 50 and res["backends"] == ["import"]


def test_sglang_records_map_to_cells(empty_db: Path) -> None:
    records = [json.loads(line) for line in SGLANG.read_text().splitlines()]
    out = _import(empty_db, str(SGLANG), "--set", "method=eagle3", "--set", "family=Qwen", "--set",
                  "model=Qwen/Qwen3-8B", "--set", "workload=chat", "--set", "gpu=MI300X")["files"][0]
    assert out["format"] == "sglang_spec" and out["summary"]["records"] == len(records)
    trees = [r for r in records if r["topk"] > 1]
    assert out["rows"] == len(records) - len(trees)  # a tree config shares its (batch, steps) cell with a chain
    assert any("share a cell" in w for w in out["warnings"])
    cells = {(c["concurrency"], c["depth"]): c for c in _rows(empty_db, "SELECT * FROM cells")}
    for r in records:
        if r["topk"] > 1:
            continue
        c = cells[(r["batch_size"], r["steps"])]
        assert c["method"] == ("none" if r["steps"] == 0 else "eagle3")
        assert c["output_throughput"] == pytest.approx(r["speed"] * r["batch_size"], rel=1e-12)
        assert c["mean_tpot_ms"] == pytest.approx(1000 / r["speed"], rel=1e-12)
        if r["steps"]:
            assert c["acceptance_length"] == r["acc_length"]
            assert c["acceptance_rate"] == pytest.approx((r["acc_length"] - 1) / (r["num_draft_tokens"] - 1))
    assert _rows(empty_db, "SELECT count(*) AS n FROM requests")[0]["n"] == 0  # no per-request samples


def test_published_csv_keeps_every_row_and_fills_cells(empty_db: Path) -> None:
    import polars as pl

    src = pl.read_csv(PUBLISHED, infer_schema_length=0)
    out = _import(empty_db, str(PUBLISHED))["files"][0]
    s = out["summary"]
    assert s["measurements"] == src.height and s["in_cells"] + sum(s["not_in_cells"].values()) == src.height
    pub = pl.DataFrame(_rows(empty_db, "SELECT * FROM published ORDER BY line"))
    assert pub.height == src.height
    for col in ("source_url", "method", "metric", "dataset", "notes"):
        assert pub[col].to_list() == [v or None for v in src[col].to_list()], col
    assert pub["value"].to_list() == [float(v) for v in src["value"].to_list()]
    # every row that landed in a cell: the cell holds that exact value in the stated column
    cells = {c["cell_id"]: c for c in _rows(empty_db, "SELECT * FROM cells")}
    landed = pub.filter(pl.col("cell_id").is_not_null())
    assert landed.height == s["in_cells"] and len(cells) == out["rows"]
    for r in landed.iter_rows(named=True):
        assert cells[r["cell_id"]][r["cell_column"]] == r["value"]
    assert pub.filter(pl.col("metric") == "speedup")["cell_id"].null_count() == src.filter(
        pl.col("metric") == "speedup").height  # no cells column for a speedup
    first = pub.row(0, named=True)  # Kimi no-spec baseline, 82.7 tok/s/GPU at concurrency 4
    assert (first["cell_column"], cells[first["cell_id"]]["concurrency"]) == ("output_throughput_per_gpu", 4)
    again = _import(empty_db, str(PUBLISHED))["files"][0]
    assert (again["rows"], again["duplicates"]) == (0, out["rows"])


def test_export_then_import_round_trip_and_host_shards(tmp_path: Path, small_matrix: Path) -> None:
    """Two hosts each run part of a matrix into their own store, export, and a third store merges both."""
    hosts = []
    for i, gpu in enumerate(("MI300X", "MI355X")):
        db = tmp_path / f"host{i}.duckdb"
        m = tmp_path / f"m{i}.toml"
        m.write_text(small_matrix.read_text().replace('gpus = ["MI300X", "MI355X"]', f'gpus = ["{gpu}"]'))
        run = cli("runner", "run", "--matrix", str(m), "--db", str(db), "--json", "--run-id", f"host{i}")
        assert run.returncode == 0, run.stderr
        exp = cli("ingest", "export", "--run", f"host{i}", "--out", str(tmp_path / f"shard{i}"), "--db", str(db),
                  "--json")
        assert exp.returncode == 0, exp.stderr
        hosts.append((db, json.loads(exp.stdout)))
    merged = tmp_path / "merged.duckdb"
    out = _import(merged, str(tmp_path / "shard0"), str(tmp_path / "shard1" / "cells.parquet"))["files"]
    assert [f["format"] for f in out] == ["spectune_parquet"] * 2
    assert [f["rows"] for f in out] == [h[1]["rows"]["cells"] for h in hosts]
    # rows identical to the hosts' own (cells keep their run ids and the `sim` label); replicates recomputed
    for db, _ in hosts:
        for table in ("cells", "requests", "positions", "cell_bootstrap"):
            host = duckdb.connect(str(db), read_only=True)
            theirs = host.sql(f"SELECT * FROM {table} ORDER BY ALL").pl()
            host.close()
            con = duckdb.connect(str(merged), read_only=True)
            mine = con.sql(f"SELECT * FROM {table} WHERE run_id = ? ORDER BY ALL", params=[theirs["run_id"][0]]).pl()
            con.close()
            assert theirs.height and mine.equals(theirs), table
    runs = {r["run_id"]: r for r in _rows(merged, "SELECT * FROM runs")}
    assert runs["host0"]["backend"] == runs["host1"]["backend"] == "sim"
    provenance = [r for r in runs.values() if r["importer"] == "spectune_parquet"]
    assert len(provenance) == 2 and all(r["backend"] == "import" for r in provenance)
    before = counts(merged)
    again = _import(merged, str(tmp_path / "shard0"), str(tmp_path / "shard1"))["files"]
    assert [(f["rows"], f["duplicates"]) for f in again] == [(0, h[1]["rows"]["cells"]) for h in hosts]
    assert counts(merged) == before


def test_published_reader_columns_match_the_store_schema() -> None:
    from ingest import schema
    from ingest.results import published

    assert list(published.TABLE_COLUMNS) == schema.column_names(schema.published)
