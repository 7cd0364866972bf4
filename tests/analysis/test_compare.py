"""Run comparison / drift on real simulated runs in a real store, through the CLI and the nightly script.

Runs A and A2 are the same matrix run twice by the real runner (identical samples: the simulator is seeded
per cell). Run B is the same matrix after a deliberate shift of the traffic mix: the `chat` shard now
carries 80 % reasoning-like requests (chain-of-thought prompts, long outputs), every other shard is what
the runner produces. MiniMax at c=16 is chosen because there MTP wins chat and DSpark wins reasoning.
"""

from __future__ import annotations

import heapq
import json
import os
import shutil
import subprocess
from dataclasses import replace
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest

from tests.conftest import REPO, cli

MATRIX = """
name = "drift-minimax"
gpus = ["MI300X"]
[methods.none]
[methods.mtp]
depths = [3, 5]
# MTP against DFlash: on the simulator (refit on vLLM's AMD post) MiniMax's winner differs between chat and
# reasoning at both loads, so shifting chat traffic towards reasoning moves it
[methods.dflash]
depths = [3, 5]
[families.MiniMax]
model = "MiniMaxAI/MiniMax-M3"
tensor_parallel_size = 4
[workloads.code]
max_tokens = 512
[workloads.chat]
max_tokens = 512
temperature = 0.7
[workloads.reasoning]
max_tokens = 2048
[load]
concurrency = [1, 16]
[run]
requests_per_cell = 60
"""
SHIFT = 0.8  # share of reasoning-like requests in run B's chat shard


def _closed_loop_window(e2e_ms: list[float], concurrency: int) -> float:
    slots = [0.0] * min(concurrency, len(e2e_ms))
    end = 0.0
    for e in e2e_ms:
        t = heapq.heappop(slots) + e / 1e3
        end = max(end, t)
        heapq.heappush(slots, t)
    return end


def write_shifted_run(db: Path, matrix_path: Path, run_id: str) -> None:
    """Run B: the runner's own cells, except `chat`, whose requests are 80 % reasoning-like."""
    from ingest import store
    from ingest.records import RunInfo
    from runner.backends.sim import SimBackend
    from runner.execute import RunSummary, land
    from runner.matrix import load_matrix
    from runner.simulate import simulate_cell

    m = load_matrix(matrix_path)
    n = m.requests_per_cell
    summary = RunSummary(run_id=run_id)
    with store.session(db) as con:
        store.write_run(con, RunInfo(run_id=run_id, backend="sim", source=f"{matrix_path} (shifted mix)",
                                     matrix_hash=m.digest, notes="test: chat traffic shifted towards reasoning"))
        for cfg in m.server_configs():
            outcomes = []
            SimBackend().run_server_config(m, cfg, [k for k in m.cells() if k.server_config == cfg.key],
                                           outcomes.append)
            for out in outcomes:
                if out.key.workload != "chat":
                    land(con, run_id, out, summary, replace=False)
                    continue
                heavy = simulate_cell(replace(out.key, workload="reasoning"), n, max_output_tokens=512)
                k = int(n * SHIFT)
                reqs = pl.concat([heavy.requests.head(k), out.requests.head(n - k)]).with_columns(
                    pl.int_range(pl.len()).cast(pl.Int32).alias("request_index"))
                store.write_cell(con, run_id, out.key, reqs, gpu_count=out.gpu_count,
                                 window_s=_closed_loop_window(reqs["e2e_ms"].to_list(), out.key.concurrency),
                                 model_factors=out.model_factors)


@pytest.fixture(scope="module")
def drift_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("drift")
    matrix = root / "drift.toml"
    matrix.write_text(MATRIX)
    db = root / "drift.duckdb"
    for run_id in ("A", "A2"):
        res = cli("runner", "run", "--matrix", str(matrix), "--db", str(db), "--run-id", run_id, "--json")
        assert res.returncode == 0, res.stderr
    write_shifted_run(db, matrix, "B")
    return db


def _compare(db: Path, *args: str) -> tuple[int, dict]:
    res = cli("analysis", "compare", *args, "--db", str(db), "--json")
    assert res.returncode in (0, 3), res.stderr
    return res.returncode, json.loads(res.stdout)


