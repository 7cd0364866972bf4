"""Adaptive stopping: the [adaptive] table, the stopping rule on real simulated cells, the saving that
`runner plan` reports (measured on the simulator at equal CI width), and the vLLM path stopping early."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ingest.cellstats import seed_for
from ingest.errors import InputError
from ingest.records import CellKey
from runner.adaptive import (
    MIN_TAIL_REQUESTS,
    Stopper,
    rel_widths,
    simulated_saving,
    window_of,
)
from runner.matrix import AdaptiveSpec, load_matrix, parse_adaptive
from runner.simulate import simulate_cell
from tests.conftest import REPO, SMALL_MATRIX, cli

DEFAULT = REPO / "runner" / "matrices" / "default.toml"


def test_parse_adaptive_validates_every_key(tmp_path: Path) -> None:
    assert parse_adaptive(None, tmp_path) is None
    spec = parse_adaptive({"target_rel_width": 0.1, "min_requests": 40, "max_requests": 100}, tmp_path)
    assert spec == AdaptiveSpec(0.1, 40, 100, 20)
    assert spec.grid() == [40, 60, 80, 100]
    assert AdaptiveSpec(0.1, 40, 110, 30).grid() == [40, 70, 100, 110]
    for bad, msg in [({"target_rel_width": 0}, "target_rel_width"), ({"target_rel_width": "x"}, "target_rel_width"),
                     ({"target_rel_width": 0.1, "min_requests": 1}, "min_requests"),
                     ({"target_rel_width": 0.1, "min_requests": 50, "max_requests": 40}, "must not exceed"),
                     ({"target_rel_width": 0.1, "batch": 0}, "batch"),
                     ({"target_rel_width": 0.1, "typo": 1}, "unknown key"), ([1], "expected a table")]:
        with pytest.raises(InputError, match=msg):
            parse_adaptive(bad, tmp_path)


def test_a_matrix_carries_its_adaptive_spec(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text(DEFAULT.read_text() + "\n[adaptive]\ntarget_rel_width = 0.15\nmin_requests = 40\n")
    assert load_matrix(path).adaptive == AdaptiveSpec(0.15, 40, 400, 20)
    path.write_text(DEFAULT.read_text() + "\n[adaptive]\nmin_requests = 40\n")
    with pytest.raises(InputError, match=r"adaptive\.target_rel_width"):
        load_matrix(path)


def test_stopper_needs_a_tail_and_two_checks_in_a_row() -> None:
    key = CellKey("eagle3", 3, "Qwen", "Qwen/Qwen3.5-397B-A17B", "chat", "MI355X", 16)
    frame = simulate_cell(key, 400, max_output_tokens=512).requests.sort("request_index")
    spec = AdaptiveSpec(10.0, 20, 400, 20)  # a target every interval meets: only the rule itself can stop
    stopper = Stopper(spec, key.depth, seed_for(key.cell_id))
    stops = [stopper.check(frame.head(n), window_of(frame.head(n))) for n in spec.grid()]
    first = spec.grid()[stops.index(True)]
    assert first == MIN_TAIL_REQUESTS + spec.batch, "first check past the tail floor counts, the next one stops"
    tight = Stopper(AdaptiveSpec(1e-6, 20, 400, 20), key.depth, seed_for(key.cell_id))
    assert [tight.check(frame.head(n), window_of(frame.head(n))) for n in (100, 200, 380)] == [False] * 3
    assert tight.check(frame, window_of(frame)) is True and tight.reached is False  # max reached, target not


def test_interval_widths_shrink_with_more_requests() -> None:
    key = CellKey("mtp", 3, "Kimi", "moonshotai/Kimi-K2.5", "code", "MI300X", 64)
    frame = simulate_cell(key, 800, max_output_tokens=512).requests.sort("request_index")
    small = rel_widths(frame.head(100), window_of(frame.head(100)), 3, 1)
    large = rel_widths(frame, window_of(frame), 3, 1)
    for metric in small:
        assert 0 < large[metric] < small[metric]


def test_simulated_saving_meets_the_target_at_equal_ci_width() -> None:
    saving = simulated_saving(load_matrix(DEFAULT), AdaptiveSpec(0.15, 40, 400, 20))
    assert saving["cells_simulated"] == 36 and saving["backend"] == "sim"
    assert saving["requests_saved_pct"] >= 30.0, saving
    assert saving["gpu_time_saved_pct"] > 0
    assert saving["mean_adaptive_requests_per_cell"] < saving["fixed_requests_per_cell"] <= 400
    # every cell that stopped early is within the target: the width promised is the width delivered
    assert all(w <= 0.15 for w in saving["worst_adaptive_rel_width"].values())


def test_plan_reports_the_saving(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text(DEFAULT.read_text() + "\n[adaptive]\ntarget_rel_width = 0.15\nmin_requests = 40\n")
    res = cli("runner", "plan", "--matrix", str(path), "--json", db=tmp_path / "none.duckdb")
    assert res.returncode == 0, res.stderr
    plan = json.loads(res.stdout)
    a = plan["adaptive"]
    assert a["requests_saved_pct"] >= 30
    assert a["adaptive_gpu_hours"] < a["fixed_gpu_hours"] and a["gpu_hours_saved"] > 0
    small = tmp_path / "small.toml"
    small.write_text(SMALL_MATRIX + "\n[adaptive]\ntarget_rel_width = 0.2\nmin_requests = 20\nmax_requests = 120\n")
    text = cli("runner", "plan", "--matrix", str(small), db=tmp_path / "none.duckdb").stdout
    assert "adaptive stopping (simulated, 36 cells, target width 0.2)" in text and "GPU-hours saved" in text
    plain = json.loads(cli("runner", "plan", "--matrix", str(DEFAULT), "--json", db=tmp_path / "n.duckdb").stdout)
    assert "adaptive" not in plain


def test_plan_says_when_the_simulator_cannot_estimate(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text('name = "x"\ngpus = ["cpu"]\n[methods.none]\n[families.Tiny]\nmodel = "m"\n'
                    '[workloads.code]\n[adaptive]\ntarget_rel_width = 0.2\n')
    plan = json.loads(cli("runner", "plan", "--matrix", str(path), "--json", db=tmp_path / "n.duckdb").stdout)
    assert plan["adaptive"]["cells_simulated"] == 0 and "no parameters" in plan["adaptive"]["note"]


def test_vllm_cells_run_in_batches_until_the_rule_stops_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The batching on a live (stand-in) server; the widths are pinned so machine noise in a p99 of ~100
    local requests cannot move the stop (the rule itself is tested on simulated cells above)."""
    from ingest import sql, store
    from runner import adaptive
    from runner.execute import RunOptions, run_matrix
    from tests.runner.test_vllm_backend import write_matrix

    seen: list[int] = []

    def pinned(requests: pl.DataFrame, window_s: float | None, depth: int, seed: int) -> dict[str, float]:
        seen.append(requests.height)
        assert window_s is not None and window_s > 0
        return {"output_throughput": 0.1, "p99_e2e_ms": 0.1}

    monkeypatch.setattr(adaptive, "rel_widths", pinned)

    path = write_matrix(tmp_path, ["ok"], methods="[methods.none]", concurrency="[8]")
    path.write_text(path.read_text() + "\n[adaptive]\ntarget_rel_width = 2.0\nmin_requests = 60\n"
                                       "max_requests = 300\nbatch = 40\n")
    summary = run_matrix(load_matrix(path), RunOptions(backend="vllm", db=tmp_path / "s.duckdb",
                                                       runs_dir=tmp_path / "runs", run_id="R"))
    assert summary.cells_ok == 1
    with store.session(tmp_path / "s.duckdb", read_only=True) as con:
        n = sql.one(con, "SELECT n_requests FROM cells")[0]
        reqs = sql.frame(con, "SELECT request_index, start_s FROM requests ORDER BY request_index")
    assert seen == [60, 100, 140]
    assert n == 140, "60 (below the tail floor) → 100 (within target once) → 140 (twice): stop"
    assert reqs["request_index"].to_list() == list(range(140))
    starts = reqs["start_s"]
    assert starts.min() >= 0 and starts[100] >= starts[:60].max(), "later batches start after earlier ones"
