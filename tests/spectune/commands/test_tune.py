"""``spectune tune`` on the command line: the JSON contract, the human output with deploy commands, and bad input
(one line, exit 2, nothing written)."""

from __future__ import annotations

import json

import pytest

from tests.conftest import cli
from tests.runner.test_tune import RACE, SCHED


@pytest.fixture
def race(tmp_path):
    path = tmp_path / "race.toml"
    path.write_text(RACE.replace("concurrency = [8, 16]", "concurrency = [8]"))
    return path


def test_json_keys(tmp_path, race):
    out = cli("spectune", "tune", "--matrix", str(race), "--world", "1", "--db", str(tmp_path / "s.duckdb"), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert {"gpu_hours", "gpu_hours_full_grid", "rounds", "groups", "budget_stop", "tune_id"} <= set(doc)
    (g,) = doc["groups"]
    assert {"gpu", "family", "model", "workload", "concurrency", "winner", "p_best", "verdict",
            "candidates_left", "pick"} <= set(g)
    assert set(g["winner"]) >= {"method", "depth", "mode"} and g["winner"]["mode"] == "fixed"
    assert (g["gpu"], g["family"], g["workload"], g["concurrency"]) == ("MI300X", "Qwen", "code", 8)


def test_human_output_names_the_pick_and_its_deploy_command(tmp_path, race):
    out = cli("runner", "tune", "--matrix", str(race), "--world", "1", "--db", str(tmp_path / "s.duckdb"))
    assert out.returncode == 0, out.stderr
    assert "pick " in out.stdout and "p_best" in out.stdout and "world 1 (simulated)" in out.stdout
    assert "deploy: vllm serve Qwen/Qwen3.5-122B-A10B --tensor-parallel-size 2" in out.stdout


@pytest.mark.parametrize("off", [False, True])
def test_a_raced_schedule_is_printed_predicted_against_measured(tmp_path, off):
    path = tmp_path / "sched.toml"
    path.write_text(SCHED)
    args = ["--matrix", str(path), "--world", "1", "--no-screen", "--db", str(tmp_path / "s.duckdb")]
    out = cli("spectune", "tune", *args, *(["--no-schedule"] if off else []))
    assert out.returncode == 0, out.stderr
    doc = json.loads(cli("spectune", "tune", *args, "--resume", "--json", *(["--no-schedule"] if off else [])).stdout)
    if off:
        assert doc["schedules"] == [] and "schedule dspark" not in out.stdout
        return
    (s,) = doc["schedules"]
    assert f"schedule dspark [{', '.join(f'{a}–{b}: {k}' for a, b, k in s['schedule'])}]" in out.stdout
    assert f"predicted +{s['predicted']['gain_pct']:.1f} % over dspark·{s['predicted']['static_depth']}" in out.stdout
    assert f"measured {s['measured']['gain_pct']:+.1f} % — {s['verdict']}" in out.stdout
    assert "  concurrency 1: schedule " in out.stdout and "  concurrency 128: schedule " in out.stdout


@pytest.mark.parametrize("args, words", [
    (["--matrix", "MISSING.toml"], "MISSING.toml"),
    (["--world", "-1"], "--world"),
    (["--world", "x"], "--world"),
    (["--budget-gpu-hours", "0"], "--budget-gpu-hours"),
    (["--budget-gpu-hours", "nan"], "--budget-gpu-hours"),
    (["--backend", "vllm", "--world", "2"], "--world needs --backend sim"),
])
def test_bad_input_is_one_line_exit_2_nothing_written(tmp_path, race, args, words):
    db = tmp_path / "s.duckdb"
    full = args if args[0] == "--matrix" else ["--matrix", str(race), *args]
    out = cli("spectune", "tune", *full, "--db", str(db))
    assert out.returncode == 2
    assert out.stderr.startswith("error:") and len(out.stderr.strip().splitlines()) == 1 and words in out.stderr
    assert not db.exists()


def test_a_bad_trace_is_one_line_exit_2_nothing_written(tmp_path, race):
    bad = tmp_path / "bad.csv"
    bad.write_text("prompt_tokens,completion_tokens\n12,-3\n")
    db = tmp_path / "s.duckdb"
    out = cli("spectune", "tune", "--matrix", str(race), "--trace", str(bad), "--db", str(db))
    assert out.returncode == 2 and out.stderr.startswith("error:") and len(out.stderr.strip().splitlines()) == 1
    assert not db.exists()
