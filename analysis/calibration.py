"""Calibration of the acceptance model against the published measurements (data/published_results.csv,
data/published_positions.csv): the per-method depth shape and the per-cell acceptance level, with borrowing.

Shape (one per method). Conditional acceptance p_i = α·decay^(i−1); ``decay`` is fitted per method by least
squares over every published *curve* of that method: per-position curves (log conditional rates, one free α
per curve) and per-depth series (the same source, model and dataset at ≥ 2 depths, log τ, one free α per
series). A method with fewer than three curve points keeps the TOML prior
(two points fit any decay). Its range (for the model-uncertainty draws) is the
spread of the decays each curve gives on its own, or the TOML range with fewer than two curves.

Level. Each published τ row (acceptance length, or an overall acceptance rate at depth k as τ = 1 + rate·k;
``math`` rows stand for ``reasoning``) gives α = solve(τ, k, decay). A cell (method, family, workload):

* ``fitted`` — the median α of the rows of that method, family and workload whose MoE flag matches the
  family's (a dense 8B row never stands for a 397B MoE family);
* ``borrowed`` — else the method's pool on that workload (mean over (source, model) of the median α, every
  family and size) × the family's own ratio to the pools (geometric mean over the family's fitted groups;
  1.0, a prior with a range, when the family has none);
* ``prior`` — else the TOML prior of the method × the family ratio.

Every function takes ``exclude`` (a study: a source URL, see :func:`study`) so the leave-one-source-out
validation refits without it. No row is excluded for disagreeing with another source.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from statistics import median

import numpy as np

from analysis import acceptance, costmodel, params

PUBLISHED = costmodel.DATA / "published_results.csv"
POSITIONS = costmodel.DATA / "published_positions.csv"
WORKLOAD_MAP = {"code": "code", "chat": "chat", "reasoning": "reasoning", "math": "reasoning"}
WORKLOADS = ("code", "chat", "reasoning")
DECAY_GRID = np.round(np.arange(0.70, 1.1001, 0.0025), 4)
ALPHA_GRID = np.round(np.arange(0.005, 0.9801, 0.005), 4)
MAX_DEPTH = 8
MIN_SHAPE_POINTS = 3  # a decay is fitted only from at least this many depth/position points


# A secondary source that only re-reports a primary one belongs to the primary's study: leaving the study out
# must leave out both, or the held-out figures reach their own prediction through the copy.
SAME_STUDY = {
    # AI Weekly's summary of the RedHatAI GLM-5.2 DSpark preview card: its vLLM HumanEval/math_reasoning
    # acceptance lengths (2.33, 3.13) are the card's own "Acceptance length in vLLM" section.
    "https://aiweekly.co/alerts/red-hat-ai-previews-glm-52-dspark-speculator-draft-model":
        "https://huggingface.co/RedHatAI/GLM-5.2-speculator.dspark-preview",
}


def study(source_url: str) -> str:
    """The study a source belongs to (its own URL unless it re-reports another source)."""
    return SAME_STUDY.get(source_url, source_url)


@dataclass(frozen=True, slots=True)
class PublishedRow:
    line: int
    source_url: str
    family: str
    model: str
    moe: bool | None
    method: str
    depth: int
    workload: str  # mapped (code/chat/reasoning) or the raw label (mixed, other, …)
    dataset: str
    value: float  # τ


def _moe(s: str) -> bool | None:
    s = s.strip().lower()
    return True if s == "true" else False if s == "false" else None


def _as_tau(r: dict[str, str]) -> float:
    value = float(r["value"])
    return value if r["metric"] == "acceptance_length" else 1.0 + value * float(r["depth"])


@cache
def all_rows(path: Path = PUBLISHED) -> tuple[PublishedRow, ...]:
    """Every published τ row of a method the simulator knows, with a stated depth (any family)."""
    p = params.load()
    out = []
    with open(path, newline="") as fh:
        for line, r in enumerate(csv.DictReader(fh), start=2):
            if r["metric"] not in ("acceptance_length", "acceptance_rate") or not r["depth"].strip():
                continue
            # Per-position rates are not a cell's overall rate (they live in published_positions.csv).
            if r["metric"] == "acceptance_rate" and "position" in r["notes"].lower():
                continue
            if r["method"] not in p.methods:
                continue
            depth = int(float(r["depth"]))
            if not 1 <= depth <= 16:
                continue
            out.append(PublishedRow(line, r["source_url"], r["model_family"], r["model"], _moe(r["moe"]),
                                    r["method"], depth, WORKLOAD_MAP.get(r["workload"], r["workload"]),
                                    r["dataset"], _as_tau(r)))
    return tuple(out)


def matching_rows(exclude: str | None = None) -> tuple[PublishedRow, ...]:
    """Rows a simulated cell can be compared with: a product family, a mapped workload, depth ≤ 8."""
    families = set(costmodel.model_specs())
    return tuple(r for r in all_rows() if study(r.source_url) != exclude and r.family in families
                 and r.workload in WORKLOADS and r.depth <= MAX_DEPTH)


@cache
def position_curves(path: Path = POSITIONS) -> tuple[tuple[str, str, str, np.ndarray, np.ndarray], ...]:
    """(source, method, curve key, positions, conditional p_i) per published per-position curve."""
    groups: dict[tuple, list[tuple[int, float]]] = defaultdict(list)
    kinds = {}
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            key = (r["source_url"], r["method"], r["model"], r["dataset"])
            groups[key].append((int(r["position"]), float(r["value"])))
            kinds[key] = r["kind"]
    out = []
    for key, pts in groups.items():
        pts.sort()
        pos = np.array([q for q, _ in pts])
        val = np.array([v for _, v in pts])
        if kinds[key] == "cumulative":  # conditional p_i = r_i / r_{i−1}, only where consecutive
            ok = np.diff(pos) == 1
            cond = val[1:][ok] / val[:-1][ok]
            pos = np.concatenate([[pos[0]], pos[1:][ok]])
            cond = np.concatenate([[val[0]] if pos[0] == 1 else [], cond])
            pos = pos if pos[0] == 1 else pos[1:]
        else:
            cond = val
        out.append((key[0], key[1], f"{key[2]} / {key[3]}", pos.astype(float), cond))
    return tuple(out)


@cache
def _tau_table() -> np.ndarray:
    """E(k) for every (α, decay, k): shape (len(ALPHA_GRID), len(DECAY_GRID), 17)."""
    i = np.arange(1, 17)
    p = np.clip(ALPHA_GRID[:, None, None] * DECAY_GRID[None, :, None] ** (i - 1)[None, None, :], 0.0, 0.98)
    cum = np.cumsum(np.cumprod(p, axis=2), axis=2)
    return np.concatenate([np.ones((*p.shape[:2], 1)), 1.0 + cum], axis=2)


def _depth_series(method: str, exclude: str | None) -> list[list[PublishedRow]]:
    groups: dict[tuple, list[PublishedRow]] = defaultdict(list)
    for r in all_rows():
        if r.method == method and study(r.source_url) != exclude:
            groups[(r.source_url, r.model, r.dataset, r.workload)].append(r)
    return [g for g in groups.values() if len({r.depth for r in g}) >= 2]


def _series_sse(series: list[PublishedRow]) -> np.ndarray:
    """Per decay on the grid: the least squared log-τ error over α."""
    table = _tau_table()
    k = np.array([r.depth for r in series])
    tau = np.log(np.array([r.value for r in series]))
    pred = np.log(table[:, :, k])  # (α, d, rows)
    return ((pred - tau[None, None, :]) ** 2).sum(axis=2).min(axis=0)


def _curve_sse(pos: np.ndarray, cond: np.ndarray) -> np.ndarray:
    y = np.log(np.clip(cond, 1e-3, 1.0))
    x = pos - 1.0
    logd = np.log(DECAY_GRID)[:, None]
    resid = y[None, :] - x[None, :] * logd
    intercept = resid.mean(axis=1, keepdims=True)  # best log α per decay
    return ((resid - intercept) ** 2).sum(axis=1)


@dataclass(frozen=True, slots=True)
class DecayFit:
    value: float
    low: float
    high: float
    kind: str  # fitted | prior
    curves: tuple[str, ...] = ()  # sources of the curves it was fitted on


@cache
def decay_fit(method: str, exclude: str | None = None) -> DecayFit:
    p = params.load()
    prior = params.priors()[f"methods.{method}.decay"]
    sse_parts, sources, points = [], [], 0
    for s in _depth_series(method, exclude):
        sse_parts.append(_series_sse(s))
        sources.append(s[0].source_url)
        points += len({r.depth for r in s})
    for src, m, _key, pos, cond in position_curves():
        if m == method and study(src) != exclude and len(pos) >= 2:
            sse_parts.append(_curve_sse(pos, cond))
            sources.append(src)
            points += len(pos)
    if points < MIN_SHAPE_POINTS:  # two points fit any decay exactly: the shape is not identified
        return DecayFit(p.methods[method].decay, prior.low or prior.value, prior.high or prior.value, "prior")
    total = np.sum(sse_parts, axis=0)
    best = float(DECAY_GRID[int(np.argmin(total))])
    each = [float(DECAY_GRID[int(np.argmin(s))]) for s in sse_parts]
    lo, hi = (min([*each, best]), max([*each, best])) if len(each) >= 2 else (prior.low, prior.high)
    return DecayFit(best, float(lo), float(hi), "fitted", tuple(sorted(set(sources))))


def decay_for(method: str, exclude: str | None = None) -> float:
    return decay_fit(method, exclude).value


@dataclass(slots=True)
class AlphaFit:
    """The level tables of one fit (all sources, or all but ``exclude``)."""

    groups: dict[tuple[str, str, str, bool | None], list[tuple[float, PublishedRow]]] = field(default_factory=dict)
    pools: dict[tuple[str, str], float] = field(default_factory=dict)
    pool_rows: dict[tuple[str, str], list[PublishedRow]] = field(default_factory=dict)
    ratios: dict[tuple[str, bool | None], float] = field(default_factory=dict)
    ratio_groups: dict[tuple[str, bool | None], list[tuple[str, str]]] = field(default_factory=dict)


@cache
def alpha_fit(exclude: str | None = None) -> AlphaFit:
    fit = AlphaFit()
    by_pool: dict[tuple[str, str], dict[tuple[str, str], list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in all_rows():
        if study(r.source_url) == exclude or r.workload not in WORKLOADS or r.depth > MAX_DEPTH:
            continue
        a = acceptance.solve_alpha(r.value, r.depth, decay_for(r.method, exclude))
        fit.groups.setdefault((r.method, r.family, r.workload, r.moe), []).append((a, r))
        by_pool[(r.method, r.workload)][(r.source_url, r.model)].append(a)
        fit.pool_rows.setdefault((r.method, r.workload), []).append(r)
    for key, per_model in by_pool.items():
        fit.pools[key] = float(np.mean([median(v) for v in per_model.values()]))
    logs: dict[tuple[str, bool | None], list[float]] = defaultdict(list)
    for (m, fam, w, moe), rows in fit.groups.items():
        if moe is None:
            continue
        logs[(fam, moe)].append(float(np.log(median(a for a, _ in rows) / fit.pools[(m, w)])))
        fit.ratio_groups.setdefault((fam, moe), []).append((m, w))
    fit.ratios = {k: float(np.exp(np.mean(v))) for k, v in logs.items()}
    return fit


def family_moe(family: str) -> bool | None:
    spec = costmodel.model_specs().get(family)
    return spec.moe if spec else None


@dataclass(frozen=True, slots=True)
class AlphaSource:
    """Where a cell's α came from (the provenance of its acceptance)."""

    alpha: float
    kind: str  # fitted | borrowed | prior
    rows: tuple[PublishedRow, ...]  # the rows behind it (own rows, or the pool's)
    family_ratio: float
    family_ratio_kind: str  # fitted | prior


