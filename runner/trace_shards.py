"""Your traffic as the workload of ``spectune tune --trace FILE``: the trace's shards as workloads, with their own
request lengths and load.

What of the trace is used (docs/tune.md, "Your traffic"):

* **shards** — as re-scoring defines them with ``--shard-by auto`` (analysis.rescore.shard): the trace's shard
  column (tenant, endpoint …) when any request has one, else the requests' workload (file column, per-file
  choice or prompt classifier, analysis.rescore.workload);
* **lengths** — each shard's own (input, output) token counts, replayed in the trace's order (a batch takes the
  next requests, cycling when a cell needs more requests than the shard has);
* **load** — with arrival times: the shard's mean number of requests in flight by Little's law, L = λ·W, with
  λ its arrival rate (requests / its time span) and W the baseline's single-request latency under the cost
  model (prefill + output / decode speed at batch 1; a lower bound, so the load is too), rounded and kept in
  [1, 256]; without arrival times: the matrix's ``[load]`` levels;
* **acceptance** — the simulator's for the shard's dominant workload (code / chat / reasoning; the matrix's
  first workload when the shard's is unknown).

Not used: prompt text (beyond the workload classifier), observed acceptance counters, burstiness beyond the
mean rate (arrivals are not replayed open-loop: a cell is a closed loop at the shard's load).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from analysis import costmodel, params
from analysis.rescore.shard import key_expr
from analysis.rescore.workload import assign_file
from ingest.records import CellKey
from ingest.traces import read_trace
from runner.backends.base import Progress
from runner.backends.sim import SimBackend
from runner.matrix import Matrix, WorkloadSpec
from runner.tune import TuneOptions, TuneResult, tune

MAX_LOAD = 256


@dataclass(frozen=True, slots=True)
class Shard:
    name: str  # the shard's name in the trace
    workload: str  # the cells' workload name (the shard's, made safe)
    model_workload: str  # the simulator's workload it is modelled as
    inputs: np.ndarray
    outputs: np.ndarray
    loads: tuple[int, ...]
    load_from: str  # "arrival rate (Little's law)" | "matrix [load]"
    requests: int


@dataclass(frozen=True, slots=True)
class TraceShards:
    shard_by: str  # column | workload
    shards: list[Shard]
    trace_name: str
    file_hash: str


def _safe(name: str) -> str:
    return "shard:" + (re.sub(r"[^A-Za-z0-9_.-]+", "_", name).strip("_") or "unnamed")


def _load(frame: pl.DataFrame, matrix: Matrix, family: str, gpu: str) -> tuple[tuple[int, ...], str]:
    ts = frame["timestamp_s"].drop_nulls()
    span = float(ts.max() - ts.min()) if ts.len() > 1 else 0.0
    p = params.load()
    if span <= 0 or family not in p.families:
        return tuple(matrix.concurrency), "matrix [load]"
    try:
        dep = p.deployment(family, gpu)
    except ValueError:
        return tuple(matrix.concurrency), "matrix [load]"
    rate = ts.len() / span
    w_ms = (costmodel.prefill_ms(dep, float(frame["input_tokens"].mean()))
            + float(frame["output_tokens"].mean()) * costmodel.verify_ms(dep, 1.0, 1.0))
    return (int(np.clip(round(rate * w_ms / 1e3), 1, MAX_LOAD)),), "arrival rate (Little's law)"


def read_shards(path: Path, matrix: Matrix) -> TraceShards:
    """The trace at ``path`` as shards (module docstring). Bad input raises InputError before anything runs."""
    tf = read_trace(path)
    frame, _source = assign_file(tf.frame, tf.format, tf.name, None)
    shard_by = "column" if frame["shard"].is_not_null().any() else "workload"
    frame = frame.with_columns(key_expr(shard_by).alias("_shard"))
    known = params.load().workloads
    fallback = next((w.source or w.name for w in matrix.workloads), "chat")
    family, gpu = matrix.families[0].name, matrix.gpus[0]
    shards = []
    for (name,), part in frame.group_by("_shard", maintain_order=True):
        wl = part["workload"].drop_nulls()
        top = [w for w in wl.value_counts(sort=True)["workload"].to_list() if w in known]
        loads, how = _load(part, matrix, family, gpu)
        shards.append(Shard(str(name), _safe(str(name)), top[0] if top else fallback,
                            part["input_tokens"].to_numpy().astype(np.int64),
                            part["output_tokens"].to_numpy().astype(np.int64), loads, how, part.height))
    return TraceShards(shard_by, shards, tf.name, tf.file_hash)


def shard_matrix(matrix: Matrix, ts: TraceShards) -> tuple[Matrix, list[CellKey]]:
    """The matrix with the shards as its workloads, and the cells to race: every server config × shard × the
    shard's load."""
    max_tokens = max((w.max_tokens for w in matrix.workloads), default=256)
    workloads = tuple(WorkloadSpec(s.workload, source=s.model_workload,
                                   max_tokens=max(max_tokens, int(s.outputs.max()) if s.outputs.size else 1))
                      for s in ts.shards)
    loads = tuple(sorted({c for s in ts.shards for c in s.loads}))
    m = dataclasses.replace(matrix, workloads=workloads, concurrency=loads)
    cells = [CellKey(cfg.method, cfg.depth, cfg.family, cfg.model, s.workload, cfg.gpu, c, cfg.schedule,
                     cfg.synthetic_rates)
             for cfg in m.server_configs() for s in ts.shards for c in s.loads]
    return m, cells


def tune_shards(matrix: Matrix, ts: TraceShards, opts: TuneOptions, progress: Progress | None = None,
                notify: Callable[[str], None] | None = None) -> TuneResult:
    """``tune --trace``: race every shard of the trace (sim backend: the shards' lengths replace the prompt sets)."""
    m, cells = shard_matrix(matrix, ts)
    backend = SimBackend(world=opts.world)
    backend.lengths = {s.workload: (s.inputs, s.outputs) for s in ts.shards}
    sources = {s.workload: s.model_workload for s in ts.shards}
    result = tune(m, opts, progress, notify, backend=backend, cells=cells, source=lambda w: sources.get(w, w),
                  digest_extra=f"trace{ts.file_hash[:16]}")
    names = {s.workload: s.name for s in ts.shards}
    for g in result.groups:
        if g.result is not None:
            g.result["shard"] = names.get(g.result["workload"])
    return result


def trace_summary(ts: TraceShards) -> dict[str, object]:
    """What of the trace the tune used, for the JSON document."""
    return {"name": ts.trace_name, "file_hash": ts.file_hash, "shard_by": ts.shard_by,
            "shards": [{"shard": s.name, "workload": s.workload, "modelled_as": s.model_workload,
                        "requests": s.requests, "loads": list(s.loads), "load_from": s.load_from}
                       for s in ts.shards]}
