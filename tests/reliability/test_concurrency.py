"""Concurrency and crashes, with real runner processes on real store files (sim backend):

- two runners writing the same store at once lose nothing: the final rows are exactly the union of what
  each run writes alone (two matrices, and one matrix under two run ids);
- a runner SIGKILLed at a random point (several seeds, random fractions of the uninterrupted duration) and
  resumed ends with exactly the uninterrupted result, row for row;
- the dashboard's data layer (dashboard.data.StoreReader → analysis) polling from another process while a
  runner writes never sees a half cell: every visible cell has all its requests, positions and bootstrap
  replicates, and analysis answers on every snapshot.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from tests.conftest import REPO, SMALL_MATRIX
from tests.runner.test_resume import COMPARE, _tables

OTHER_MATRIX = """
name = "other"
gpus = ["MI355X"]
[methods.none]
[methods.mtp]
depths = [2, 3, 4]
[methods.dflash]
depths = [3, 5]
[families.Kimi]
model = "moonshotai/Kimi-K2.5"
tensor_parallel_size = 4
[families.MiniMax]
model = "MiniMaxAI/MiniMax-M2.5"
[workloads.reasoning]
max_tokens = 512
[workloads.code]
max_tokens = 256
[load]
concurrency = [1, 64]
[run]
requests_per_cell = 50
"""
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
SEEDS = (11, 23, 37, 41)


def _start(matrix: Path, db: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "runner", "run", "--matrix", str(matrix), "--db", str(db), "--json",
                             *extra], cwd=REPO, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finish(proc: subprocess.Popen, timeout: float = 600) -> dict:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err[-2000:]
    return json.loads(out)


def _sorted(tables: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    return {k: v.sort(v.columns) for k, v in tables.items()}


@pytest.fixture
def matrices(tmp_path: Path) -> tuple[Path, Path]:
    a, b = tmp_path / "small.toml", tmp_path / "other.toml"
    a.write_text(SMALL_MATRIX)
    b.write_text(OTHER_MATRIX)
    return a, b


def _union_check(alone: list[Path], together: Path) -> None:
    want = [_tables(db) for db in alone]
    got = _tables(together)
    for name in COMPARE:
        union = pl.concat([w[name] for w in want])
        assert got[name].height == union.height, (name, got[name].height, union.height)
        assert_frame_equal(_sorted({name: union})[name], _sorted({name: got[name]})[name], check_exact=True)


class AloneRuns:
    """Each (matrix, run id) run alone in its own store, once for the module, and how long it took: the reference a
    concurrent or a killed run is compared with (fixed run ids, so rows compare exactly). The tests that need the same
    reference share it (the small matrix under run id A, and under R) instead of running it again."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.matrices = {"small": root / "small.toml", "other": root / "other.toml"}
        self.matrices["small"].write_text(SMALL_MATRIX)
        self.matrices["other"].write_text(OTHER_MATRIX)
        self.seconds: dict[tuple[str, str], float] = {}

    def db(self, name: str, run_id: str) -> Path:
        path = self.root / f"alone-{name}-{run_id}.duckdb"
        if (name, run_id) not in self.seconds:
            t0 = time.monotonic()
            _finish(_start(self.matrices[name], path, "--run-id", run_id))
            self.seconds[(name, run_id)] = time.monotonic() - t0
        return path


@pytest.fixture(scope="module")
def alone(tmp_path_factory: pytest.TempPathFactory) -> AloneRuns:
    return AloneRuns(tmp_path_factory.mktemp("alone"))


def test_two_runners_on_one_store_lose_nothing(tmp_path: Path, alone: AloneRuns) -> None:
    a, b = alone.matrices["small"], alone.matrices["other"]
    want = [alone.db("small", "A"), alone.db("other", "B")]  # alone, each in its own store
    shared = tmp_path / "shared.duckdb"
    pa, pb = _start(a, shared, "--run-id", "A"), _start(b, shared, "--run-id", "B")
    ra, rb = _finish(pa), _finish(pb)
    assert ra["cells_failed"] == rb["cells_failed"] == 0
    _union_check(want, shared)


def test_one_matrix_under_two_run_ids_at_once_lose_nothing(tmp_path: Path, alone: AloneRuns) -> None:
    a = alone.matrices["small"]
    want = [alone.db("small", "A"), alone.db("small", "R")]
    shared = tmp_path / "shared.duckdb"
    p1, p2 = _start(a, shared, "--run-id", "A"), _start(a, shared, "--run-id", "R")
    _finish(p1), _finish(p2)
    _union_check(want, shared)


# ---- SIGKILL at random points, then --resume -----------------------------------------------------

@pytest.fixture(scope="module")
def uninterrupted(alone: AloneRuns) -> tuple[Path, dict[str, pl.DataFrame], float]:
    db = alone.db("small", "R")
    return alone.matrices["small"], _tables(db), alone.seconds[("small", "R")]


def _cells(db: Path) -> int:
    if not db.exists():
        return 0
    from ingest import sql, store
    from ingest.errors import UsageError

    try:
        with store.session(db, read_only=True) as con:
            return sql.one(con, "SELECT count(*) FROM cells")[0]
    except UsageError:  # killed while creating the store: no schema yet, nothing landed
        return 0


