"""Ray fan-out on a real local Ray cluster with the sim backend: placement by GPU resource, equality
with a sequential run, configs no node can host, and a task lost with its node retried elsewhere."""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from ingest import sql, store
from runner.execute import RunOptions, run_matrix
from runner.matrix import load_matrix
from tests.conftest import REPO

ray = pytest.importorskip("ray")

MATRIX = """
name = "fanout"
gpus = ["MI300X", "MI355X"]
[methods.none]
[methods.eagle3]
depths = [2, 4]
[families.Qwen]
model = "Qwen/Qwen3.5-397B-A17B"
tensor_parallel_size = 2
[families.Gemma]
model = "google/gemma-4-31B-it"
[workloads.code]
max_tokens = 128
[load]
concurrency = [1, 16]
[run]
requests_per_cell = 30
"""
COMPARE = {
    "cells": "SELECT * EXCLUDE (written_at) FROM cells ORDER BY cell_id",
    "requests": "SELECT * FROM requests ORDER BY cell_id, request_index",
    "positions": "SELECT * FROM positions ORDER BY cell_id, position",
    "cell_bootstrap": "SELECT * FROM cell_bootstrap ORDER BY cell_id, replicate",
}


def tables(db: Path) -> dict[str, pl.DataFrame]:
    with store.session(db, read_only=True) as con:
        return {name: sql.frame(con, q) for name, q in COMPARE.items()}


