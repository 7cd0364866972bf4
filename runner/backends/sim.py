"""The simulator backend (``--backend sim``): cells from runner.simulate, labelled simulated everywhere."""

from __future__ import annotations

import dataclasses

from analysis.model_draws import cell_factors
from ingest.records import CellKey
from runner.backends.base import CellOutcome, HostFacts, Sink
from runner.matrix import Matrix, ServerConfig
from runner.simulate import drafted_depth, simulate_cell


class SimBackend:
    kind = "sim"
    fast_cells = True  # cells take milliseconds: the runner keeps one store connection per server config

    def host_facts(self, matrix: Matrix) -> HostFacts:
        return HostFacts(host="simulator", gpu_model=",".join(matrix.gpus), gpu_count=0,
                         engine_version="spectune-sim/1", notes="simulated: calibrated model, not a measurement")

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
                    res = simulate_cell(key, matrix.requests_for(key.concurrency), max_output_tokens=tokens)
                except ValueError:
                    source = sources.get(key.workload, key.workload)
                    if source == key.workload:
                        raise
                    model_key = dataclasses.replace(key, workload=source)
                    res = simulate_cell(model_key, matrix.requests_for(key.concurrency), max_output_tokens=tokens)
                # model uncertainty as data: ingest multiplies the cell's bootstrap replicates by these factors
                factors = cell_factors(key.method, drafted_depth(key, key.concurrency, res.requests.height),
                                       key.family, model_key.workload, key.gpu, key.concurrency)
            except (ValueError, KeyError) as exc:
                sink(CellOutcome(key, status="failed", error=f"simulator: {exc}"))
                continue
            sink(CellOutcome(key, requests=res.requests, counters=res.counters, itl_ms=res.itl_ms,
                             window_s=res.window_s, gpu_count=res.gpu_count, model_factors=factors))
