"""A store with 9 methods × 8 depths (1 GPU, 1 family, 1 workload, 2 loads), built by the runner with the
simulator backend in a temporary folder: the size at which chart labels and legends must still hold.

The simulator has parameters for six methods only; the other three (suffix, draft_model, medusa) are simulated
as a stand-in method (their cells carry the stand-in's simulated numbers under their own name). The charts
only need nine methods with eight depths each, not their true speeds.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from ingest.records import CellKey
from runner.backends.base import CellOutcome, Sink
from runner.backends.sim import SimBackend
from runner.execute import RunOptions, run_matrix
from runner.matrix import Matrix, ServerConfig, load_matrix

STAND_IN = {"suffix": "ngram", "draft_model": "eagle3", "medusa": "mtp"}
METHODS = ("mtp", "eagle3", "dflash", "dspark", "ngram", *STAND_IN)  # + none = 9
DEPTHS = tuple(range(1, 9))
GPUS = ("MI300X",)
LOADS = (1, 64)

MATRIX = "\n".join([
    'name = "wide"', f"gpus = {list(GPUS)}", "[methods.none]",
    *[f"[methods.{m}]\ndepths = {list(DEPTHS)}" for m in METHODS],
    '[families.Qwen]\nmodel = "Qwen/Qwen3.5-397B-A17B"\ntensor_parallel_size = 2',
    "[workloads.code]\nmax_tokens = 32", f"[load]\nconcurrency = {list(LOADS)}", "[run]\nrequests_per_cell = 20", ""])


class StandInSim(SimBackend):
    """The simulator, with the methods it has no parameters for simulated as a stand-in method."""

    def run_server_config(self, matrix: Matrix, config: ServerConfig, cells: list[CellKey], sink: Sink) -> None:
        original: dict[str, CellKey] = {}
        keys = []
        for key in cells:
            k = dataclasses.replace(key, method=STAND_IN.get(key.method, key.method))
            original[k.cell_id] = key
            keys.append(k)

        def restore(outcome: CellOutcome) -> None:
            sink(dataclasses.replace(outcome, key=original.get(outcome.key.cell_id, outcome.key)))

        super().run_server_config(matrix, config, keys, restore)


def build_wide_store(folder: Path) -> Path:
    (folder / "wide.toml").write_text(MATRIX)
    db = folder / "wide.duckdb"
    summary = run_matrix(load_matrix(folder / "wide.toml"), RunOptions(db=db), backend=StandInSim())
    assert summary.cells_failed == 0, summary.failures
    return db
