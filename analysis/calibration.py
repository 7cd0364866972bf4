"""Calibration of the acceptance model against the published measurements (data/published_results.csv,
data/published_positions.csv, and every published benchmark table in the reference shape under
data/published/<name>/{cells,positions}.csv — today vLLM's AMD post, seven models × methods × depths × four
datasets): the per-method depth shape and the per-cell acceptance level, with borrowing.

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

Every function takes ``exclude`` so the validation refits without part of the data: a study (a source URL,
see :func:`study`; leave one source out) or ``"model:<key>"`` (every row and curve of one model, from any
source, :func:`model_key`; leave one model out). No row is excluded for disagreeing with another source.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from statistics import median

import numpy as np

from analysis import acceptance, costmodel, params

PUBLISHED = costmodel.DATA / "published_results.csv"
POSITIONS = costmodel.DATA / "published_positions.csv"
# Published benchmark tables in the reference shape (one folder per publication: cells.csv with an
# acceptance_length per (model, method, depth, dataset), positions.csv with the per-position rates).
REFERENCE_DIR = costmodel.DATA / "published"
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
    file: str = "data/published_results.csv"  # the file ``line`` is in (the provenance of the row)


# Suffixes that name a checkpoint's precision or chat tuning, not a different model: the same model served in
# MXFP4 by one source and MXFP8 by another is one model when the validation leaves a model out.
_CHECKPOINT_SUFFIX = re.compile(r"-(it|instruct|chat|mxfp4|mxfp8|fp8|fp4|w4a8|w8a8|int4|int8|bf16|nvfp4)$")


def model_key(model: str) -> str:
    """One model however a source spells it: ``amd/Kimi-K2.5-W4A8`` and ``moonshotai/Kimi-K2.5`` → ``kimi-k2.5``
    (organisation, a trailing ``(+draft …)`` note and precision/chat suffixes dropped)."""
    name = re.sub(r"\s*\(.*\)\s*$", "", model.strip()).split("/")[-1].lower()
    while (m := _CHECKPOINT_SUFFIX.search(name)) is not None:
        name = name[:m.start()]
    return name


MODEL_PREFIX = "model:"


def held_out(source_url: str, model: str, exclude: str | None) -> bool:
    """Whether a row or curve of ``source_url`` about ``model`` is left out by ``exclude`` (None: nothing)."""
    if exclude is None:
        return False
    if exclude.startswith(MODEL_PREFIX):
        return model_key(model) == exclude[len(MODEL_PREFIX):]
    return study(source_url) == exclude


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
    return tuple(out) + reference_rows()


def reference_tables(root: Path = REFERENCE_DIR) -> tuple[Path, ...]:
    """The folders under data/published/ that hold a benchmark table in the reference shape."""
    return tuple(sorted(d for d in root.glob("*") if (d / "cells.csv").is_file())) if root.is_dir() else ()


def _rel(path: Path) -> str:
    try:
        return str(path.relative_to(costmodel.DATA.parent))
    except ValueError:
        return str(path)


@cache
def reference_rows(root: Path = REFERENCE_DIR) -> tuple[PublishedRow, ...]:
    """Every acceptance-length cell of the reference-shape tables (one row per model, method, depth, dataset)."""
    p = params.load()
    out = []
    for folder in reference_tables(root):
        path = folder / "cells.csv"
        with open(path, newline="") as fh:
            for line, r in enumerate(csv.DictReader(fh), start=2):
                if r["method"] not in p.methods or not r["acceptance_length"].strip() or not r["depth"].strip():
                    continue
                depth = int(float(r["depth"]))
                if not 1 <= depth <= 16:
                    continue
                out.append(PublishedRow(line, r["source_url"], r["model_family"], r["model"], _moe(r["moe"]),
                                        r["method"], depth, WORKLOAD_MAP.get(r["workload"], r["workload"]),
                                        r["dataset"], float(r["acceptance_length"]), _rel(path)))
    return tuple(out)


def matching_rows(exclude: str | None = None) -> tuple[PublishedRow, ...]:
    """Rows a simulated cell can be compared with: a product family, a mapped workload, depth ≤ 8."""
    families = set(costmodel.model_specs())
    return tuple(r for r in all_rows() if not held_out(r.source_url, r.model, exclude) and r.family in families
                 and r.workload in WORKLOADS and r.depth <= MAX_DEPTH)


@cache
def position_curves(path: Path = POSITIONS) -> tuple[tuple[str, str, str, np.ndarray, np.ndarray, str, int], ...]:
    """(source, method, curve key, positions, conditional p_i, model, depth or 0) per published curve: the
    curves of data/published_positions.csv and one per (model, method, depth, dataset) of every reference-shape
    positions.csv (its rates are cumulative: the chance the first ``position`` drafts were all accepted)."""
    groups: dict[tuple, list[tuple[int, float]]] = defaultdict(list)
    kinds, depths = {}, {}
    with open(path, newline="") as fh:
        for r in csv.DictReader(fh):
            key = (r["source_url"], r["method"], r["model"], r["dataset"])
            groups[key].append((int(r["position"]), float(r["value"])))
            kinds[key] = r["kind"]
    for folder in reference_tables():
        if not (folder / "positions.csv").is_file():
            continue
        with open(folder / "positions.csv", newline="") as fh:
            for r in csv.DictReader(fh):
                key = (r["source_url"], r["method"], r["model"], f"{r['dataset']} @ depth {r['depth']}")
                groups[key].append((int(r["position"]), float(r["acceptance_rate"])))
                kinds[key] = "cumulative"
                depths[key] = int(r["depth"])
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
        out.append((key[0], key[1], f"{key[2]} / {key[3]}", pos.astype(float), cond, key[2], depths.get(key, 0)))
    return tuple(out)


BLOCK_GRID = np.round(np.arange(0.0, 0.2001, 0.005), 4)  # the depth exponent β of p_i = α·k^(−β)·decay^(i−1)


@cache
def _log_tau_at(k: int) -> np.ndarray:
    """log E(k) at one depth for every (α, decay, β) on the grids: shape (len(ALPHA_GRID), len(DECAY_GRID),
    len(BLOCK_GRID)). Kept per depth: a fit needs only the depths its rows measured (a handful), and every
    leave-one-out fit reuses them."""
    i = np.arange(1, k + 1)
    shape = ALPHA_GRID[:, None, None] * DECAY_GRID[None, :, None] ** (i - 1)[None, None, :]  # α·decay^(i−1)
    out = np.empty((len(ALPHA_GRID), len(DECAY_GRID), len(BLOCK_GRID)))
    for j, b in enumerate(BLOCK_GRID):
        p = np.clip(shape * float(k) ** (-float(b)), 0.0, 0.98)
        # the cumulative product along the short last axis, one position at a time over the whole grid: the same
        # products in the same order as np.cumprod(p, axis=2) (bit for bit), without its per-row loop
        for n in range(1, k):
            p[:, :, n] *= p[:, :, n - 1]
        out[:, :, j] = np.log(1.0 + p.sum(axis=2))
    out.setflags(write=False)
    return out


ALPHA_BLOCK = 8  # rows of the α grid summed at a time in _series_sse_of: a block (~0.4 MB) stays in the CPU's cache


def _depth_series(method: str, exclude: str | None) -> list[list[PublishedRow]]:
    groups: dict[tuple, list[PublishedRow]] = defaultdict(list)
    for r in all_rows():
        if r.method == method and not held_out(r.source_url, r.model, exclude):
            groups[(r.source_url, r.model, r.dataset, r.workload)].append(r)
    return [g for g in groups.values() if len({r.depth for r in g}) >= 2]


def _series_sse(series: list[PublishedRow]) -> np.ndarray:
    """Per (decay, β) on the grids: the least squared log-τ error over α. Shape (len(DECAY_GRID), len(BLOCK_GRID))."""
    return _series_sse_of(tuple((int(r.depth), float(r.value)) for r in series))


@cache
def _series_sse_of(points: tuple[tuple[int, float], ...]) -> np.ndarray:
    # Kept per series: a leave-one-out fit (one per source or model left out) sees the same series again and
    # again, and each costs a pass over the whole (α, decay, β) grid; the result is read-only.
    # Σ over points of (log E − log value)², then the least over α: block by block of α rows, so the running sums
    # stay in cache (every fit of a winners answer spends most of its time here). The same operations per grid point
    # as over the whole grid at once, and a minimum is exact: bit for bit the unblocked result.
    tables = [(_log_tau_at(k), np.log(value)) for k, value in points]
    out = np.full((len(DECAY_GRID), len(BLOCK_GRID)), np.inf)
    for a0 in range(0, len(ALPHA_GRID), ALPHA_BLOCK):
        rows = slice(a0, a0 + ALPHA_BLOCK)
        sse = np.zeros((len(ALPHA_GRID[rows]), len(DECAY_GRID), len(BLOCK_GRID)))
        tmp = np.empty_like(sse)
        for table, log_value in tables:
            np.subtract(table[rows], log_value, out=tmp)
            np.square(tmp, out=tmp)
            sse += tmp
        np.minimum(out, sse.min(axis=0), out=out)
    out.setflags(write=False)
    return out


def _curve_sse(pos: np.ndarray, cond: np.ndarray, depth: np.ndarray | None = None) -> np.ndarray:
    """Per (decay, β): squared log-conditional-rate error with one free α for all the points given (curves of
    one model, method and dataset at the depths ``depth``; without depths β changes nothing)."""
    y = np.log(np.clip(cond, 1e-3, 1.0))
    x = pos - 1.0
    logk = np.log(depth) if depth is not None else np.zeros_like(x)
    logd = np.log(DECAY_GRID)[:, None, None]
    resid = (y[None, None, :] - x[None, None, :] * logd + BLOCK_GRID[None, :, None] * logk[None, None, :])
    intercept = resid.mean(axis=2, keepdims=True)  # best log α per (decay, β)
    return ((resid - intercept) ** 2).sum(axis=2)


@dataclass(frozen=True, slots=True)
class DecayFit:
    value: float
    low: float
    high: float
    kind: str  # fitted | prior
    curves: tuple[str, ...] = ()  # sources of the curves it was fitted on
    block: float = 0.0  # the depth exponent β (0: a longer draft does not lower the earlier positions)
    block_kind: str = "prior"  # fitted (curves at ≥ 2 depths of one model) | prior (0)


@cache
def decay_fit(method: str, exclude: str | None = None) -> DecayFit:
    """The method's shape: decay and the depth exponent β, least squares over every curve on the grids."""
    p = params.load()
    prior = params.priors()[f"methods.{method}.decay"]
    sse_parts, sources, points, multi_depth = [], [], 0, False
    for s in _depth_series(method, exclude):
        sse_parts.append(_series_sse(s))
        sources.append(s[0].source_url)
        points += len({r.depth for r in s})
        multi_depth = True
    # A reference table's curves of one (model, method, dataset) at several depths share one α, as the
    # simulator's cells do: fitted each with its own α, a block drafter's curves would let α absorb what a
    # longer block costs (β) and say nothing about it.
    shared: dict[tuple, list[tuple[np.ndarray, np.ndarray, int]]] = defaultdict(list)
    for src, m, key, pos, cond, model, depth in position_curves():
        if m == method and not held_out(src, model, exclude) and len(pos) >= 2:
            shared[(src, key.split(" @ depth ")[0])].append((pos, cond, depth))
    for (src, _key), curves in shared.items():
        pos = np.concatenate([c[0] for c in curves])
        depths = np.concatenate([np.full(len(c[0]), max(c[2], 1), dtype=float) for c in curves])
        sse_parts.append(_curve_sse(pos, np.concatenate([c[1] for c in curves]),
                                    depths if all(c[2] for c in curves) else None))
        sources.append(src)
        points += len(pos)
        multi_depth |= len({c[2] for c in curves}) >= 2
    if points < MIN_SHAPE_POINTS:  # two points fit any decay exactly: the shape is not identified
        return DecayFit(p.methods[method].decay, prior.low or prior.value, prior.high or prior.value, "prior")
    total = np.sum(sse_parts, axis=0)
    if not multi_depth:  # β is identified only by one model's curves at two depths or more: 0 (its prior)
        total = total[:, :1]
    di, bi = np.unravel_index(int(np.argmin(total)), total.shape)
    best, block = float(DECAY_GRID[di]), float(BLOCK_GRID[bi])
    each = [float(DECAY_GRID[np.unravel_index(int(np.argmin(s)), s.shape)[0]]) for s in sse_parts]
    lo, hi = (min([*each, best]), max([*each, best])) if len(each) >= 2 else (prior.low, prior.high)
    return DecayFit(best, float(lo), float(hi), "fitted", tuple(sorted(set(sources))), block,
                    "fitted" if multi_depth else "prior")


