"""Model parameters as data: loads data/sim_params.toml into typed objects (workloads, serving, methods).

The acceptance level per (method, family, workload) is fitted to the published rows where they exist
(:mod:`analysis.calibration`) and falls back to the method's prior × a family factor elsewhere.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from analysis import costmodel

PARAMS_PATH = costmodel.DATA / "sim_params.toml"


@dataclass(frozen=True, slots=True)
class WorkloadParams:
    name: str
    input_median: float
    output_median: float
    temperature: float


@dataclass(frozen=True, slots=True)
class MethodParams:
    name: str
    decay: float
    alpha_prior: dict[str, float]
    draft: costmodel.DraftCost
    cliff_after: int = 0
    family_cliff: dict[str, float] | None = None
    propose: dict[str, float] | None = None  # n-gram: chance a step finds a match and drafts at all


@dataclass(frozen=True, slots=True)
class Params:
    workloads: dict[str, WorkloadParams]
    families: dict[str, dict]
    methods: dict[str, MethodParams]
    family_alpha_factor: dict[str, float]
    noise: dict[str, float]

    def deployment(self, family: str, gpu: str) -> costmodel.Deployment:
        fam = self.families[family]
        specs = costmodel.gpu_specs()
        if gpu not in specs:
            raise ValueError(f"no GPU specs for {gpu!r} (known: {', '.join(specs)})")
        tp = int(fam["tp"].get(gpu, max(fam["tp"].values())))
        return costmodel.Deployment(
            model=costmodel.model_specs()[family], gpu=specs[gpu], tp=tp,
            bytes_per_param=float(fam["bytes_per_param"]), overhead_ms=float(fam["overhead_ms"]),
            per_seq_ms=float(fam["per_seq_ms"]), per_token_ms=float(fam["per_token_ms"]),
            ref_gpu=specs["MI355X"], ref_tp=int(fam["tp"]["MI355X"]),
        )


@cache
def load(path: Path = PARAMS_PATH) -> Params:
    raw = tomllib.loads(path.read_text())
    workloads = {
        name: WorkloadParams(name, float(w["input_median"]), float(w["output_median"]), float(w["temperature"]))
        for name, w in raw["workloads"].items()
    }
    methods = {}
    for name, m in raw["methods"].items():
        d = m["draft"]
        methods[name] = MethodParams(
            name=name, decay=float(m["decay"]), alpha_prior={k: float(v) for k, v in m["alpha"].items()},
            draft=costmodel.DraftCost(d["kind"], float(d["pass_ms"]), float(d["token_frac"]),
                                      float(d.get("serial_head_ms", 0.0))),
            cliff_after=int(m.get("cliff_after", 0)), family_cliff=m.get("family_cliff"), propose=m.get("propose"),
        )
    return Params(workloads=workloads, families=raw["families"], methods=methods,
                  family_alpha_factor=raw["family_alpha_factor"], noise=raw["noise"])
