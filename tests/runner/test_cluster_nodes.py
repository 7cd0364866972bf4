"""Ray fan-out across several real Ray nodes (ray.cluster_utils: one raylet per node, one machine):
configs land on the node that has their GPU, and a task whose node dies is retried once elsewhere,
then its cells are failed with the reason while the rest of the run goes on."""

from __future__ import annotations

import functools
import json
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ingest.records import CellKey
from runner.backends.base import Sink
from runner.backends.sim import SimBackend
from runner.execute import RunOptions
from runner.matrix import Matrix, ServerConfig, load_matrix
from tests.conftest import REPO

ray = pytest.importorskip("ray")
from ray.cluster_utils import Cluster  # noqa: E402

MATRIX = """
name = "nodes"
gpus = ["MI300X", "MI355X"]
[methods.none]
[methods.ngram]
depths = [3]
[families.Gemma]
model = "google/gemma-4-31B-it"
[workloads.chat]
max_tokens = 64
[load]
concurrency = [1]
[run]
requests_per_cell = 20
"""


class MarkedSim(SimBackend):
    """The sim backend plus a marker per attempt (which node), and an optional wait for a go signal."""

    def __init__(self, marker_dir: str, hold: str | None = None) -> None:
        super().__init__()
        self.marker_dir = Path(marker_dir)
        self.hold = hold  # the server-config label that waits for the go file

    def run_server_config(self, matrix: Matrix, config: ServerConfig, cells: list[CellKey], sink: Sink) -> None:
        node = ray.get_runtime_context().get_node_id()
        (self.marker_dir / f"{config.label().replace('/', '_')}-{node}-{os.getpid()}").touch()
        if config.label() == self.hold:
            deadline = time.monotonic() + 120
            while not (self.marker_dir / "go").exists() and time.monotonic() < deadline:
                time.sleep(0.1)
        super().run_server_config(matrix, config, cells, sink)


@pytest.fixture()
def cluster() -> Iterator[tuple[Cluster, dict[str, object]]]:
    # Ray's socket paths must stay under 108 bytes: a short folder of its own in /tmp (pytest's temp folders grow
    # by a worker name under pytest-xdist)
    short = Path(tempfile.mkdtemp(prefix="rn-", dir="/tmp"))
    mp = pytest.MonkeyPatch()
    mp.setenv("RAY_AUTH_MODE", "disabled")
    mp.setenv("RAY_TMPDIR", str(short))  # cluster_utils writes its address file there, not /tmp/ray
    (short / "ray").mkdir()
    # Fast failure detection: a dead node is noticed in ~2 s instead of ~30 s.
    fast = {"health_check_period_ms": 500, "health_check_failure_threshold": 4, "health_check_timeout_ms": 500}
    c = Cluster(initialize_head=True, head_node_args={"num_cpus": 1, "temp_dir": str(short / "ray"),
                                                      "include_dashboard": False, "_system_config": fast})
    nodes = {"MI300X-a": c.add_node(num_cpus=1, resources={"MI300X": 1}),
             "MI300X-b": c.add_node(num_cpus=1, resources={"MI300X": 1}),
             "MI355X": c.add_node(num_cpus=1, resources={"MI355X": 1})}
    c.wait_for_nodes()
    ray.init(address=c.address, log_to_driver=False, runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})
    try:
        yield c, nodes
    finally:
        ray.shutdown()
        c.shutdown()
        mp.undo()
        shutil.rmtree(short, ignore_errors=True)


def _matrix(tmp_path: Path) -> Matrix:
    path = tmp_path / "m.toml"
    path.write_text(MATRIX)
    return load_matrix(path)


def _wait_for(pattern: str, where: Path, timeout: float = 60) -> list[Path]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = sorted(where.glob(pattern))
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"no {pattern} in {where}")