def decay_for(method: str, exclude: str | None = None) -> float:
    return decay_fit(method, exclude).value


def block_for(method: str, exclude: str | None = None) -> float:
    """The method's depth exponent β (0 for a method whose curves never show one model at two depths)."""
    return decay_fit(method, exclude).block if method in params.load().methods else 0.0


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
        if held_out(r.source_url, r.model, exclude) or r.workload not in WORKLOADS or r.depth > MAX_DEPTH:
            continue
        a = acceptance.solve_alpha(r.value, r.depth, decay_for(r.method, exclude), block_for(r.method, exclude))
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
    how: str = ""  # the rule that gave it, in words (which table, which models, which ratios)


# ---- tier 1: the reference-shape benchmark tables ----------------------------------------------------------
#
# The published sources disagree by a factor of up to ~2 in τ at the same method and depth (leave one source
# out, docs/simulator.md): a source's harness, prompts and drafter checkpoints set its level. The reference
# tables measure many models with one harness on the product's engine and GPUs (vLLM on MI300X/MI355X), so a
# cell they reach takes its level from them alone — its own model's rows, else its family's other models,
# else the table's pool × the family's ratio — and the other sources only fill what they do not reach (a
# workload they did not run, a method they did not test).


def _ref_rows(exclude: str | None) -> tuple[PublishedRow, ...]:
    return tuple(r for r in reference_rows() if not held_out(r.source_url, r.model, exclude)
                 and r.workload in WORKLOADS and r.depth <= MAX_DEPTH)


