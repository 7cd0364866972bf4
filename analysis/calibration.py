"""Calibration of the acceptance model against the published measurements in data/published_results.csv.

Matching rows: family in the model table, method the simulator knows, acceptance length (or an overall
acceptance rate, as τ = 1 + rate·k) with a stated depth, workload code/chat/reasoning (published ``math``
rows stand for ``reasoning``: the reasoning workload is math/logic with chain of thought). Rows listed
in :data:`EXCLUDED` are kept out with a reason. Each matching group (method, family, workload) gets the
median of its rows' α (one α per row, solved at the row's own depth).
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from statistics import median

import numpy as np

from analysis import acceptance, costmodel, params

PUBLISHED = costmodel.DATA / "published_results.csv"
WORKLOAD_MAP = {"code": "code", "chat": "chat", "reasoning": "reasoning", "math": "reasoning"}
# (source URL substring, reason): rows that cannot be compared with a mainline-vLLM cell.
EXCLUDED: tuple[tuple[str, str], ...] = (
    ("huggingface.co/Dogacel/Qwen3-8B-DSpark",
     "vLLM fork (dspark-local) with a partially trained drafter; its own same-harness reference disagrees "
     "with the DSpark paper by 40 % on the same model"),
)


@dataclass(frozen=True, slots=True)
class PublishedRow:
    line: int
    source_url: str
    family: str
    model: str
    method: str
    depth: int
    workload: str
    dataset: str
    value: float


def cliff_for(mp: params.MethodParams, family: str) -> tuple[int, float]:
    if mp.family_cliff and family in mp.family_cliff:
        return mp.cliff_after, float(mp.family_cliff[family])
    return 0, 1.0


def _as_tau(r: dict[str, str]) -> float:
    value = float(r["value"])
    return value if r["metric"] == "acceptance_length" else 1.0 + value * float(r["depth"])


@cache
def matching_rows(path: Path = PUBLISHED) -> tuple[PublishedRow, ...]:
    p = params.load()
    families = set(costmodel.model_specs())
    out = []
    with open(path, newline="") as fh:
        for line, r in enumerate(csv.DictReader(fh), start=2):
            if r["metric"] not in ("acceptance_length", "acceptance_rate") or not r["depth"].strip():
                continue
            # Per-position rates are not a cell's overall rate; overall rates become τ = 1 + rate·k.
            if r["metric"] == "acceptance_rate" and "position" in r["notes"].lower():
                continue
            if r["model_family"] not in families or r["method"] not in p.methods:
                continue
            if r["workload"] not in WORKLOAD_MAP:
                continue
            if any(s in r["source_url"] for s, _ in EXCLUDED):
                continue
            out.append(PublishedRow(line, r["source_url"], r["model_family"], r["model"], r["method"],
                                    int(float(r["depth"])), WORKLOAD_MAP[r["workload"]], r["dataset"],
                                    _as_tau(r)))
    return tuple(out)


@cache
def fitted_alphas() -> dict[tuple[str, str, str], float]:
    """α per (method, family, workload) fitted from matching published rows."""
    p = params.load()
    groups: dict[tuple[str, str, str], list[float]] = {}
    for row in matching_rows():
        mp = p.methods[row.method]
        cliff_after, cliff = cliff_for(mp, row.family)
        a = acceptance.solve_alpha(row.value, row.depth, mp.decay, cliff_after=cliff_after, cliff=cliff)
        groups.setdefault((row.method, row.family, row.workload), []).append(a)
    return {k: float(median(v)) for k, v in groups.items()}


def alpha_for(method: str, family: str, workload: str) -> tuple[float, str]:
    """(α, provenance) for a cell: 'fitted' from its published rows; else 'method-fit', the mean fit of
    the method on that workload over other families × the family factor; else the TOML 'prior'."""
    p = params.load()
    fits = fitted_alphas()
    fit = fits.get((method, family, workload))
    if fit is not None:
        return fit, "fitted"
    factor = float(p.family_alpha_factor.get(family, 1.0))
    others = [a for (m, _f, w), a in fits.items() if m == method and w == workload]
    if others:
        return min(0.97, float(np.mean(others)) * factor), "method-fit"
    mp = p.methods[method]
    prior = mp.alpha_prior.get(workload, float(np.mean(list(mp.alpha_prior.values()))))
    return min(0.97, prior * factor), "prior"


def conditional_positions(method: str, family: str, workload: str, depth: int, alpha: float | None = None):
    p = params.load()
    mp = p.methods[method]
    a = alpha if alpha is not None else alpha_for(method, family, workload)[0]
    cliff_after, cliff = cliff_for(mp, family)
    return acceptance.positions(a, mp.decay, depth, cliff_after=cliff_after, cliff=cliff)
