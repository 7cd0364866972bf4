"""Model parameters as data: loads data/sim_params.toml into typed objects (workloads, serving, methods).

Every constant in the TOML is a table ``{ value, range, source | assumption }`` (tests/runner/test_sim_params.py
holds that); :func:`load` keeps the values, :func:`priors` the ranges the model-uncertainty draws sample. The
acceptance level per (method, family, workload) and the per-method decay are fitted to the published rows
(:mod:`analysis.calibration`); the TOML values are the priors used where no row reaches.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

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
    decay: float  # the prior; calibration.decay_for gives the fitted one
    alpha_prior: dict[str, float]
    draft: costmodel.DraftCost
    propose: dict[str, float] | None = None  # n-gram: chance a step finds a match and drafts at all


@dataclass(frozen=True, slots=True)
class Prior:
    """One constant: its value, its plausible range (None when fixed), and where it came from."""

    name: str  # dotted path in the TOML, e.g. methods.dspark.draft.serial_head_ms
    value: float
    low: float | None
    high: float | None
    source: str
    is_assumption: bool


@dataclass(frozen=True, slots=True)
class Params:
    workloads: dict[str, WorkloadParams]
    families: dict[str, dict]
    methods: dict[str, MethodParams]
    borrowing: dict[str, float]
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


def is_constant(node: Any) -> bool:
    return isinstance(node, dict) and "value" in node


def values(node: Any) -> Any:
    """The TOML tree with every ``{value, range, source}`` table replaced by its value."""
    if is_constant(node):
        return values(node["value"])
    if isinstance(node, dict):
        return {k: values(v) for k, v in node.items()}
    return node


def walk_constants(node: Any, path: str = ""):
    """Yield (dotted path, leaf) for every numeric leaf and every constant table in the raw TOML."""
    if is_constant(node):
        yield path, node
        return
    if isinstance(node, dict):
        for k, v in node.items():
            yield from walk_constants(v, f"{path}.{k}" if path else k)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield path, node


@cache
def raw(path: Path = PARAMS_PATH) -> dict:
    return tomllib.loads(path.read_text())


@cache
def priors(path: Path = PARAMS_PATH) -> dict[str, Prior]:
    """Every scalar constant with its range and provenance, by dotted path."""
    out = {}
    for name, node in walk_constants(raw(path)):
        if not is_constant(node) or not isinstance(node["value"], (int, float)):
            continue
        rng = node.get("range")
        lo, hi = (float(rng[0]), float(rng[1])) if isinstance(rng, list) else (None, None)
        src = node.get("source") or node.get("assumption") or ""
        out[name] = Prior(name, float(node["value"]), lo, hi, str(src), "source" not in node)
    return out


@cache
def load(path: Path = PARAMS_PATH) -> Params:
    v = values(raw(path))
    workloads = {
        name: WorkloadParams(name, float(w["input_median"]), float(w["output_median"]), float(w["temperature"]))
        for name, w in v["workloads"].items()
    }
    methods = {}
    for name, m in v["methods"].items():
        d = m["draft"]
        methods[name] = MethodParams(
            name=name, decay=float(m["decay"]), alpha_prior={k: float(x) for k, x in m["alpha"].items()},
            draft=costmodel.DraftCost(d["kind"], float(d["pass_ms"]), float(d["token_frac"]),
                                      float(d.get("serial_head_ms", 0.0))),
            propose=m.get("propose"),
        )
    return Params(workloads=workloads, families=v["families"], methods=methods,
                  borrowing={k: float(x) for k, x in v["borrowing"].items() if k != "help"},
                  noise={k: float(x) for k, x in v["noise"].items() if k != "help"})
