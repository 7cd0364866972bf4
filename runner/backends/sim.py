"""The simulator backend (``--backend sim``): cells from runner.simulate, labelled simulated everywhere.

``SimBackend(world=N)`` measures world N (analysis.model_draws.world_cell): one fixed draw of the model's
parameters, measured with sampling noise only — its cells carry no model-error factors, so their replicates are a
measured cell's (bootstrap). ``batch_index``/``offsets`` (set by ``spectune tune`` per round) draw a later batch of
a cell's requests; ``lengths`` (workload → (input, output) token counts) replaces a workload's prompt set with a
trace's requests.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from analysis.model_draws import cell_factors
from ingest.records import CellKey
from runner.backends.base import CellOutcome, HostFacts, Sink
from runner.matrix import Matrix, ServerConfig
from runner.simulate import drafted_depth, simulate_cell


class SimBackend:
    kind = "sim"
    fast_cells = True  # cells take milliseconds: the runner keeps one store connection per server config

    def __init__(self, world: int | None = None) -> None:
        self.world = world
        self.batch_index = 0
        self.offsets: dict[str, int] = {}  # cell id → requests it had before this batch
        self.lengths: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def host_facts(self, matrix: Matrix) -> HostFacts:
        if self.world is not None:
            return HostFacts(host=f"simulator (world {self.world})", gpu_model=",".join(matrix.gpus), gpu_count=0,
                             engine_version="spectune-sim/1",
                             notes=f"simulated (world {self.world}): one fixed draw of the model's parameters, "
                                   "measured with sampling noise only; not a measurement")
        return HostFacts(host="simulator", gpu_model=",".join(matrix.gpus), gpu_count=0,
                         engine_version="spectune-sim/1", notes="simulated: calibrated model, not a measurement")

    def _simulate(self, key: CellKey, n: int, tokens: int, cell: CellKey):
        offset = self.offsets.get(cell.cell_id, 0)
        lengths = self.lengths.get(cell.workload)
        if lengths is not None:  # a trace's requests: this batch's slice of them, cycling
            idx = (offset + np.arange(n)) % len(lengths[0])
            lengths = (lengths[0][idx], lengths[1][idx])
        return simulate_cell(key, n, max_output_tokens=tokens, world=self.world, batch_index=self.batch_index,
                             offset=offset, lengths=lengths)

    def run_server_config(self, matrix: Matrix, config: ServerConfig, cells: list[CellKey], sink: Sink) -> None:
        wl_tokens = {w.name: w.max_tokens for w in matrix.workloads}
        sources = {w.name: w.source for w in matrix.workloads}
        for key in cells:
            tokens = max(wl_tokens[key.workload], 16)
            if key.synthetic_rates:
                # The simulator models a drafter's own acceptance; given rates simulated as that would be a number
                # about a different server. (Schedules and adaptive verification are modelled: runner/simulate.py.)
                why = ("simulator: synthetic acceptance rates is a real-server option the simulator does not model "
                       "(use --backend vllm)")
                sink(CellOutcome(key, status="failed", error=why))
                continue
            # The simulator knows workloads by their prompt set: `[workloads.specbench] source = "chat"` is the
            # chat prompt set under another name.
            model_key = key
            try:
                try:
                    res = self._simulate(key, matrix.requests_for(key.concurrency), tokens, key)
                except ValueError:
                    source = sources.get(key.workload, key.workload)
                    if source == key.workload:
                        raise
                    model_key = dataclasses.replace(key, workload=source)
                    res = self._simulate(model_key, matrix.requests_for(key.concurrency), tokens, key)
                # model uncertainty as data: ingest multiplies the cell's bootstrap replicates by these factors; a
                # world is the truth itself, measured: sampling noise only
                factors = None if self.world is not None else cell_factors(
                    key.method, drafted_depth(key, key.concurrency, res.requests.height), key.family,
                    model_key.workload, key.gpu, key.concurrency)
            except (ValueError, KeyError) as exc:
                sink(CellOutcome(key, status="failed", error=f"simulator: {exc}"))
                continue
            sink(CellOutcome(key, requests=res.requests, counters=res.counters, itl_ms=res.itl_ms,
                             window_s=res.window_s, gpu_count=res.gpu_count, model_factors=factors))
