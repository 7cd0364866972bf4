"""The simulator models the candidate modes (docs/simulator.md, "Modes"): a schedule drafts its depth at the
running batch, adaptive verification drafts its maximum and verifies what the budget admits; both run through
`runner run --backend sim` and land with their mode."""

from __future__ import annotations

import json
from pathlib import Path

from ingest import store
from ingest.records import CellKey
from runner.simulate import simulate_cell
from tests.conftest import cli

SCHED = ((1, 4, 6), (5, 1024, 2))


def _cell(c: int, depth: int = 6, workload: str = "reasoning", **kw) -> CellKey:
    return CellKey("dspark", depth, "Qwen", "Qwen/Qwen3.5-122B-A10B", workload, "MI300X", c, **kw)


def _throughput(key: CellKey, n: int = 240) -> float:
    r = simulate_cell(key, n)
    return float(r.requests["output_tokens"].sum()) / r.window_s


def test_a_schedule_drafts_its_depth_at_the_running_batch() -> None:
    low, high = simulate_cell(_cell(2, schedule=SCHED), 60), simulate_cell(_cell(32, schedule=SCHED), 60)
    assert low.counters.draft_tokens == 6 * low.counters.drafts
    assert high.counters.draft_tokens == 2 * high.counters.drafts
    assert len(high.counters.accepted_per_pos) == 2
    # the running batch is min(concurrency, requests): 3 requests at c=32 are a batch of 3 → depth 6
    few = simulate_cell(_cell(32, schedule=SCHED), 3)
    assert few.counters.draft_tokens == 6 * few.counters.drafts
    # and it performs as the fixed depth it runs at that load (a different seed: within sampling noise)
    assert abs(_throughput(_cell(32, schedule=SCHED)) / _throughput(_cell(32, depth=2)) - 1) < 0.08


def test_adaptive_verification_trims_drafts_under_load_and_beats_its_fixed_maximum_there() -> None:
    light, heavy = simulate_cell(_cell(1, depth=8, adaptive=True), 80), simulate_cell(_cell(64, depth=8,
                                                                                          adaptive=True), 240)
    light_depth = light.counters.draft_tokens / light.counters.drafts
    heavy_depth = heavy.counters.draft_tokens / heavy.counters.drafts
    assert 7.0 < light_depth <= 8.0 and heavy_depth < 6.5
    assert sum(heavy.counters.accepted_per_pos) == heavy.counters.accepted_tokens
    # decode speed (mean TPOT, not the window: a 64-wide closed loop's tail is noisy) on chat, where depth 8 costs
    def tpot(key: CellKey) -> float:
        return float(simulate_cell(key, 192).requests["tpot_ms"].mean())

    assert tpot(_cell(64, 8, "chat", adaptive=True)) < 0.95 * tpot(_cell(64, 8, "chat"))


def test_modes_run_on_the_sim_backend_and_land_with_their_mode(tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text("""name = "modes"
gpus = ["MI300X"]
[methods.none]
[methods.dspark]
depths = [3]
schedule = [[1, 4, 6], [5, 64, 2]]
adaptive = { max_depth = 8 }
[families.Qwen]
model = "Qwen/Qwen3.5-122B-A10B"
[workloads.reasoning]
max_tokens = 128
[load]
concurrency = [1, 16]
[run]
requests_per_cell = 30
""")
    db = tmp_path / "s.duckdb"
    res = cli("runner", "run", "--matrix", str(path), "--backend", "sim", "--db", str(db), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["cells_ok"] == 8
    with store.session(db, read_only=True) as con:
        got = con.execute("SELECT mode, depth, schedule, count(*) FROM cells WHERE status = 'ok' "
                          "GROUP BY ALL ORDER BY ALL").fetchall()
    assert got == [("adaptive", 8, None, 2), ("fixed", 0, None, 2), ("fixed", 3, None, 2),
                   ("schedule", 6, "[[1, 4, 6], [5, 64, 2]]", 2)]
