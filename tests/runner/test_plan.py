"""``runner plan``: estimates that match what the run will do — earlier vLLM runs scaled to this plan's
requests per cell, ``[adaptive]`` (which ignores requests_per_cell) in the headline GPU-hours, and a plain
output a person can read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ingest import sql, store
from runner.matrix import load_matrix
from runner.plan import SERVER_START_S, plan_matrix
from tests.conftest import REPO, SMALL_MATRIX, cli
from tests.runner.test_vllm_backend import run, write_matrix

DEFAULT = REPO / "runner" / "matrices" / "default.toml"


def test_earlier_runs_are_scaled_to_this_plans_requests_per_cell(tmp_path: Path) -> None:
    smoke = write_matrix(tmp_path, ["ok"], requests=6)  # a short real run on stand-in servers: 2 cells
    assert run(tmp_path, smoke).cells_ok == 2
    with store.session(tmp_path / "s.duckdb", read_only=True) as con:
        per_request = dict(sql.frame(con, "SELECT method, window_s / n_requests FROM cells").rows())
    big = tmp_path / "big.toml"
    big.write_text(smoke.read_text().replace("requests_per_cell = 6", "requests_per_cell = 600"))
    plan = plan_matrix(load_matrix(big), tmp_path / "s.duckdb")
    assert plan.estimate_sources == {"earlier_runs": 2, "cost_model": 0, "flat_guess": 0}
    by_method = {c["method"]: c["estimated_s"] for c in plan.server_configs}
    for method, s in by_method.items():  # 600 requests at the measured pace, not the 6-request window
        assert s == pytest.approx(SERVER_START_S + 600 * per_request[method], abs=0.2)


def test_adaptive_plans_count_the_adaptive_requests_in_the_headline(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text(DEFAULT.read_text() + "\n[adaptive]\ntarget_rel_width = 0.15\nmin_requests = 40\n")
    plan = json.loads(cli("runner", "plan", "--matrix", str(path), "--json", db=tmp_path / "n.duckdb").stdout)
    a = plan["adaptive"]
    # requests_per_cell = 200 is ignored under [adaptive]: the total is what adaptive stopping will spend
    assert plan["requests_basis"] == "adaptive_simulated"
    assert plan["requests_per_cell"] == a["mean_adaptive_requests_per_cell"]
    assert plan["estimated_gpu_hours"] == pytest.approx(a["adaptive_gpu_hours"], abs=1e-3)
    assert a["fixed_gpu_hours"] > plan["estimated_gpu_hours"]
    fixed = tmp_path / "fixed.toml"
    fixed.write_text(SMALL_MATRIX)
    plain = json.loads(cli("runner", "plan", "--matrix", str(fixed), "--json", db=tmp_path / "n.duckdb").stdout)
    assert (plain["requests_per_cell"], plain["requests_basis"]) == (60, "requests_per_cell")
    # the simulator cannot model this family: the plan assumes adaptive's max_requests and says so
    tiny = tmp_path / "tiny.toml"
    tiny.write_text('name = "x"\ngpus = ["cpu"]\n[methods.none]\n[families.Tiny]\nmodel = "m"\n'
                    '[workloads.code]\n[run]\nrequests_per_cell = 10\n[adaptive]\ntarget_rel_width = 0.2\n'
                    'max_requests = 300\n')
    t = json.loads(cli("runner", "plan", "--matrix", str(tiny), "--json", db=tmp_path / "n.duckdb").stdout)
    assert (t["requests_per_cell"], t["requests_basis"]) == (300, "adaptive_max")


def test_plain_plan_reads_as_text(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text(SMALL_MATRIX.replace("[workloads.chat]", '[workloads.chat]\nsource = "cht"'))
    res = cli("runner", "plan", "--matrix", str(path), db=tmp_path / "n.duckdb")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0] == "64 cells in 16 server configs, 60 requests per cell; ~" + lines[0].split("~")[1]
    assert lines[1] == "  cell times: 64 from the cost model; plus ~5 min per server start (a guess); in run order:"
    assert "{" not in res.stdout and lines[2].split()[:4] == ["1.", "Qwen/none@MI300X", "4", "cells"]
    assert lines[2].split()[-1] == "min" and lines[2].split()[-2].startswith("~")
    # a workload `run` would refuse is a warning here (a plan may be made away from the GPU host)
    # (a missing store at $SPECTUNE_DB is built from data/ on first use, its steps on stderr: not this test's point)
    warnings = "\n".join(x for x in res.stderr.splitlines() if not x.startswith("first start:"))
    assert warnings.strip() == ("warning: cht:0: workload chat: no such file, and not a built-in prompt set "
                                  "(chat, code, reasoning); did you mean the built-in 'chat'?")


def test_factorized_plan_prints_its_saving_against_the_full_grid(tmp_path: Path) -> None:
    default = REPO / "runner" / "matrices" / "default.toml"
    matrix = load_matrix(default)
    full = plan_matrix(matrix, tmp_path / "none.duckdb")
    done = cli("runner", "plan", "--matrix", str(default), "--strategy", "factorized", "--json",
               "--db", str(tmp_path / "none.duckdb"))
    assert done.returncode == 0, done.stderr
    fp = json.loads(done.stdout)
    assert fp["full_grid"]["cells"] == full.cells == len(matrix.cells())
    assert fp["full_grid"]["estimated_gpu_hours"] == round(full.estimated_gpu_hours, 3)
    assert fp["measure"]["cells"] + fp["predicted_cells"] == full.cells
    methods = [m for m in matrix.methods if m.name != "none"]
    groups = len(matrix.gpus) * len(matrix.families)
    assert fp["measure"]["server_configs"] == groups * (1 + sum(min(len(m.depths), 2) for m in methods))
    total = fp["measure"]["estimated_gpu_hours"] + fp["confirm_expected"]["estimated_gpu_hours"]
    assert fp["estimated_gpu_hours"] == pytest.approx(total, abs=1e-3)
    assert fp["saving_pct"] == pytest.approx((1 - total / full.estimated_gpu_hours) * 100, abs=0.1)
    assert 0 < fp["saving_pct"] < 100
    text = cli("runner", "plan", "--matrix", str(default), "--strategy", "factorized", "--db",
               str(tmp_path / "none.duckdb"))
    assert text.returncode == 0 and f"{fp['saving_pct']:g} % less GPU time" in text.stdout
    assert "for the full grid" in text.stdout
