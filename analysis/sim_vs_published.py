"""The simulator's picks held against a reference table's measured winners (docs/simulator.md, 'Picks').

For every (model, dataset) of a reference-shape table (data/published/<name>/cells.csv) whose model is the
simulated model of its family (data/models.csv, the default matrix): the post's winner (the best speedup among
the (method, depth) it measured for that model), and the simulator's best (method, depth) by output throughput
at concurrency 1 on the post's GPU and the dataset's workload — over every candidate of the default grid, and
over the methods the post measured for that model only. The post states no load; concurrency 1 is the
comparison's assumption. The post's DFlash/DSpark depths go to 15, the default grid to 8.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from analysis import calibration, costmodel

DEFAULT_CELLS = costmodel.DATA / "default" / "cells.parquet"


@dataclass(frozen=True, slots=True)
class Pick:
    model: str
    dataset: str
    workload: str
    gpu: str
    post: tuple[str, int]  # the post's winner (method, depth)
    post_speedup: float
    sim_any: tuple[str, int]  # the simulator's best over every candidate of the grid
    sim_measured: tuple[str, int]  # the simulator's best over the methods the post measured for the model
    sim_speedup_of_post: float | None  # the simulator's speedup for the post's winner (None: depth off the grid)
    sim_speedup_measured: float

    @property
    def method_agrees(self) -> bool:
        return self.sim_measured[0] == self.post[0]

    @property
    def exact(self) -> bool:
        return self.sim_measured == self.post


def picks(cells: pl.DataFrame, reference: Path | None = None, concurrency: int = 1) -> tuple[Pick, ...]:
    folders = [reference] if reference else list(calibration.reference_tables())
    simulated = {calibration.model_key(s.model): s.family for s in costmodel.model_specs().values()}
    ok = cells.filter(pl.col("status") == "ok", pl.col("concurrency") == concurrency)
    out = []
    for folder in folders:
        ref = pl.read_csv(folder / "cells.csv", infer_schema_length=0).with_columns(
            pl.col("depth").cast(pl.Int64), pl.col("speedup").cast(pl.Float64))
        for (model, dataset), grp in ref.group_by("model", "dataset", maintain_order=True):
            family = simulated.get(calibration.model_key(model))
            if family is None:
                continue
            best = grp.sort("speedup", descending=True).row(0, named=True)
            workload = calibration.WORKLOAD_MAP.get(best["workload"], best["workload"])
            # the simulated model's own cells (a store may hold imported cells of other models of the family)
            sim = ok.filter(pl.col("family") == family, pl.col("model") == costmodel.model_specs()[family].model,
                            pl.col("workload") == workload, pl.col("gpu") == best["gpu"])
            base = sim.filter(pl.col("method") == "none")["output_throughput"]
            if sim.is_empty() or base.is_empty():
                continue
            spec = sim.filter(pl.col("method") != "none").with_columns(
                speedup=pl.col("output_throughput") / float(base[0])).sort("speedup", descending=True)
            measured = spec.filter(pl.col("method").is_in(grp["method"].unique().to_list()))
            top, top_m = spec.row(0, named=True), measured.row(0, named=True)
            post = (best["method"], int(best["depth"]))
            own = spec.filter(pl.col("method") == post[0], pl.col("depth") == post[1])["speedup"]
            out.append(Pick(model, dataset, workload, best["gpu"], post, float(best["speedup"]),
                            (top["method"], int(top["depth"])), (top_m["method"], int(top_m["depth"])),
                            float(own[0]) if own.len() else None, float(top_m["speedup"])))
    return tuple(out)


def default_picks() -> tuple[Pick, ...]:
    return picks(pl.read_parquet(DEFAULT_CELLS))


def _c(x: tuple[str, int]) -> str:
    return f"{x[0]}·{x[1]}"


def markdown_table(ps: tuple[Pick, ...]) -> str:
    lines = ["| model | dataset (workload) | GPU | post's winner (speedup) | simulator, post's methods (speedup) | "
             "simulator, every method | simulator's speedup for the post's winner |",
             "|---|---|---|---|---|---|---|"]
    for p in ps:
        own = "off the grid (depth > 8)" if p.sim_speedup_of_post is None else f"{p.sim_speedup_of_post:.2f}×"
        lines.append(f"| {p.model} | {p.dataset} ({p.workload}) | {p.gpu} | {_c(p.post)} ({p.post_speedup:.2f}×) | "
                     f"{_c(p.sim_measured)} ({p.sim_speedup_measured:.2f}×) | {_c(p.sim_any)} | {own} |")
    n = len(ps)
    lines += ["", f"Same method as the post's winner (among the post's methods): {sum(p.method_agrees for p in ps)} of "
              f"{n}; same method and depth: {sum(p.exact for p in ps)} of {n}; the simulator's overall pick is a "
              f"method the post did not run for that model in {sum(p.sim_any[0] != p.sim_measured[0] for p in ps)} "
              f"of {n}."]
    return "\n".join(lines)


DOC_START = "<!-- picks-table:start (generated by scripts/validation_table.py; a test keeps it in sync) -->"
DOC_END = "<!-- picks-table:end -->"
