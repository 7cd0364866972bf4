"""Depth schedules per batch size, derived from cells across loads (analysis/schedule.py)."""

from __future__ import annotations

import json

import numpy as np
import polars as pl

from analysis.metrics import get_metric
from analysis.schedule import depth_at, derive, ranges
from ingest import store
from tests.analysis.test_deploy import parse, vllm_would_accept
from tests.conftest import cli


def test_ranges_cover_every_batch_size_from_one_and_merge_equal_depths():
    assert ranges([1, 16, 64], [5, 2, 2]) == ((1, 4, 5), (5, 64, 2))
    assert ranges([1, 16, 64], [5, 3, 2]) == ((1, 4, 5), (5, 32, 3), (33, 64, 2))
    assert ranges([4, 8], [3, 3]) == ((1, 8, 3),)
    sched = ranges([1, 16, 64], [5, 3, 2])
    assert [depth_at(sched, b) for b in (1, 4, 5, 16, 32, 33, 64, 500)] == [5, 5, 3, 3, 3, 2, 2, 2]


def _cells(values: dict[tuple[int, int], float], n_rep: int = 200, noise: float = 0.01):
    rows, vals, reps = [], [], []
    rng = np.random.default_rng(0)
    for (depth, conc), v in values.items():
        rows.append({"gpu": "G", "family": "F", "workload": "w", "method": "mtp", "depth": depth,
                     "concurrency": conc, "model": "org/model", "gpu_count": 2, "backend": "sim",
                     "draft_model": None, "origin": "measured", "run_id": "r", "cell_id": f"{depth}-{conc}"})
        vals.append(v)
        reps.append(v * (1 + rng.normal(0, noise, n_rep)))
    return pl.DataFrame(rows), np.array(vals), np.stack(reps)


def test_a_depth_that_moves_with_load_gives_a_schedule_with_its_gain_and_interval():
    # depth 4 wins alone, depth 2 wins loaded: a schedule beats either static depth at the loads it loses
    cells, v, r = _cells({(2, 1): 100, (4, 1): 130, (2, 64): 1000, (4, 64): 800})
    [doc] = derive(cells, v, r, get_metric("output_throughput"))
    assert doc["schedule"] == [[1, 8, 4], [9, 64, 2]] and doc["recommended"]
    assert [x["best_depth"] for x in doc["loads"]] == [4, 2]
    # best static: the highest mean share of each load's best — depth 4 (1 and 0.8) over depth 2 (0.77 and 1)
    assert doc["static"]["depth"] == 4
    assert doc["gain_vs_static_pct"] == round(((130 / 130) + (1000 / 800)) / 2 * 100 - 100, 4)
    lo, hi = doc["gain_ci_pct"]
    assert 0 < lo < doc["gain_vs_static_pct"] < hi
    _argv, config = parse(doc["deploy"]["command"])
    vllm_would_accept(config)
    assert config["num_speculative_tokens_per_batch_size"] == [[1, 8, 4], [9, 64, 2]]
    assert config["num_speculative_tokens"] == 4


def test_a_depth_that_wins_everywhere_stays_static():
    cells, v, r = _cells({(2, 1): 100, (4, 1): 130, (2, 64): 800, (4, 64): 1000})
    [doc] = derive(cells, v, r, get_metric("output_throughput"))
    assert doc["schedule"] == [[1, 64, 4]] and not doc["recommended"] and doc["gain_vs_static_pct"] == 0
    _argv, config = parse(doc["deploy"]["command"])
    assert "num_speculative_tokens_per_batch_size" not in config and config["num_speculative_tokens"] == 4


def test_a_gain_inside_the_noise_is_not_a_recommendation():
    cells, v, r = _cells({(2, 1): 100, (4, 1): 101, (2, 64): 1000, (4, 64): 995}, noise=0.05)
    [doc] = derive(cells, v, r, get_metric("output_throughput"))
    assert len({k for _a, _b, k in doc["schedule"]}) == 2 and not doc["recommended"]


def test_the_default_data_recommends_schedules_where_the_winning_depth_moves(default_db):
    done = cli("analysis", "winners", "--schedule", "--json", db=default_db)
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    assert doc["simulated"]
    recs = [s for s in doc["schedules"] if s["recommended"]]
    assert recs
    with store.session(default_db, read_only=True) as con:
        rows = con.execute("SELECT gpu, family, workload, method, concurrency, depth, output_throughput FROM cells "
                           "WHERE method <> 'none'").fetchall()
    best: dict[tuple, tuple[float, int]] = {}
    for gpu, fam, wl, meth, conc, depth, thr in rows:
        k = (gpu, fam, wl, meth, conc)
        if k not in best or thr > best[k][0]:
            best[k] = (thr, depth)
    for s in recs:
        moved = {best[(s["gpu"], s["family"], s["workload"], s["method"], x["concurrency"])][1] for x in s["loads"]}
        assert len(moved) > 1  # the winning depth moves with load in the stored cells themselves
        for x in s["loads"]:
            assert depth_at(tuple(map(tuple, s["schedule"])), x["concurrency"]) == x["best_depth"]
        assert s["gain_ci_pct"][0] > 0 and s["gain_vs_static_pct"] >= 2.0
        _argv, config = parse(s["deploy"]["command"])
        vllm_would_accept(config)
    text = cli("analysis", "winners", "--schedule", "--family", recs[0]["family"], db=default_db)
    assert text.returncode == 0 and "→ schedule" in text.stdout
    assert "num_speculative_tokens_per_batch_size" in text.stdout