def placements(runs: Path, run_id: str) -> list[dict]:
    return [json.loads(line) for line in (runs / run_id / "placement.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def local_ray(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    os.environ["RAY_AUTH_MODE"] = "disabled"
    tmp = tmp_path_factory.mktemp("ray")
    ray.init(resources={"MI300X": 2, "MI355X": 2}, num_cpus=2, include_dashboard=False, _temp_dir=str(tmp),
             log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    try:
        yield
    finally:
        ray.shutdown()


def test_each_config_runs_on_its_gpu_resource_and_equals_a_sequential_run(local_ray: None, tmp_path: Path) -> None:
    from runner.cluster import run_matrix_ray

    path = tmp_path / "m.toml"
    path.write_text(MATRIX)
    matrix = load_matrix(path)
    runs = tmp_path / "runs"
    seen: list[tuple[str, int | None, int | None]] = []
    summary = run_matrix_ray(matrix, RunOptions(db=tmp_path / "ray.duckdb", run_id="R", runs_dir=runs), "auto",
                             progress=lambda label, done, total: seen.append((label, done, total)))
    assert (summary.cells_ok, summary.cells_failed) == (len(matrix.cells()), 0)
    seq = run_matrix(matrix, RunOptions(db=tmp_path / "seq.duckdb", run_id="R"))
    assert seq.cells_ok == summary.cells_ok
    a, b = tables(tmp_path / "ray.duckdb"), tables(tmp_path / "seq.duckdb")
    for name in COMPARE:
        assert a[name].height > 0
        assert_frame_equal(a[name], b[name], check_exact=True)
    # every task held exactly its GPU resource, tensor_parallel_size of them
    placed = placements(runs, "R")
    assert sorted(p["label"] for p in placed) == sorted(c.label() for c in matrix.server_configs())
    tp = {c.label(): c.family_spec.tensor_parallel_size for c in matrix.server_configs()}
    for p in placed:
        gpu_keys = {k: v for k, v in p["resources"].items() if k in ("MI300X", "MI355X")}
        assert gpu_keys == {p["gpu"]: tp[p["label"]]}, p
    assert seen and seen[-1][1] == seen[-1][2] == len(matrix.cells())
    with store.session(tmp_path / "ray.duckdb", read_only=True) as con:
        host, backend = sql.one(con, "SELECT host, backend FROM runs WHERE run_id = 'R'")
    assert host == "ray:auto" and backend == "sim"


def test_a_config_no_node_can_host_fails_at_once(local_ray: None, tmp_path: Path) -> None:
    from runner.cluster import run_matrix_ray

    path = tmp_path / "m.toml"
    path.write_text(MATRIX.replace('gpus = ["MI300X", "MI355X"]', 'gpus = ["MI300X", "B200"]'))
    matrix = load_matrix(path)
    t0 = time.monotonic()
    summary = run_matrix_ray(matrix, RunOptions(db=tmp_path / "s.duckdb", run_id="R", runs_dir=tmp_path / "runs"))
    assert time.monotonic() - t0 < 60
    b200 = [k for k in matrix.cells() if k.gpu == "B200"]
    assert summary.cells_failed == len(b200) and summary.cells_ok == len(matrix.cells()) - len(b200)
    assert all("no Ray node offers" in f["error"] and "B200" in f["error"] for f in summary.failures)


def test_a_vllm_run_checks_model_paths_on_the_nodes_not_on_the_driver(local_ray: None, tmp_path: Path) -> None:
    """The driver need not hold vLLM or the models; a node that lacks the model fails its config's cells
    with the reason (here the one local node stands in for a GPU node without /models)."""
    from runner.cluster import run_matrix_ray
    from tests.runner.test_vllm_backend import write_matrix

    path = write_matrix(tmp_path, ["ok"], methods="[methods.none]")
    path.write_text(path.read_text().replace('model = "ok"', 'model = "/models/not-on-this-node"')
                    .replace('gpus = ["cpu"]', 'gpus = ["MI300X"]'))
    summary = run_matrix_ray(load_matrix(path), RunOptions(backend="vllm", db=tmp_path / "s.duckdb", run_id="R",
                                                           runs_dir=tmp_path / "runs"))
    assert (summary.cells_ok, summary.cells_failed) == (0, 1)
    err = summary.failures[0]["error"]
    assert err == (f"on {socket.gethostname()}: {path}:6: families.ok.model: no such file or directory "
                   "'/models/not-on-this-node' on this host"), err


def test_tune_on_ray_equals_tune_in_process(local_ray: None, tmp_path: Path) -> None:
    """spectune tune --ray: each round's server configs as Ray tasks, each building its round's backend (the batch's
    seed, the cells as the store held them) — the same cells and picks as the rounds run in this process."""
    from runner.tune import TuneOptions, tune
    from tests.runner.test_tune import RACE

    path = tmp_path / "race.toml"
    path.write_text(RACE)
    matrix = load_matrix(path)
    opts = TuneOptions(world=2, screen_at=0.0, first_share=0.2, max_rounds=2, clear_at=0.9999, drop_at=0.0)
    here = tune(matrix, dataclasses.replace(opts, db=tmp_path / "here.duckdb"))
    there = tune(matrix, dataclasses.replace(opts, db=tmp_path / "ray.duckdb", ray="auto"))
    assert there.rounds == here.rounds == 2
    picks = [[(g["concurrency"], g["pick"]["method"], g["pick"]["depth"]) for g in r.as_dict()["groups"]]
             for r in (here, there)]
    assert picks[0] == picks[1]
    q = "SELECT cell_id, n_requests, output_throughput FROM cells ORDER BY cell_id, n_requests"
    with store.session(tmp_path / "here.duckdb", read_only=True) as a, \
            store.session(tmp_path / "ray.duckdb", read_only=True) as b:
        assert a.execute(q).fetchall() == b.execute(q).fetchall()


def test_cli_ray_local_starts_and_removes_its_own_cluster(tmp_path: Path) -> None:
    from tests.conftest import cli

    path = tmp_path / "m.toml"
    path.write_text(MATRIX)
    short = Path("/tmp") / f"st-{os.getpid()}"  # Ray's socket paths must stay under 108 bytes
    short.mkdir(exist_ok=True)
    try:
        res = cli("runner", "run", "--matrix", str(path), "--ray", "local", "--db", str(tmp_path / "s.duckdb"),
                  "--json", env={"SPECTUNE_RAY_RESOURCES": '{"MI300X": 2, "MI355X": 2}', "TMPDIR": str(short),
                                 "RAY_AUTH_MODE": "disabled"})
        assert res.returncode == 0, res.stderr
        assert json.loads(res.stdout)["cells_ok"] == len(load_matrix(path).cells())
        assert list(short.glob("st-ray-*")) == [], "the throwaway cluster's temp dir is removed"
    finally:
        import shutil

        shutil.rmtree(short, ignore_errors=True)
