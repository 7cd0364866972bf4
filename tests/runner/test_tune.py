"""spectune tune (runner/tune.py) and sim worlds: a world is a fixed truth measured with sampling noise only; tune
races candidates in rounds, picks the world's best (or an equivalent), honours its budget, resumes after a kill
without a duplicate cell, and keeps every round's cells in the store."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from analysis.model_draws import world_cell
from analysis.winners import winners
from ingest import sql, store
from ingest.records import CellKey
from runner.execute import RunOptions, run_matrix
from runner.matrix import load_matrix
from runner.simulate import simulate_cell
from runner.tune import TuneOptions, tune
from tests.conftest import REPO

# One group of five candidates whose best is far ahead of the rest in every world used here, and a second load.
RACE = """
name = "race"
gpus = ["MI300X"]
[methods.none]
[methods.mtp]
depths = [1, 3]
[methods.dflash]
depths = [2, 6]
[families.Qwen]
model = "Qwen/Qwen3.5-122B-A10B"
tensor_parallel_size = 2
[workloads.code]
max_tokens = 128
[load]
concurrency = [8, 16]
[run]
requests_per_cell = 100
"""

KEY = CellKey("mtp", 3, "Qwen", "Qwen/Qwen3.5-122B-A10B", "code", "MI300X", 8)


@pytest.fixture
def race(tmp_path: Path) -> Path:
    path = tmp_path / "race.toml"
    path.write_text(RACE)
    return path


def _cells(db: Path) -> list[tuple]:
    with store.session(db, read_only=True) as con:
        return con.execute("SELECT run_id, cell_id, n_requests FROM cells ORDER BY run_id, cell_id").fetchall()


def test_a_world_is_one_fixed_draw_the_same_in_any_order():
    other = CellKey("dflash", 6, "Qwen", "Qwen/Qwen3.5-122B-A10B", "chat", "MI300X", 16)
    a1 = world_cell(7, "mtp", "Qwen", "code", 3).positions
    world_cell(7, "dflash", "Qwen", "chat", 6)
    assert np.array_equal(world_cell(7, "mtp", "Qwen", "code", 3).positions, a1)
    assert not np.array_equal(world_cell(8, "mtp", "Qwen", "code", 3).positions, a1)  # another world, another truth
    first = simulate_cell(KEY, 30, max_output_tokens=64, world=7)
    simulate_cell(other, 10, max_output_tokens=64, world=7)
    again = simulate_cell(KEY, 30, max_output_tokens=64, world=7)
    assert first.requests.equals(again.requests)
    plain = simulate_cell(KEY, 30, max_output_tokens=64)
    assert not first.requests.equals(plain.requests)


def test_world_cells_carry_sampling_noise_only(tmp_path, race):
    db = tmp_path / "w.duckdb"
    matrix = dataclasses.replace(load_matrix(race), requests_per_cell=30)
    summary = run_matrix(matrix, RunOptions(db=db, world=4))
    assert summary.cells_ok == 10 and "-w4-" in summary.run_id
    with store.session(db, read_only=True) as con:
        assert sql.one(con, "SELECT count(*) FROM model_draws")[0] == 0
        host, notes = sql.one(con, "SELECT host, notes FROM runs")
        assert "world 4" in host and "simulated (world 4)" in notes
        doc = winners(con)
    assert {c["uncertainty"] for c in doc["cells"]} == {"bootstrap"}


@pytest.mark.parametrize("screen_at", [0.0, 0.1])  # every candidate from round 1; probes first (the default)
def test_tune_picks_the_worlds_best(tmp_path, race, screen_at):
    matrix = load_matrix(race)
    truth_db = tmp_path / "truth.duckdb"
    run_matrix(dataclasses.replace(matrix, requests_per_cell=600), RunOptions(db=truth_db, world=2))
    with store.session(truth_db, read_only=True) as con:
        truth = {c["concurrency"]: c for c in winners(con, model_error=False)["cells"]}
    res = tune(matrix, TuneOptions(world=2, db=tmp_path / "t.duckdb", screen_at=screen_at)).as_dict()
    first = res["round_log"][0]["cells"]
    # probes first: the baseline and one depth per method in round 1, not all five candidates
    assert first == (10 if screen_at == 0 else 2 * 3)
    assert len(res["groups"]) == 2 and res["rounds"] >= 1
    for g in res["groups"]:
        t = truth[g["concurrency"]]
        values = {(c["method"], c["depth"]): c["value"] for c in t["candidates"]}
        best = t["winner"]["value"]
        assert (best - values[(g["pick"]["method"], g["pick"]["depth"])]) / best <= 0.02, (g, t["winner"])
        assert g["verdict"] in ("clear", "equivalent") and g["pick"]["deploy"]["command"].startswith("vllm serve")
    assert 0 < res["gpu_hours"] <= res["gpu_hours_full_grid"] * 2


def test_rounds_grow_cells_and_keep_every_round(tmp_path, race):
    db = tmp_path / "t.duckdb"
    opts = TuneOptions(world=3, db=db, screen_at=0.0, first_share=0.2, growth=2.0, max_share=2.0, min_batch=20,
                       clear_at=0.9999, max_rounds=3, drop_at=0.0)
    res = tune(load_matrix(race), opts)
    assert res.rounds == 3
    rows = _cells(db)
    by_cell: dict[str, list[int]] = {}
    for run_id, cell_id, n in rows:
        assert run_id.startswith(res.tune_id + "-r")
        by_cell.setdefault(cell_id, []).append(n)
    # a cell raced in every round holds 20, then 20 + 40, then 20 + 40 + 80 requests: each round's cell complete
    assert [20, 60, 140] in list(by_cell.values())
    assert len(rows) == len(set((r, c) for r, c, _ in rows))


def test_budget_stops_before_a_round_that_would_pass_it(tmp_path, race):
    matrix = load_matrix(race)
    opts = TuneOptions(world=3, db=tmp_path / "a.duckdb", screen_at=0.0, clear_at=0.9999, drop_at=0.0)
    unlimited = tune(matrix, dataclasses.replace(opts, max_rounds=2))
    first = unlimited.round_log[0]["gpu_hours"]
    res = tune(matrix, dataclasses.replace(opts, db=tmp_path / "b.duckdb", budget_gpu_hours=first * 1.01))
    assert res.rounds == 1 and res.budget_stop and "budget" in res.budget_stop
    assert res.gpu_hours <= first * 1.01
    assert {g["stopped"] for g in res.as_dict()["groups"]} <= {"budget", "clear", "equivalent", "one left"}


def _tune_cli(matrix: Path, db: Path, *extra: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "runner", "tune", "--matrix", str(matrix), "--world", "5",
                             "--no-screen", "--db", str(db), "--json", *extra], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)


def test_sigkill_then_resume_gives_no_duplicate_and_the_same_answer(tmp_path, race):
    whole = _tune_cli(race, tmp_path / "whole.duckdb")
    expected = json.loads(whole.communicate(timeout=300)[0])
    db = tmp_path / "killed.duckdb"
    proc = _tune_cli(race, db)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:  # kill once the first round's cells are landing
        if db.exists() and db.stat().st_size > 2_000_000:
            break
        time.sleep(0.05)
    time.sleep(0.3)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert proc.returncode == -signal.SIGKILL
    again = _tune_cli(race, db, "--resume")
    got = json.loads(again.communicate(timeout=300)[0])
    assert got["tune_id"] == got["round_log"][0]["run_id"].rsplit("-r", 1)[0]
    picks = [(g["concurrency"], g["pick"]["method"], g["pick"]["depth"], g["verdict"]) for g in got["groups"]]
    assert picks == [(g["concurrency"], g["pick"]["method"], g["pick"]["depth"], g["verdict"])
                     for g in expected["groups"]]
    rows = _cells(db)
    assert len(rows) == len({(r, c) for r, c, _ in rows}) == len(_cells(tmp_path / "whole.duckdb"))
    with store.session(db, read_only=True) as con:
        dup = sql.one(con, "SELECT count(*) FROM (SELECT run_id, cell_id, request_index FROM requests "
                           "GROUP BY ALL HAVING count(*) > 1)")[0]
    assert dup == 0


def _trace(tmp_path: Path) -> Path:
    """Two tenants: short chat answers arriving often, long code generations arriving rarely."""
    rows = ["request_id,arrival_ms,tenant,workload,prompt_tokens,completion_tokens"]
    for i in range(60):
        rows.append(f"a{i},{i * 100},acme,chat,{200 + i},{40 + i % 7}")
        rows.append(f"b{i},{i * 4000},globex,code,{900 + i},{300 + i % 11}")
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_trace_shards_bring_their_lengths_and_load(tmp_path, race):
    from runner.trace_shards import read_shards, shard_matrix, tune_shards

    matrix = load_matrix(race)
    ts = read_shards(_trace(tmp_path), matrix)
    assert ts.shard_by == "column"
    shards = {s.name: s for s in ts.shards}
    assert set(shards) == {"acme", "globex"}
    acme, globex = shards["acme"], shards["globex"]
    assert (acme.model_workload, globex.model_workload) == ("chat", "code")
    assert acme.outputs.max() < 50 <= 300 <= globex.outputs.min()
    assert acme.load_from.startswith("arrival rate") and acme.loads[0] >= globex.loads[0]
    m, cells = shard_matrix(matrix, ts)
    assert {c.workload for c in cells} == {"shard:acme", "shard:globex"} and len(cells) == 5 * 2
    res = tune_shards(m, ts, TuneOptions(world=1, db=tmp_path / "t.duckdb", screen_at=0.0))
    groups = res.as_dict()["groups"]
    assert sorted(g["shard"] for g in groups) == ["acme", "globex"]
    assert all(g["pick"]["deploy"]["command"].startswith("vllm serve") for g in groups)
    with store.session(tmp_path / "t.duckdb", read_only=True) as con:  # the cells replayed the shard's lengths
        got = sql.one(con, "SELECT max(r.output_tokens) FROM requests r JOIN cells c USING (run_id, cell_id) "
                           "WHERE c.workload = 'shard:acme'")[0]
    assert got <= int(acme.outputs.max())


MODES = """
name = "modes"
gpus = ["MI300X"]
[methods.none]
[methods.dspark]
depths = [2, 6]
schedule = [[1, 8, 6], [9, 64, 2]]
adaptive = { max_depth = 8 }
[families.Qwen]
model = "Qwen/Qwen3.5-122B-A10B"
tensor_parallel_size = 2
[workloads.code]
max_tokens = 128
[load]
concurrency = [4, 32]
[run]
requests_per_cell = 60
"""


def test_schedule_and_adaptive_arms_race_and_a_mode_pick_deploys_with_its_mode(tmp_path):
    """Mode candidates race from round 1 beside the fixed depths; the pick carries its mode and schedule, and its
    deploy command says them (a schedule as num_speculative_tokens_per_batch_size, adaptive as vLLM's flag)."""
    path = tmp_path / "modes.toml"
    path.write_text(MODES)
    res = tune(load_matrix(path), TuneOptions(world=5, db=tmp_path / "t.duckdb", screen_at=0.0)).as_dict()
    assert res["round_log"][0]["cells"] == 2 * 5  # none, two depths, the schedule and the adaptive arm, two loads
    with store.session(tmp_path / "t.duckdb", read_only=True) as con:
        modes = {r[0] for r in con.execute("SELECT DISTINCT mode FROM cells").fetchall()}
    assert modes == {"fixed", "schedule", "adaptive"}
    assert any(g["pick"]["mode"] != "fixed" for g in res["groups"])  # world 5: the schedule arm wins
    for g in res["groups"]:
        pick = g["pick"]
        config, command = pick["deploy"]["speculative_config"], pick["deploy"]["command"]
        if pick["mode"] == "schedule":
            assert pick["schedule"] == [[1, 8, 6], [9, 64, 2]] == config["num_speculative_tokens_per_batch_size"]
            assert '"num_speculative_tokens_per_batch_size":[[1,8,6],[9,64,2]]' in command
        elif pick["mode"] == "adaptive":
            assert pick["schedule"] is None and config["enable_adaptive_verification"] is True
        else:
            assert pick["mode"] == "fixed" and "num_speculative_tokens_per_batch_size" not in command
            assert "enable_adaptive_verification" not in command
        assert f'"num_speculative_tokens":{config["num_speculative_tokens"]}' in command


# One method, three depths, loads 1 and 128: in world 1 depth 6 is best alone and depth 1 under load, so the fixed
# cells predict a schedule (analysis.schedule) that beats the best static depth.
SCHED = """
name = "sched"
gpus = ["MI300X"]
[methods.none]
[methods.dspark]
depths = [1, 3, 6]
[families.Qwen]
model = "Qwen/Qwen3.5-122B-A10B"
tensor_parallel_size = 2
[workloads.code]
max_tokens = 128
[load]
concurrency = [1, 128]
[run]
requests_per_cell = 256
"""


def _sched_matrix(tmp_path, text=SCHED):
    path = tmp_path / "sched.toml"
    path.write_text(text)
    return load_matrix(path)


def test_a_predicted_schedule_is_raced_as_its_own_server_config_and_reported(tmp_path):
    db = tmp_path / "t.duckdb"
    res = tune(_sched_matrix(tmp_path), TuneOptions(world=1, db=db, screen_at=0.0)).as_dict()
    (s,) = res["schedules"]
    assert s["method"] == "dspark" and s["raced"] and s["note"] is None
    assert len({k for _a, _b, k in s["schedule"]}) > 1 and s["schedule"][0][0] == 1
    pred = s["predicted"]
    assert pred["gain_pct"] >= 2 and pred["ci"][0] > 0 and pred["static_depth"] in (1, 3, 6)
    with store.session(db, read_only=True) as con:
        arms = con.execute("SELECT concurrency, schedule, max(n_requests), arg_max(steady_output_throughput, "
                           "n_requests) FROM cells WHERE mode = 'schedule' GROUP BY ALL ORDER BY 1").fetchall()
        first_arm_run = sql.one(con, "SELECT min(run_id) FROM cells WHERE mode = 'schedule'")[0]
    # the arm ran as its own server config in a round after the fixed depths, once per load
    assert [a[0] for a in arms] == [1, 128] and all(json.loads(a[1]) == s["schedule"] for a in arms)
    assert int(first_arm_run.rsplit("-r", 1)[1]) > s["predicted_after_round"] >= 1
    loads = s["measured"]["loads"]
    assert [x["concurrency"] for x in loads] == [1, 128]
    for x, a in zip(loads, arms, strict=True):  # measured: the arm's newest cell, beside the fixed depths'
        assert x["requests"] == a[2] > 0 and x["value"] == pytest.approx(a[3], rel=1e-6)
        assert x["static"]["depth"] == pred["static_depth"] and x["static"]["value"] > 0
        assert x["best_fixed"]["depth"] in (1, 3, 6) and x["best_fixed"]["value"] > 0
    assert s["measured"]["gain_pct"] is not None
    assert s["verdict"] in ("confirmed", "no clear gain", "worse")
    for g in res["groups"]:  # the arm raced as a candidate of every load's group
        assert g["candidates"] == 5
        assert any(x["picked"] for x in loads if x["concurrency"] == g["concurrency"]) == (
            g["pick"]["mode"] == "schedule")


def test_no_schedule_is_raced_when_none_is_recommended_or_with_no_schedule(tmp_path):
    # world 1 at loads 1 and 64 (640 requests): the best depth differs by load (6 alone, 3 under load), but the
    # schedule's gain over the best static depth is below the margin: not recommended, nothing added
    text = SCHED.replace("[1, 128]", "[1, 64]").replace("256", "640")
    res = tune(_sched_matrix(tmp_path, text), TuneOptions(world=1, db=tmp_path / "a.duckdb", screen_at=0.0))
    assert len({g.result["pick"]["depth"] for g in res.groups}) == 2
    off = tune(_sched_matrix(tmp_path), TuneOptions(world=1, db=tmp_path / "b.duckdb", screen_at=0.0,
                                                    schedules=False))
    for r, db in ((res, "a"), (off, "b")):
        assert r.as_dict()["schedules"] == [] and all(g.result["candidates"] == 4 for g in r.groups)
        with store.session(tmp_path / f"{db}.duckdb", read_only=True) as con:
            assert sql.one(con, "SELECT count(*) FROM cells WHERE mode = 'schedule'")[0] == 0


def test_a_predicted_schedule_is_reported_not_raced_when_the_matrix_races_another_for_the_method(tmp_path):
    text = SCHED.replace("depths = [1, 3, 6]", "depths = [1, 3, 6]\nschedule = [[1, 4, 3], [5, 128, 6]]")
    db = tmp_path / "t.duckdb"
    res = tune(_sched_matrix(tmp_path, text), TuneOptions(world=1, db=db, screen_at=0.0)).as_dict()
    (s,) = res["schedules"]
    assert not s["raced"] and "another schedule for dspark" in s["note"] and s["verdict"] == "not measured"
    assert s["predicted"]["gain_pct"] >= 2 and s["schedule"] != [[1, 4, 3], [5, 128, 6]]
    assert all(x["value"] is None and x["requests"] == 0 for x in s["measured"]["loads"])
    with store.session(db, read_only=True) as con:  # only the matrix's own schedule arm was measured
        got = {r[0] for r in con.execute("SELECT DISTINCT schedule FROM cells WHERE mode = 'schedule'").fetchall()}
    assert {json.dumps(json.loads(g)) for g in got} == {json.dumps([[1, 4, 3], [5, 128, 6]])}
