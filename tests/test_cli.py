"""The CLI contract: JSON keys, exit codes, one-line errors for bad arguments and bad files."""

from __future__ import annotations

import json

import pytest

from tests.conftest import REPO, cli


def _one_line_error(proc) -> None:
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    err = proc.stderr.strip()
    assert err.startswith("error:") and len(err.splitlines()) == 1, err
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("args", [
    ["runner"],
    ["runner", "run"],
    ["runner", "run", "--matrix", "does/not/exist.toml"],
    ["runner", "plan", "--matrix", "README.md"],
    ["runner", "run", "--matrix", "runner/matrices/default.toml", "--backend", "gpu-magic"],
    ["analysis", "winners", "--metric", "speed"],
    ["analysis", "winners", "--concurrency", "lots"],
    ["analysis", "curve", "--family", "Qwen"],
])
def test_bad_arguments_exit_2_with_one_line(args, tmp_path):
    _one_line_error(cli(args[0], *args[1:], db=tmp_path / "x.duckdb"))


def test_bad_matrix_files_exit_2_and_name_the_problem(tmp_path):
    cases = {
        "broken.toml": ("[methods\nnone = 1", "expected valid TOML"),
        "nomethods.toml": ('gpus = ["MI300X"]\n[families.Q]\nmodel = "q"\n[workloads.code]\n', "methods"),
        "baddepth.toml": ('gpus = ["MI300X"]\n[methods.mtp]\ndepths = [0, "x"]\n[families.Q]\nmodel = "q"\n'
                          '[workloads.code]\n', "methods.mtp.depths"),
        "badmethod.toml": ('gpus = ["MI300X"]\n[methods.warp]\n[families.Q]\nmodel = "q"\n[workloads.code]\n',
                           "unknown method"),
        "binary.toml": (b"\x00\xff\xfe junk", "UTF-8"),
    }
    for name, (content, expected) in cases.items():
        path = tmp_path / name
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
        proc = cli("runner", "plan", "--matrix", str(path))
        _one_line_error(proc)
        assert expected in proc.stderr and name in proc.stderr


def test_plan_json_keys(repo):
    proc = cli("runner", "plan", "--matrix", str(repo / "runner/matrices/default.toml"), "--json")
    assert proc.returncode == 0, proc.stderr
    plan = json.loads(proc.stdout)
    # 2 GPUs × 4 families × (none + 5 methods × depths 1–8) = 328 server configs, × 3 workloads × 3 loads
    assert plan["cells"] == 2952 and len(plan["server_configs"]) == 328
    assert plan["estimated_gpu_hours"] > 0
    # one server start per server config, never per cell
    assert len({c["label"] for c in plan["server_configs"]}) == len(plan["server_configs"])


def test_winners_json_contract_on_default_data(default_db):
    every = json.loads(cli("analysis", "winners", "--json", db=default_db).stdout)
    assert every["backends"] == ["import", "sim"]  # the simulated matrix and the shipped published cells
    proc = cli("analysis", "winners", "--json", "--backend", "sim", db=default_db)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["metric"] == "output_throughput" and doc["backends"] == ["sim"]
    cells = doc["cells"]
    assert len(cells) == 4 * 3 * 2 * 3 == len(every["cells"]) - 28
    assert {(c["gpu"], c["model"], c["workload"], c["concurrency"]) for c in cells}.__len__() == 72
    for c in cells:
        assert set(c) >= {"gpu", "family", "model", "workload", "dataset", "concurrency", "load", "winner",
                          "runner_up", "margin_pct", "clear", "tied"}
        assert c["load"] == f"c={c['concurrency']}" and c["dataset"] is None
        assert set(c["winner"]) >= {"method", "depth", "value"}
    assert len({c["winner"]["method"] for c in cells}) >= 3
    assert len({c["winner"]["depth"] for c in cells}) >= 2
    ties = [c for c in cells if not c["clear"]]
    assert ties and all(len(c["tied"]) >= 2 for c in ties)


def test_winners_filters_and_curve(default_db):
    doc = json.loads(cli("analysis", "winners", "--json", "--gpu", "MI355X", "--concurrency", "64",
                         "--metric", "p99_e2e_ms", db=default_db).stdout)
    assert {c["gpu"] for c in doc["cells"]} == {"MI355X"} and {c["concurrency"] for c in doc["cells"]} == {64}
    curve = json.loads(cli("analysis", "curve", "--family", "Qwen", "--method", "mtp", "--workload", "code",
                           "--gpu", "MI355X", "--json", db=default_db).stdout)
    import polars as pl  # the depths the embedded data holds (the default matrix's grid once it is regenerated)

    cells = pl.read_parquet(REPO / "data" / "default" / "cells.parquet")
    want = sorted(set(cells.filter(pl.col("method") == "mtp")["depth"].to_list()))
    assert sorted({p["depth"] for p in curve["points"]}) == want and len(want) >= 4
    assert curve["simulated"] is True
    assert set(curve["points"][0]) >= {"depth", "acceptance_length", "acceptance_rate", "output_throughput"}
    proc = cli("analysis", "curve", "--family", "Nope", "--method", "mtp", "--workload", "code", db=default_db)
    _one_line_error(proc)