def test_shifted_mix_flags_changed_winners_and_exits_3(drift_db: Path) -> None:
    from analysis.frames import Filters
    from analysis.winners import winners
    from ingest import store

    code, rep = _compare(drift_db, "A", "B")
    assert code == 3 and rep["winners_changed"] >= 1 and rep["simulated"]
    changed = [g for g in rep["groups"] if g["status"] == "changed"]
    assert {g["workload"] for g in changed} == {"chat"}  # only the shifted shard moves
    assert all(g["status"] == "same" for g in rep["groups"] if g["workload"] != "chat")
    with store.session(drift_db, read_only=True) as con:
        own = {r: {(c["workload"], c["concurrency"]): c for c in winners(con, "output_throughput",
                                                                      Filters(runs=(r,)))["cells"]}
               for r in ("A", "B")}
    for g in changed:  # each side is that run's own winner, and they are not tied in either run
        for side, run in (("a", "A"), ("b", "B")):
            w = own[run][(g["workload"], g["concurrency"])]
            assert (g[side]["method"], g[side]["depth"]) == (w["winner"]["method"], w["winner"]["depth"])
        tied_a = {(t["method"], t["depth"]) for t in g["a"]["tied"]}
        tied_b = {(t["method"], t["depth"]) for t in g["b"]["tied"]}
        assert (g["b"]["method"], g["b"]["depth"]) not in tied_a and (g["a"]["method"], g["a"]["depth"]) not in tied_b
        assert g["gain_pct"] > 0
    shards = {r["shard"] for r in rep["retune"]}
    assert shards == {f"MI300X/MiniMax-M3/chat/c={g['concurrency']}" for g in changed}
    for r in rep["retune"]:
        assert r["speculative_config"] == (None if r["to"]["method"] == "none" else
                                           {"method": r["to"]["method"], "num_speculative_tokens": r["to"]["depth"]})
    # per cell: untouched shards are identical (no change, nothing significant); chat acceptance moved
    for c in rep["cells"]:
        m = c["metrics"]
        if c["workload"] != "chat":  # (`none` cells have no acceptance: no value, no change)
            assert all(v["delta"] == 0 and v["significant"] is False for k, v in m.items()
                       if c["method"] != "none" or not k.startswith("acceptance")), c
    chat_spec = [c for c in rep["cells"] if c["workload"] == "chat" and c["method"] != "none"]
    assert sum(c["metrics"]["acceptance_rate"]["significant"] for c in chat_spec) >= len(chat_spec) // 2
    assert rep["cells_compared"] == 30 and rep["only_in_a"] == rep["only_in_b"] == 0


def test_identical_runs_exit_0(drift_db: Path) -> None:
    code, rep = _compare(drift_db, "A", "A2")
    assert code == 0 and rep["winners_changed"] == 0 and rep["retune"] == []
    assert all(g["status"] == "same" for g in rep["groups"]) and len(rep["groups"]) == 6
    assert all(v["delta"] in (0, None) and not v["significant"] for c in rep["cells"] for v in c["metrics"].values())
    assert set(rep["cells_changed"].values()) == {0}


def test_change_interval_is_the_bootstrap_difference_interval(drift_db: Path) -> None:
    _, rep = _compare(drift_db, "A", "B")
    cell = next(c for c in rep["cells"] if c["workload"] == "chat" and c["method"] == "mtp"
                and c["concurrency"] == 16 and c["depth"] == 5)
    con = duckdb.connect(str(drift_db), read_only=True)
    reps = {r: np.array(con.execute("SELECT acceptance_rate FROM cell_bootstrap WHERE run_id = ? AND cell_id = ? "
                                    "ORDER BY replicate", [r, cell["cell_id"]]).fetchall(), dtype=float).ravel()
            for r in ("A", "B")}
    con.close()
    lo, hi = np.percentile(reps["B"] - reps["A"], [2.5, 97.5])
    got = cell["metrics"]["acceptance_rate"]
    assert got["ci_low"] == pytest.approx(lo, abs=1e-6) and got["ci_high"] == pytest.approx(hi, abs=1e-6)
    assert got["significant"] == bool(lo > 0 or hi < 0)
    # reasoning-like prompts move acceptance the way the calibrated model orders the two workloads
    from analysis import calibration
    up = calibration.alpha_for("mtp", "MiniMax", "reasoning")[0] > calibration.alpha_for("mtp", "MiniMax", "chat")[0]
    assert (got["delta"] > 0) == up


def test_previous_and_latest_and_markdown(drift_db: Path, tmp_path: Path) -> None:
    md, js = tmp_path / "drift.md", tmp_path / "drift.json"
    res = cli("analysis", "compare", "previous", "latest", "--db", str(drift_db), "--markdown", str(md),
              "--out", str(js))
    assert res.returncode == 3, res.stderr
    rep = json.loads(js.read_text())
    assert (rep["run_a"]["run_id"], rep["run_b"]["run_id"]) == ("A2", "B")
    text = md.read_text()
    assert "Simulated data" in text and "## Re-tune these shards" in text
    for r in rep["retune"]:
        assert f"| {r['shard']} |" in text
    assert f"winners changed: {rep['winners_changed']} of {rep['groups_compared']} groups" in res.stdout


@pytest.mark.parametrize(("args", "message"), [
    (["A", "nope"], "error: no such run (with results): nope"),
    (["A", "A"], "error: compare needs two different runs"),
    (["previous", "A"], "error: no run before A to compare with"),
    (["A", "B", "--metric", "goodput"], "error: argument --metric: invalid choice"),
])
def test_bad_arguments_are_one_line(drift_db: Path, args: list[str], message: str) -> None:
    res = cli("analysis", "compare", *args, "--db", str(drift_db))
    assert res.returncode == 2 and res.stderr.startswith(message) and len(res.stderr.strip().splitlines()) == 1


