"""Winners compare candidate modes (DESIGN, winner rule): fixed depths, a depth schedule and adaptive
verification of one method are separate candidates of a group, each labelled in the one notation, the pick rule
prefers a fixed depth among equivalents, and a schedule or adaptive pick deploys with vLLM's own keys."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analysis import curves, equivalence, explore, frames, schedule
from analysis.vocabulary import cell_words
from analysis.winners import deploy_for, winners
from ingest import store
from tests.conftest import cli

MATRIX = """name = "modes"
gpus = ["MI300X"]
[methods.none]
[methods.dspark]
depths = [3, 8]
schedule = [[1, 4, 8], [5, 64, 3]]
adaptive = { max_depth = 8 }
[families.Qwen]
model = "Qwen/Qwen3.5-122B-A10B"
[workloads.chat]
max_tokens = 128
[load]
concurrency = [2, 32]
[run]
requests_per_cell = 60
"""


@pytest.fixture(scope="module")
def modes_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("modes")
    (tmp / "m.toml").write_text(MATRIX)
    db = tmp / "s.duckdb"
    res = cli("runner", "run", "--matrix", str(tmp / "m.toml"), "--backend", "sim", "--db", str(db))
    assert res.returncode == 0, res.stderr
    return db


def test_every_mode_is_a_candidate_with_its_label(modes_db: Path) -> None:
    with store.session(modes_db, read_only=True) as con:
        doc = winners(con)
    assert len(doc["cells"]) == 2
    for cell in doc["cells"]:
        labels = {c["label"]: c["mode"] for c in cell["candidates"]}
        assert labels == {"none": "fixed", "dspark·3": "fixed", "dspark·8": "fixed",
                          "dspark·1-4→8,5-64→3": "schedule", "dspark·≤8 adaptive": "adaptive"}
        sched = next(c for c in cell["candidates"] if c["mode"] == "schedule")
        assert sched["schedule"] == [[1, 4, 8], [5, 64, 3]] and sched["depth"] == 8
        assert all(np.isfinite(c["p_best"]) for c in cell["candidates"])
        assert abs(sum(c["p_best"] for c in cell["candidates"]) - 1) < 1e-6
        # the pick names its mode, and the words every page shows use its label
        pick = cell["pick"]
        assert {"mode", "schedule", "label"} <= set(pick) and cell_words(cell).pick == pick["label"]
        assert pick["deploy"]["speculative_config"]["num_speculative_tokens"] == pick["depth"]


def test_a_schedule_or_adaptive_pick_deploys_with_vllms_keys() -> None:
    base = {"method": "dspark", "depth": 8, "model": "Qwen/Qwen3.5-122B-A10B", "gpu_count": 2,
            "draft_model": "/models/dspark"}
    adaptive = deploy_for({**base, "mode": "adaptive"})
    assert adaptive["speculative_config"] == {"method": "dspark", "num_speculative_tokens": 8,
                                              "enable_adaptive_verification": True, "model": "/models/dspark"}
    assert "enable_adaptive_verification" in adaptive["command"]
    sched = deploy_for({**base, "mode": "schedule", "schedule": "[[1, 4, 8], [5, 64, 3]]"})
    assert sched["speculative_config"]["num_speculative_tokens_per_batch_size"] == [[1, 4, 8], [5, 64, 3]]
    assert "enable_adaptive_verification" not in sched["speculative_config"]
    assert "enable_adaptive_verification" not in deploy_for({**base, "mode": "fixed"})["speculative_config"]


def test_the_pick_prefers_a_fixed_depth_among_equivalents() -> None:
    k, why = equivalence.pick_among([("dspark", 8, "adaptive"), ("dspark", 8, "fixed")], "mtp")
    assert k == 1 and why == "fixed depth"
    k, why = equivalence.pick_among([("dspark", 8, "fixed"), ("dspark", 5, "schedule")], "mtp")
    assert k == 1 and why == "shallowest"  # depth first, as the rule says


def test_views_along_the_depth_axis_read_fixed_cells_only(modes_db: Path) -> None:
    """A schedule's or adaptive cell's depth is a cap, not the depth it ran at: curves, Explore and the derived
    schedule read fixed cells (a schedule cell of depth 8 would otherwise overwrite dspark·8's point)."""
    with store.session(modes_db, read_only=True) as con:
        points = curves.curve(con, "Qwen", "dspark", "chat")["points"]
        depth_rows = explore.by_depth(con, frames.Filters(methods=("dspark", "none")), "output_throughput")
        derived = schedule.schedules(con)["schedules"]
        every = frames.cells(con)
        fixed = frames.cells(con, frames.Filters(modes=("fixed",)))
    assert sorted((p["depth"], p["concurrency"]) for p in points) == [(3, 2), (3, 32), (8, 2), (8, 32)]
    by_cell = {(r["depth"], r["concurrency"]): r["acceptance_length"]
               for r in fixed.filter(fixed["method"] == "dspark").iter_rows(named=True)}
    assert all(abs(p["acceptance_length"] - by_cell[(p["depth"], p["concurrency"])]) < 1e-5 for p in points)
    spec = depth_rows.filter(~depth_rows["baseline"])
    assert sorted(spec["depth"].to_list()) == [3, 3, 8, 8]
    assert len(derived) == 1 and {x["best_depth"] for x in derived[0]["loads"]} <= {3, 8}
    assert every.height == 10 and fixed.height == 6 and set(fixed["mode"].to_list()) == {"fixed"}


def test_a_measured_schedule_is_checked_against_its_prediction(modes_db: Path) -> None:
    """`analysis winners --schedule`'s `checks`: a measured schedule cell per load against the fixed cell at the
    depth the schedule runs there (8 at c=2, 3 at c=32), with the error in the metric's good direction."""
    with store.session(modes_db, read_only=True) as con:
        doc = schedule.schedules(con)
        cells = frames.cells(con)
    checks = sorted(doc["checks"], key=lambda c: c["concurrency"])
    assert [(c["concurrency"], c["depth_at_load"], c["predicted_from"]) for c in checks] == [
        (2, 8, "dspark·8 at c=2"), (32, 3, "dspark·3 at c=32")]
    for c in checks:
        fixed = cells.filter((cells["method"] == "dspark") & (cells["mode"] == "fixed")
                             & (cells["depth"] == c["depth_at_load"]) & (cells["concurrency"] == c["concurrency"]))
        assert c["predicted"] == pytest.approx(fixed["output_throughput"][0], abs=1e-3)
        assert c["error_pct"] == pytest.approx((c["measured"] / c["predicted"] - 1) * 100, abs=0.01)
        assert abs(c["error_pct"]) < 15  # the simulator runs a schedule as its depth at the load: noise only
