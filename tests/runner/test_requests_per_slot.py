"""``run.requests_per_slot``: requests per cell scaled with the load's concurrency, validated, used by the simulator
and the plan; the default matrix covers depths 1–8 for every speculative method and runs enough requests at
c = 64 for the steady window."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest import store
from ingest.errors import InputError
from runner.execute import RunOptions, run_matrix
from runner.matrix import load_matrix
from runner.plan import plan_matrix
from tests.conftest import REPO

MATRIX = """
name = "slots"
gpus = ["MI300X"]
[methods.none]
[methods.eagle3]
depths = [3]
[families.Qwen]
model = "Qwen/Qwen3.5-397B-A17B"
tensor_parallel_size = 2
[workloads.code]
max_tokens = 64
[load]
concurrency = [1, 8, 32]
[run]
requests_per_cell = 40
{extra}
"""


def write(tmp: Path, extra: str) -> Path:
    path = tmp / "m.toml"
    path.write_text(MATRIX.format(extra=extra))
    return path


def test_requests_scale_with_concurrency_above_the_floor(tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path, "requests_per_slot = 3"))
    assert [m.requests_for(c) for c in (1, 8, 32)] == [40, 40, 96]
    plain = load_matrix(write(tmp_path, ""))
    assert plain.requests_per_slot == 0 and [plain.requests_for(c) for c in (1, 8, 32)] == [40, 40, 40]


@pytest.mark.parametrize("bad", ["-1", "1.5", "\"4\"", "true", "100001"])
def test_bad_values_are_one_line_errors(tmp_path: Path, bad: str) -> None:
    with pytest.raises(InputError) as info:
        load_matrix(write(tmp_path, f"requests_per_slot = {bad}"))
    assert "run.requests_per_slot: expected an integer in [0, 100000]" in info.value.one_line()


def test_a_typo_names_the_key(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_matrix(write(tmp_path, "request_per_slot = 3"))
    assert "did you mean 'requests_per_slot'?" in info.value.one_line()


def test_the_simulator_and_the_plan_use_the_scaled_count(tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path, "requests_per_slot = 3"))
    db = tmp_path / "s.duckdb"
    assert run_matrix(m, RunOptions(backend="sim", db=db)).cells_ok == 6
    with store.connect(db, read_only=True) as con:
        got = dict(con.execute("SELECT concurrency, max(n_requests) FROM cells GROUP BY 1").fetchall())
    assert got == {1: 40, 8: 40, 32: 96}
    plan = plan_matrix(m)
    assert plan.requests_per_cell == pytest.approx((40 + 40 + 96) / 3)
    flat = plan_matrix(load_matrix(write(tmp_path, "")))
    assert plan.estimated_gpu_hours > flat.estimated_gpu_hours


def test_default_matrix_covers_depths_1_to_8_and_enough_requests_at_c64() -> None:
    m = load_matrix(REPO / "runner" / "matrices" / "default.toml")
    spec = [x for x in m.methods if x.name != "none"]
    assert spec and all(x.depths == tuple(range(1, 9)) for x in spec)
    assert 64 in m.concurrency and m.requests_for(64) >= 5 * 64  # ramp + drain ≈ one request per slot each
    assert m.requests_for(1) == m.requests_per_cell