def test_configs_run_on_the_node_with_their_gpu_and_survive_one_node_loss(
    cluster: tuple[Cluster, dict[str, object]], tmp_path: Path
) -> None:
    from runner.cluster import run_matrix_ray

    c, nodes = cluster
    node_ids = {name: n.node_id for name, n in nodes.items()}  # type: ignore[attr-defined]
    markers = tmp_path / "markers"
    markers.mkdir()
    matrix = _matrix(tmp_path)
    runs = tmp_path / "runs"
    factory = functools.partial(MarkedSim, str(markers), "Gemma/none@MI300X")

    import threading

    result: dict[str, object] = {}
    t = threading.Thread(target=lambda: result.setdefault("summary", run_matrix_ray(
        matrix, RunOptions(db=tmp_path / "s.duckdb", run_id="R", runs_dir=runs), "auto", factory=factory)))
    t.start()
    # One MI300X config is held on one of the two MI300X nodes; kill that node.
    first = _wait_for("Gemma_none@MI300X-*", markers)[0]
    victim = next(name for name, nid in node_ids.items() if nid in first.name)
    assert victim.startswith("MI300X")
    c.remove_node(nodes[victim], allow_graceful=False)
    survivor = "MI300X-b" if victim == "MI300X-a" else "MI300X-a"
    _wait_for(f"Gemma_none@MI300X-{node_ids[survivor]}-*", markers)
    (markers / "go").touch()
    t.join(timeout=180)
    summary = result["summary"]
    assert summary.cells_failed == 0 and summary.cells_ok == len(matrix.cells())  # type: ignore[attr-defined]
    placed = {p["label"]: p for p in map(json.loads, (runs / "R" / "placement.jsonl").read_text().splitlines())}
    for label, p in placed.items():
        if "MI355X" in label:
            assert p["node_id"] == node_ids["MI355X"]
        else:
            assert p["node_id"] == node_ids[survivor], (label, p)


def test_a_task_lost_twice_fails_its_cells_and_the_run_goes_on(
    cluster: tuple[Cluster, dict[str, object]], tmp_path: Path
) -> None:
    from runner.cluster import run_matrix_ray

    c, nodes = cluster
    node_ids = {name: n.node_id for name, n in nodes.items()}  # type: ignore[attr-defined]
    markers = tmp_path / "markers"
    markers.mkdir()
    matrix = _matrix(tmp_path)
    factory = functools.partial(MarkedSim, str(markers), "Gemma/none@MI300X")

    import threading

    result: dict[str, object] = {}
    t = threading.Thread(target=lambda: result.setdefault("summary", run_matrix_ray(
        matrix, RunOptions(db=tmp_path / "s.duckdb", run_id="R", runs_dir=tmp_path / "runs"), "auto",
        factory=factory)))
    t.start()
    for _ in range(2):  # first attempt, then its one retry: kill whichever MI300X node holds it
        before = set(markers.glob("Gemma_none@MI300X-*"))
        deadline = time.monotonic() + 60
        while not (set(markers.glob("Gemma_none@MI300X-*")) - before) and time.monotonic() < deadline:
            time.sleep(0.1)
        new = sorted(set(markers.glob("Gemma_none@MI300X-*")) - before)
        assert new, "the task (or its retry) never started"
        victim = next(name for name, nid in node_ids.items() if nid in new[0].name)
        c.remove_node(nodes[victim], allow_graceful=False)
    t.join(timeout=180)
    summary = result["summary"]
    held = [k for k in matrix.cells() if k.gpu == "MI300X" and k.method == "none"]
    assert summary.cells_failed == len(held)  # type: ignore[attr-defined]
    assert summary.cells_ok == len(matrix.cells()) - len(held)  # type: ignore[attr-defined]
    assert {f["cell_id"] for f in summary.failures} == {k.cell_id for k in held}  # type: ignore[attr-defined]
    assert all(f["error"].startswith("ray task lost") for f in summary.failures)  # type: ignore[attr-defined]
    assert len(list(markers.glob("Gemma_none@MI300X-*"))) == 2, "one attempt and exactly one retry"