@dataclass(slots=True)
class RefFit:
    """Tier-1 level tables: median α per (method, family, workload, MoE) and per model, pools, family ratios."""

    groups: dict[tuple[str, str, str, bool | None], list[tuple[float, PublishedRow]]] = field(default_factory=dict)
    pools: dict[tuple[str, str], float] = field(default_factory=dict)
    pool_rows: dict[tuple[str, str], list[PublishedRow]] = field(default_factory=dict)
    ratios: dict[tuple[str, bool | None], float] = field(default_factory=dict)  # α ratio per (family, MoE)
    family_ratios: dict[str, float] = field(default_factory=dict)  # α ratio per family (any MoE flag)


@cache
def ref_fit(exclude: str | None = None) -> RefFit:
    fit = RefFit()
    per_model: dict[tuple[str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in _ref_rows(exclude):
        a = acceptance.solve_alpha(r.value, r.depth, decay_for(r.method, exclude), block_for(r.method, exclude))
        fit.groups.setdefault((r.method, r.family, r.workload, r.moe), []).append((a, r))
        per_model[(r.method, r.workload)][model_key(r.model)].append(a)
        fit.pool_rows.setdefault((r.method, r.workload), []).append(r)
    for key, models in per_model.items():  # one vote per model, however many depths and datasets it ran
        fit.pools[key] = float(np.mean([median(v) for v in models.values()]))
    # A family's ratio is the geometric mean of its groups' α over the pools' (as in the all-sources rules below;
    # a shift in logit α was tried: near-saturated MTP groups (α ≈ 0.96) then carry large shifts into the other
    # methods, and leave one model out got worse at depths 6–15).
    logs: dict[tuple[str, bool | None], list[float]] = defaultdict(list)
    fam_logs: dict[str, list[float]] = defaultdict(list)
    for (m, fam, w, moe), rows in fit.groups.items():
        x = float(np.log(median(a for a, _ in rows) / fit.pools[(m, w)]))
        logs[(fam, moe)].append(x)
        fam_logs[fam].append(x)
    fit.ratios = {k: float(np.exp(np.mean(v))) for k, v in logs.items()}
    fit.family_ratios = {k: float(np.exp(np.mean(v))) for k, v in fam_logs.items()}
    return fit


def _short(model: str) -> str:
    return model.split("/")[-1]


def _ref_level(method: str, family: str, workload: str, moe: bool | None,
               exclude: str | None) -> AlphaSource | None:
    """The tier-1 level of a (method, workload) the reference tables ran, or None."""
    p = params.load()
    cap = p.borrowing["alpha_cap"]
    fit = ref_fit(exclude)
    if (method, workload) not in fit.pools:
        return None
    ratio, ratio_kind = fit.ratios.get((family, moe)), "fitted"
    if ratio is None:  # no model of this family and MoE flag: its family's other models, else none
        ratio, ratio_kind = fit.family_ratios.get(family), "family"
    if ratio is None:
        ratio, ratio_kind = p.borrowing["family_ratio_default"], "prior"
    own = fit.groups.get((method, family, workload, moe))
    if own:
        models = ", ".join(sorted({_short(r.model) for _, r in own}))
        return AlphaSource(float(median(a for a, _ in own)), "fitted", tuple(r for _, r in own), ratio, ratio_kind,
                           f"{own[0][1].file}: {len(own)} rows of {models}")
    sib = [x for (m, fam, w, _moe), rows in fit.groups.items() if (m, fam, w) == (method, family, workload)
           for x in rows]
    if sib:
        models = ", ".join(sorted({_short(r.model) for _, r in sib}))
        return AlphaSource(float(median(a for a, _ in sib)), "borrowed", tuple(r for _, r in sib), ratio, ratio_kind,
                           f"{sib[0][1].file}: the family's other model(s) {models} ({len(sib)} rows)")
    rows = tuple(fit.pool_rows[(method, workload)])
    return AlphaSource(min(cap, fit.pools[(method, workload)] * ratio), "borrowed", rows, ratio, ratio_kind,
                       f"{rows[0].file}: {method} on {workload} over {len({model_key(r.model) for r in rows})} "
                       f"models × {family} ratio {ratio:.2f} ({ratio_kind})")


@cache  # a pure function of the cached published rows and priors, as ref_fit; asked once per cell otherwise
def workload_ratio(method: str, workload: str, base: str, exclude: str | None = None) -> tuple[float, str]:
    """α on ``workload`` / α on ``base``, from sources that measured both with the same model (a within-source
    contrast: a ratio of two pools would mix the sources' levels into it). The method's own pairs, else every
    method's, else the TOML priors' ratio. Returns (ratio, how)."""
    def pairs(methods: set[str]) -> list[float]:
        by: dict[tuple, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
        for r in all_rows():
            if (r.method in methods and r.workload in (workload, base) and r.depth <= MAX_DEPTH
                    and not held_out(r.source_url, r.model, exclude)):
                a = acceptance.solve_alpha(r.value, r.depth, decay_for(r.method, exclude), block_for(r.method, exclude))
                by[(r.source_url, r.model, r.method)][r.workload].append(a)
        return [float(np.log(median(v[workload]) / median(v[base]))) for v in by.values() if len(v) == 2]

    own = pairs({method})
    if own:
        ratio = float(np.exp(np.mean(own)))
        return ratio, f"{workload}/{base} {ratio:.2f} ({len(own)} within-source pairs)"
    every = pairs(set(params.load().methods))
    if every:
        return (float(np.exp(np.mean(every))),
                f"{workload}/{base} {np.exp(np.mean(every)):.2f} ({len(every)} within-source pairs, all methods)")
    pr = params.load().methods[method].alpha_prior
    return pr[workload] / pr[base], f"{workload}/{base} {pr[workload] / pr[base]:.2f} (priors)"


def _reference_source(method: str, family: str, workload: str, moe: bool | None,
                      exclude: str | None) -> AlphaSource | None:
    """Tier 1: the cell's level from the reference tables; a workload they did not run (chat) takes their level on
    the workloads they did run × the within-source workload ratio (geometric mean over those workloads)."""
    direct = _ref_level(method, family, workload, moe, exclude)
    if direct is not None:
        return direct
    bases = [w for w in WORKLOADS if w != workload and (method, w) in ref_fit(exclude).pools]
    if not bases:
        return None
    logs, rows, hows, first = [], [], [], None
    for b in bases:
        src = _ref_level(method, family, b, moe, exclude)
        ratio, how = workload_ratio(method, workload, b, exclude)
        logs.append(np.log(src.alpha * ratio))
        rows += src.rows
        hows.append(f"{b} level ({src.how}) × {how}")
        first = first or src
    cap = params.load().borrowing["alpha_cap"]
    return AlphaSource(min(cap, float(np.exp(np.mean(logs)))), "borrowed", tuple(rows), first.family_ratio,
                       first.family_ratio_kind, "; ".join(hows))


def alpha_source(method: str, family: str, workload: str, *, moe: bool | None = None,
                 exclude: str | None = None) -> AlphaSource:
    p = params.load()
    cap = p.borrowing["alpha_cap"]
    moe = family_moe(family) if moe is None else moe
    ref = _reference_source(method, family, workload, moe, exclude)
    if ref is not None:
        return ref
    fit = alpha_fit(exclude)
    own = fit.groups.get((method, family, workload, moe)) if moe is not None else None
    ratio = fit.ratios.get((family, moe))
    ratio_kind = "fitted" if ratio is not None else "prior"
    ratio = ratio if ratio is not None else p.borrowing["family_ratio_default"]
    if own:
        return AlphaSource(float(median(a for a, _ in own)), "fitted", tuple(r for _, r in own), ratio, ratio_kind,
                           f"{len(own)} published rows of {method} on {family} ({workload})")
    pool = fit.pools.get((method, workload))
    if pool is not None:
        return AlphaSource(min(cap, pool * ratio), "borrowed", tuple(fit.pool_rows[(method, workload)]), ratio,
                           ratio_kind,
                           f"{method} on {workload}, every source × {family} ratio {ratio:.2f} ({ratio_kind})")
    mp = p.methods[method]
    prior = mp.alpha_prior.get(workload, float(np.mean(list(mp.alpha_prior.values()))))
    return AlphaSource(min(cap, prior * ratio), "prior", (), ratio, ratio_kind, "the TOML prior × the family ratio")


def alpha_for(method: str, family: str, workload: str) -> tuple[float, str]:
    """(α, 'fitted' | 'borrowed' | 'prior') for a cell."""
    s = alpha_source(method, family, workload)
    return s.alpha, s.kind


def predict_tau(method: str, family: str, workload: str, depth: int, *, moe: bool | None = None,
                exclude: str | None = None) -> float:
    a = alpha_source(method, family, workload, moe=moe, exclude=exclude).alpha
    return acceptance.expected_tokens(acceptance.positions(a, decay_for(method, exclude), depth,
                                                           block=block_for(method, exclude)))


def conditional_positions(method: str, family: str, workload: str, depth: int, alpha: float | None = None):
    a = alpha if alpha is not None else alpha_for(method, family, workload)[0]
    return acceptance.positions(a, decay_for(method), depth, block=block_for(method))


def measured_depths(method: str) -> tuple[int, ...]:
    """Depths at which any source measured this method's acceptance (rows or per-position curves)."""
    ds = {r.depth for r in all_rows() if r.method == method}
    for _src, m, _key, pos, _cond, _model, _depth in position_curves():
        if m == method:
            ds |= {int(x) for x in pos}
    return tuple(sorted(ds))