def alpha_source(method: str, family: str, workload: str, *, moe: bool | None = None,
                 exclude: str | None = None) -> AlphaSource:
    p = params.load()
    cap = p.borrowing["alpha_cap"]
    moe = family_moe(family) if moe is None else moe
    fit = alpha_fit(exclude)
    own = fit.groups.get((method, family, workload, moe)) if moe is not None else None
    ratio = fit.ratios.get((family, moe))
    ratio_kind = "fitted" if ratio is not None else "prior"
    ratio = ratio if ratio is not None else p.borrowing["family_ratio_default"]
    if own:
        return AlphaSource(float(median(a for a, _ in own)), "fitted", tuple(r for _, r in own), ratio, ratio_kind)
    pool = fit.pools.get((method, workload))
    if pool is not None:
        return AlphaSource(min(cap, pool * ratio), "borrowed", tuple(fit.pool_rows[(method, workload)]), ratio,
                           ratio_kind)
    mp = p.methods[method]
    prior = mp.alpha_prior.get(workload, float(np.mean(list(mp.alpha_prior.values()))))
    return AlphaSource(min(cap, prior * ratio), "prior", (), ratio, ratio_kind)


def alpha_for(method: str, family: str, workload: str) -> tuple[float, str]:
    """(α, 'fitted' | 'borrowed' | 'prior') for a cell."""
    s = alpha_source(method, family, workload)
    return s.alpha, s.kind


def predict_tau(method: str, family: str, workload: str, depth: int, *, moe: bool | None = None,
                exclude: str | None = None) -> float:
    a = alpha_source(method, family, workload, moe=moe, exclude=exclude).alpha
    return acceptance.expected_tokens(acceptance.positions(a, decay_for(method, exclude), depth))


def conditional_positions(method: str, family: str, workload: str, depth: int, alpha: float | None = None):
    a = alpha if alpha is not None else alpha_for(method, family, workload)[0]
    return acceptance.positions(a, decay_for(method), depth)


def measured_depths(method: str) -> tuple[int, ...]:
    """Depths at which any source measured this method's acceptance (rows or per-position curves)."""
    ds = {r.depth for r in all_rows() if r.method == method}
    for _src, m, _key, pos, _cond in position_curves():
        if m == method:
            ds |= {int(x) for x in pos}
    return tuple(sorted(ds))