def _group(winner: tuple[str, int], tied: list[tuple[str, int]]) -> dict:
    w = {"method": winner[0], "depth": winner[1], "value": 100.0}
    return {"gpu": "G", "family": "F", "model": "M", "workload": "W", "dataset": None, "concurrency": 1, "winner": w,
            "clear": not tied,
            "tied": [{"method": m, "depth": d, "value": 1.0} for m, d in tied]}


def _cells(*pairs: tuple[str, int, float]) -> pl.DataFrame:
    return pl.DataFrame({"gpu": "G", "family": "F", "model": "M", "workload": "W", "dataset": None, "concurrency": 1,
                         "method": [m for m, _, _ in pairs], "depth": [d for _, d, _ in pairs],
                         "output_throughput": [v for _, _, v in pairs]})


@pytest.mark.parametrize(("a", "b", "status"), [
    (_group(("mtp", 3), []), _group(("mtp", 3), []), "same"),
    (_group(("mtp", 3), []), _group(("dflash", 2), []), "changed"),
    (_group(("mtp", 3), [("mtp", 3), ("eagle3", 2)]), _group(("dflash", 2), []), "changed"),
    (_group(("mtp", 3), []), _group(("dflash", 2), [("dflash", 2), ("mtp", 3)]), "unsettled"),
    (_group(("mtp", 3), [("mtp", 3), ("dflash", 2)]), _group(("dflash", 2), []), "unsettled"),
])
def test_changed_rule(a: dict, b: dict, status: str) -> None:
    from analysis.compare import group_changes

    both = _cells(("mtp", 3, 80.0), ("dflash", 2, 100.0), ("eagle3", 2, 70.0))
    (g,) = group_changes({"cells": [a]}, {"cells": [b]}, both, both, "output_throughput")
    assert g["status"] == status
    if a["winner"]["method"] != b["winner"]["method"]:
        assert g["gain_pct"] == pytest.approx(25.0)  # B's winner (100) over A's winner measured in B (80)


def test_a_winner_the_other_run_never_measured_is_not_comparable_not_changed() -> None:
    """Run B left dflash out of its matrix: A's dflash winner cannot lose to B's mtp, so no alert."""
    from analysis.compare import group_changes, retune

    a, b = _group(("dflash", 5), []), _group(("mtp", 3), [])
    cells_a = _cells(("dflash", 5, 120.0), ("mtp", 3, 90.0))
    cells_b = _cells(("mtp", 3, 100.0))
    (g,) = group_changes({"cells": [a]}, {"cells": [b]}, cells_a, cells_b, "output_throughput")
    assert (g["status"], g["gain_pct"]) == ("not_comparable", None) and retune([g]) == []
    # the other direction: B's new winner was never run in A
    (g,) = group_changes({"cells": [b]}, {"cells": [a]}, cells_b, cells_a, "output_throughput")
    assert g["status"] == "not_comparable"


def test_nightly_script_runs_compares_and_alerts(drift_db: Path, tmp_path: Path) -> None:
    """deploy/nightly/spectune-nightly.sh on the simulator: first night vs the shifted run B alerts (exit 3),
    the next night (identical traffic) is quiet (exit 0); reports land in dated folders."""
    db = tmp_path / "nightly.duckdb"
    shutil.copyfile(drift_db, db)
    matrix = tmp_path / "drift.toml"
    matrix.write_text(MATRIX)
    reports, alerts = tmp_path / "reports", tmp_path / "alerts.log"
    env = {**os.environ, "PYTHONPATH": str(REPO), "SPECTUNE_HOME": str(REPO), "SPECTUNE_DB": str(db),
           "SPECTUNE_MATRIX": str(matrix), "SPECTUNE_BACKEND": "sim", "SPECTUNE_REPORTS": str(reports),
           "SPECTUNE_ALERT_CMD": f'cp "$SPECTUNE_DRIFT_MD" {alerts}'}
    script = REPO / "deploy" / "nightly" / "spectune-nightly.sh"
    first = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert first.returncode == 3, first.stdout + first.stderr
    latest = reports / "latest"
    rep = json.loads((latest / "drift.json").read_text())
    assert rep["run_a"]["run_id"] == "B" and rep["winners_changed"] >= 1  # back from the shifted mix
    assert alerts.read_text() == (latest / "drift.md").read_text()
    alerts.unlink()
    second = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout + second.stderr
    rep2 = json.loads((reports / "latest" / "drift.json").read_text())
    assert rep2["winners_changed"] == 0 and rep2["run_a"]["run_id"] == rep["run_b"]["run_id"]
    assert not alerts.exists() and len([p for p in reports.iterdir() if p.name != "latest"]) == 2