@pytest.mark.parametrize("seed", SEEDS)
def test_sigkill_at_random_points_then_resume_equals_uninterrupted(seed: int, tmp_path: Path, uninterrupted) -> None:
    matrix, expected, duration = uninterrupted
    rng = random.Random(seed)
    db = tmp_path / "killed.duckdb"
    landed = []
    for _ in range(rng.randint(1, 3)):  # killed once or several times in a row, each at a random moment
        proc = _start(matrix, db, "--run-id", "R", *(["--resume"] if db.exists() else []))
        try:
            proc.wait(timeout=rng.uniform(0.2, 0.95) * duration)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.communicate()
        landed.append(_cells(db))
    resumed = _start(matrix, db, "--run-id", "R", "--resume")
    _finish(resumed)
    got = _tables(db)
    for name in COMPARE:
        assert_frame_equal(expected[name], got[name], check_exact=True)
    print(f"seed {seed}: cells landed before each kill {landed} of {expected['cells'].height}; resumed equal")


# ---- reading while writing ---------------------------------------------------------------------------

READER = r"""
import json, sys, time
from dashboard.data import StoreReader
from analysis import frames, winners
from ingest import sql

db, stop, out = sys.argv[1], sys.argv[2], sys.argv[3]
CHECK = '''
SELECT c.run_id, c.cell_id, c.status, c.method, c.n_requests,
  (SELECT count(*) FROM requests q WHERE q.run_id = c.run_id AND q.cell_id = c.cell_id) AS nq,
  (SELECT count(*) FROM cell_bootstrap b WHERE b.run_id = c.run_id AND b.cell_id = c.cell_id) AS nb,
  (SELECT count(*) FROM positions p WHERE p.run_id = c.run_id AND p.cell_id = c.cell_id) AS np
FROM cells c
'''
snaps = []
reader = StoreReader(db)
import os
while not os.path.exists(stop):
    if not os.path.exists(db):
        time.sleep(0.05); continue
    try:
        with reader.connection() as con:
            rows = sql.frame(con, CHECK).rows(named=True)
            shown = frames.cells(con).height
            doc = winners.winners(con, "output_throughput", frames.Filters()) if shown else {"cells": []}
    except Exception as exc:  # the schema not created yet on the very first write is the only tolerated case
        if "meta" in str(exc) or "not a spectune store" in str(exc) or "no such" in str(exc).lower():
            time.sleep(0.05); continue
        raise
    ok = [r for r in rows if r["status"] == "ok"]
    half = [r["cell_id"] for r in rows if r["nq"] != r["n_requests"]]
    half += [r["cell_id"] for r in ok if r["nb"] != 200 or (r["method"] != "none" and r["np"] == 0)]
    snaps.append({"cells": len(rows), "half": half, "shown": shown, "winner_cells": len(doc["cells"])})
    time.sleep(0.02)
json.dump(snaps, open(out, "w"))
"""


# A runner whose cells take GPU-like time: the real run_matrix with the simulator's numbers, but each cell
# lands through its own short connection (as the vLLM backend does), so readers get the store in between.
SLOW_RUNNER = r"""
import sys, time
from runner.backends.sim import SimBackend
from runner.execute import RunOptions, run_matrix
from runner.matrix import load_matrix

class PacedSim(SimBackend):
    fast_cells = False
    def run_server_config(self, matrix, config, cells, sink):
        def paced(outcome):
            time.sleep(0.03)
            sink(outcome)
        super().run_server_config(matrix, config, cells, paced)

matrix, db, run_id = sys.argv[1:4]
run_matrix(load_matrix(matrix), RunOptions(backend="sim", db=db, run_id=run_id), backend=PacedSim())
"""


def _watch(tmp_path: Path, write) -> tuple[list[dict], int]:
    """Poll the store from a dashboard-data-layer process while ``write()`` runs; returns (snapshots, cells)."""
    db, stop, out = tmp_path / "live.duckdb", tmp_path / "stop", tmp_path / "snaps.json"
    script = tmp_path / "reader.py"
    script.write_text(READER)
    reader = subprocess.Popen([sys.executable, str(script), str(db), str(stop), str(out)], cwd=REPO, env=ENV,
                              stderr=subprocess.PIPE, text=True)
    try:
        write(db)
        time.sleep(0.5)
    finally:
        stop.touch()
        _, err = reader.communicate(timeout=180)
    assert reader.returncode == 0, err[-3000:]
    snaps = json.loads(out.read_text())
    total = _tables(db)["cells"].height
    assert all(not s["half"] for s in snaps), [s for s in snaps if s["half"]][:3]
    assert all(s["winner_cells"] > 0 for s in snaps if s["shown"] > 0)  # analysis answers on every snapshot
    assert snaps and snaps[-1]["cells"] == total
    return snaps, total


def test_dashboard_reads_consistent_data_while_a_paced_runner_writes(tmp_path: Path, matrices) -> None:
    a, b = matrices
    script = tmp_path / "paced.py"
    script.write_text(SLOW_RUNNER)

    def write(db: Path) -> None:
        for m, rid in ((a, "A"), (b, "B")):
            subprocess.run([sys.executable, str(script), str(m), str(db), rid], cwd=REPO, env=ENV, check=True,
                           timeout=600, capture_output=True)

    snaps, total = _watch(tmp_path, write)
    mid = sorted({s["cells"] for s in snaps if 0 < s["cells"] < total})
    print(f"paced runner: {len(snaps)} snapshots, {len(mid)} distinct mid-run cell counts (final {total})")
    assert len(mid) >= 10, mid  # the reader really read between cells, many times


def test_dashboard_reads_consistent_data_while_the_sim_cli_writes(tmp_path: Path, matrices) -> None:
    """The real ``runner run`` CLI (sim keeps one connection per server config): readers wait their turn."""
    a, b = matrices

    def write(db: Path) -> None:
        _finish(_start(a, db, "--run-id", "A"))
        _finish(_start(b, db, "--run-id", "B"))

    snaps, total = _watch(tmp_path, write)
    print(f"sim CLI: {len(snaps)} snapshots, cell counts seen {sorted({s['cells'] for s in snaps})} (final {total})")
