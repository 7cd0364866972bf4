"""Out-of-sample validation of the acceptance model: leave one source out.

For every source S with comparable rows (a method the simulator knows, a workload it models, depth 1–8;
a source that only re-reports another is one study with it, :data:`calibration.SAME_STUDY`), refit everything
without S — the per-method decay, the α tables, the pools and the family ratios — and
predict S's rows with the same rules a simulated cell uses (its family and MoE flag; the borrowing rules when
S was the only data). The error of a row is |predicted τ − published τ| / published τ. The table gives the
median (and the count and 90th percentile) by depth and by method × depth; tests/runner/test_validation.py
prints it and holds the median to ``TOLERANCE`` at every depth with data, and docs/simulator.md carries the
same table (``markdown_table``), kept in sync by that test.

:func:`level_diagnosis` splits the error into level and shape: per left-out source, the one logit shift of
α that best fits the source's own rows (a diagnostic that looks at the held-out figures on purpose, never
used by the model) and the error left after it. What a single number per source removes is the source's
level; what is left is the model's shape across depth and workload.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from functools import cache

import numpy as np

from analysis import acceptance, calibration

TOLERANCE = 0.15
DEPTHS = tuple(range(1, 9))


@dataclass(frozen=True, slots=True)
class Prediction:
    row: calibration.PublishedRow
    predicted: float
    kind: str  # how the left-out row's cell got α without its own source: fitted | borrowed | prior
    alpha: float  # the α the prediction used
    decay: float  # the decay the prediction used
    block: float = 0.0  # the depth exponent β the prediction used

    @property
    def error(self) -> float:
        return abs(self.predicted - self.row.value) / self.row.value

    @property
    def log_ratio(self) -> float:
        """log(published / predicted): the residual the model-uncertainty draws resample."""
        return float(np.log(self.row.value / self.predicted))


def evaluable_rows() -> tuple[calibration.PublishedRow, ...]:
    return tuple(r for r in calibration.all_rows()
                 if r.workload in calibration.WORKLOADS and r.depth <= calibration.MAX_DEPTH)


@cache
def leave_one_source_out() -> tuple[Prediction, ...]:
    out = []
    for src in sorted({calibration.study(r.source_url) for r in evaluable_rows()}):
        for r in (x for x in evaluable_rows() if calibration.study(x.source_url) == src):
            s = calibration.alpha_source(r.method, r.family, r.workload, moe=r.moe, exclude=src)
            decay, block = calibration.decay_for(r.method, src), calibration.block_for(r.method, src)
            tau = acceptance.expected_tokens(acceptance.positions(s.alpha, decay, r.depth, block=block))
            out.append(Prediction(r, tau, s.kind, s.alpha, decay, block))
    return tuple(out)


def _studies(preds) -> int:
    return len({calibration.study(p.row.source_url) for p in preds})


@dataclass(frozen=True, slots=True)
class Cell:
    n: int
    median: float
    p90: float
    sources: int


def _cell(preds: list[Prediction]) -> Cell:
    e = np.array([p.error for p in preds])
    return Cell(len(preds), float(np.median(e)), float(np.percentile(e, 90)), _studies(preds))


def by_depth() -> dict[int, Cell]:
    groups: dict[int, list[Prediction]] = defaultdict(list)
    for p in leave_one_source_out():
        groups[p.row.depth].append(p)
    return {d: _cell(groups[d]) for d in DEPTHS if groups.get(d)}


def by_method_depth() -> dict[tuple[str, int], Cell]:
    groups: dict[tuple[str, int], list[Prediction]] = defaultdict(list)
    for p in leave_one_source_out():
        groups[(p.row.method, p.row.depth)].append(p)
    return {k: _cell(v) for k, v in sorted(groups.items())}


def residuals_by_method() -> dict[str, np.ndarray]:
    """Out-of-sample log(published/predicted) τ residuals per method (all methods pooled under ``*``)."""
    groups: dict[str, list[float]] = defaultdict(list)
    for p in leave_one_source_out():
        groups[p.row.method].append(p.log_ratio)
        groups["*"].append(p.log_ratio)
    return {k: np.array(v) for k, v in groups.items()}


def residual_parts() -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The residuals split into a per-source shift (mean over the source's rows, one value per source) and
    the rows' deviations from their source's shift, per method (all pooled under ``*``)."""
    by_src: dict[str, list[Prediction]] = defaultdict(list)
    for p in leave_one_source_out():
        by_src[calibration.study(p.row.source_url)].append(p)
    shifts, dev = [], defaultdict(list)
    for preds in by_src.values():
        r = np.array([p.log_ratio for p in preds])
        shifts.append(float(r.mean()))
        for p, x in zip(preds, r - r.mean(), strict=True):
            dev[p.row.method].append(float(x))
            dev["*"].append(float(x))
    return np.array(shifts), {k: np.array(v) for k, v in dev.items()}


def markdown_table() -> str:
    """The validation table as Markdown (docs/simulator.md carries exactly this text)."""
    bd = by_depth()
    bmd = by_method_depth()
    methods = sorted({m for m, _ in bmd})
    lines = ["| depth | rows | sources | median error | 90th pct | " + " | ".join(methods) + " |",
             "|---|---|---|---|---|" + "---|" * len(methods)]
    for d in DEPTHS:
        if d not in bd:
            lines.append(f"| {d} | 0 | 0 | no data | | " + " | ".join("" for _ in methods) + " |")
            continue
        c = bd[d]
        per = [f"{bmd[(m, d)].median:.1%} (n={bmd[(m, d)].n})" if (m, d) in bmd else "" for m in methods]
        lines.append(f"| {d} | {c.n} | {c.sources} | {c.median:.1%} | {c.p90:.1%} | " + " | ".join(per) + " |")
    allp = leave_one_source_out()
    e = np.array([p.error for p in allp])
    lines.append(f"| all | {len(allp)} | {_studies(allp)} | {np.median(e):.1%} | "
                 f"{np.percentile(e, 90):.1%} | " + " | ".join("" for _ in methods) + " |")
    return "\n".join(lines)


SHIFT_GRID = np.round(np.arange(-4.0, 4.0001, 0.01), 2)  # logit shifts of α searched by the diagnosis


def _shifted_tau(p: Prediction, shifts: np.ndarray) -> np.ndarray:
    """τ of ``p``'s row with α moved by each logit shift (same decay, same depth)."""
    a = np.clip(p.alpha, 1e-4, 1 - 1e-4)
    shifted = 1.0 / (1.0 + np.exp(-(np.log(a / (1 - a)) + shifts)))
    i = np.arange(1, p.row.depth + 1)
    cond = np.clip(shifted[:, None] * float(p.row.depth) ** (-p.block) * p.decay ** (i - 1)[None, :], 0.0, 0.98)
    return 1.0 + np.cumprod(cond, axis=1).sum(axis=1)


@dataclass(frozen=True, slots=True)
class SourceLevel:
    """One left-out study: its out-of-sample error, and what is left once its level is known."""

    study: str
    n: int
    depths: tuple[int, ...]
    median_error: float
    shift: float  # the logit shift of α that best fits the study's own rows (least squares in log τ)
    median_error_after_shift: float
    errors_after_shift: tuple[tuple[Prediction, float], ...]


@cache
def level_diagnosis() -> tuple[SourceLevel, ...]:
    """Per left-out study: the error, the one level shift that fits its own rows, and the error after it."""
    by_src: dict[str, list[Prediction]] = defaultdict(list)
    for p in leave_one_source_out():
        by_src[calibration.study(p.row.source_url)].append(p)
    out = []
    for src, preds in sorted(by_src.items()):
        taus = np.array([_shifted_tau(p, SHIFT_GRID) for p in preds])  # (rows, shifts)
        pub = np.array([p.row.value for p in preds])[:, None]
        best = int(np.argmin((np.log(taus / pub) ** 2).sum(axis=0)))
        after = np.abs(taus[:, best] - pub[:, 0]) / pub[:, 0]
        out.append(SourceLevel(src, len(preds), tuple(sorted({p.row.depth for p in preds})),
                               float(np.median([p.error for p in preds])), float(SHIFT_GRID[best]),
                               float(np.median(after)), tuple(zip(preds, after.tolist(), strict=True))))
    return tuple(out)


def after_shift_by_depth() -> dict[int, float]:
    """Median error by depth once every left-out study's level is known (the shape's share of the error)."""
    groups: dict[int, list[float]] = defaultdict(list)
    for s in level_diagnosis():
        for p, e in s.errors_after_shift:
            groups[p.row.depth].append(e)
    return {d: float(np.median(groups[d])) for d in DEPTHS if groups.get(d)}


def diagnosis_table() -> str:
    """Markdown: by depth, the out-of-sample median and the median with each study's level known; then per
    study its rows, error, fitted shift and error after it."""
    bd, after = by_depth(), after_shift_by_depth()
    lines = ["| depth | rows | median error (out of sample) | median error, each source's level known |",
             "|---|---|---|---|"]
    lines += [f"| {d} | {bd[d].n} | {bd[d].median:.1%} | {after[d]:.1%} |" for d in DEPTHS if d in bd]
    shifts = np.array([s.shift for s in level_diagnosis()])
    lines += ["", f"Spread of the studies' level shifts: sd {shifts.std(ddof=1):.2f} in logit α "
              f"(range {shifts.min():+.2f} … {shifts.max():+.2f}).", "",
              "| left-out source | rows | depths | median error | level shift (logit α) | median error after it |",
              "|---|---|---|---|---|---|"]
    for s in sorted(level_diagnosis(), key=lambda s: -s.n):
        lines.append(f"| {s.study} | {s.n} | {', '.join(map(str, s.depths))} | {s.median_error:.1%} | "
                     f"{s.shift:+.2f} | {s.median_error_after_shift:.1%} |")
    return "\n".join(lines)


DOC_START = "<!-- validation-table:start (generated by scripts/validation_table.py; a test keeps it in sync) -->"
DOC_END = "<!-- validation-table:end -->"


DIAG_START = "<!-- validation-diagnosis:start (generated by scripts/validation_table.py; a test keeps it in sync) -->"
DIAG_END = "<!-- validation-diagnosis:end -->"


def doc_table(doc: str, start: str = DOC_START, end: str = DOC_END) -> str | None:
    """The generated text between the markers of ``doc`` (None when the markers are missing)."""
    if start not in doc or end not in doc:
        return None
    return doc.split(start, 1)[1].split(end, 1)[0].strip()


def _between(doc: str, start: str, end: str, text: str) -> str:
    head, rest = doc.split(start, 1)
    tail = rest.split(end, 1)[1]
    return f"{head}{start}\n{text}\n{end}{tail}"


def replace_between(doc: str, start: str, end: str, text: str) -> str:
    """``doc`` with ``text`` between the markers ``start`` and ``end`` (both must be present)."""
    return _between(doc, start, end, text)


def with_table(doc: str) -> str:
    """``doc`` with the current table (and diagnosis, where it has the markers) between their markers."""
    doc = _between(doc, DOC_START, DOC_END, markdown_table())
    doc = _between(doc, DIAG_START, DIAG_END, diagnosis_table()) if DIAG_START in doc else doc
    return _between(doc, LOMO_START, LOMO_END, lomo_table()) if LOMO_START in doc else doc


# ---- leave one model out, within one reference-shape benchmark table --------------------------------------

LOMO_TOLERANCE = 0.10


def reference_rows() -> tuple[calibration.PublishedRow, ...]:
    """The reference tables' rows the LOMO validation predicts: a workload the simulator models, any depth."""
    return tuple(r for r in calibration.reference_rows() if r.workload in calibration.WORKLOADS)


def _predict(r: calibration.PublishedRow, exclude: str) -> Prediction:
    s = calibration.alpha_source(r.method, r.family, r.workload, moe=r.moe, exclude=exclude)
    decay, block = calibration.decay_for(r.method, exclude), calibration.block_for(r.method, exclude)
    tau = acceptance.expected_tokens(acceptance.positions(s.alpha, decay, r.depth, block=block))
    return Prediction(r, tau, s.kind, s.alpha, decay, block)


@cache
def leave_one_model_out() -> tuple[Prediction, ...]:
    """For each model of the reference tables: refit without every row and curve of that model (from any source,
    :func:`calibration.model_key`), predict its acceptance length at each (method, dataset, depth) it measured."""
    out = []
    for key in sorted({calibration.model_key(r.model) for r in reference_rows()}):
        ex = calibration.MODEL_PREFIX + key
        out += [_predict(r, ex) for r in reference_rows() if calibration.model_key(r.model) == key]
    return tuple(out)


def _series_key(r: calibration.PublishedRow) -> tuple[str, str, str]:
    return (calibration.model_key(r.model), r.method, r.dataset)


@cache
def lomo_anchored() -> dict[calibration.PublishedRow, float | None]:
    """Per LOMO row: the error left once the series' level is known — α set so the prediction equals the
    published τ at the series' shallowest depth (depth 1 for MTP/EAGLE-3, 3 for DFlash/DSpark), same decay and
    depth exponent; None for the anchor row itself. A diagnostic that looks at the held-out figures on purpose:
    what remains is the depth shape's error, what it removes is the level's."""
    series: dict[tuple, list[Prediction]] = defaultdict(list)
    for p in leave_one_model_out():
        series[_series_key(p.row)].append(p)
    out: dict[calibration.PublishedRow, float | None] = {}
    for preds in series.values():
        anchor = min(preds, key=lambda p: p.row.depth)
        a = acceptance.solve_alpha(anchor.row.value, anchor.row.depth, anchor.decay, anchor.block)
        for p in preds:
            if p is anchor:
                out[p.row] = None
                continue
            tau = acceptance.expected_tokens(acceptance.positions(a, p.decay, p.row.depth, block=p.block))
            out[p.row] = abs(tau - p.row.value) / p.row.value
    return out


@dataclass(frozen=True, slots=True)
class LomoCell:
    n: int
    models: int
    median: float
    worst: float
    median_anchored: float | None  # median error once the series' level is known (None: only anchor rows)
    worst_anchored: float | None


def _lomo_cell(preds: list[Prediction]) -> LomoCell:
    e = np.array([p.error for p in preds])
    anch = lomo_anchored()
    after = np.array([x for p in preds if (x := anch[p.row]) is not None])
    return LomoCell(len(preds), len({calibration.model_key(p.row.model) for p in preds}), float(np.median(e)),
                    float(e.max()), float(np.median(after)) if after.size else None,
                    float(after.max()) if after.size else None)


def lomo_by_depth() -> dict[int, LomoCell]:
    groups: dict[int, list[Prediction]] = defaultdict(list)
    for p in leave_one_model_out():
        groups[p.row.depth].append(p)
    return {d: _lomo_cell(v) for d, v in sorted(groups.items())}


def lomo_by_model_method() -> dict[tuple[str, str], tuple[LomoCell, str, str]]:
    """(model, method) → (errors, how the level was obtained without the model, its kind)."""
    groups: dict[tuple[str, str], list[Prediction]] = defaultdict(list)
    for p in leave_one_model_out():
        groups[(p.row.model, p.row.method)].append(p)
    out = {}
    for (model, method), preds in sorted(groups.items()):
        r = preds[0].row
        src = calibration.alpha_source(method, r.family, r.workload, moe=r.moe,
                                       exclude=calibration.MODEL_PREFIX + calibration.model_key(model))
        out[(model, method)] = (_lomo_cell(preds), src.how, preds[0].kind)
    return out


def _pct(x: float | None) -> str:
    return "—" if x is None else f"{x:.1%}"


def lomo_table() -> str:
    """Markdown: the leave-one-model-out errors by depth, then by model × method (docs/simulator.md carries it)."""
    lines = ["| depth | rows | models | median error | worst | median, level known | worst, level known |",
             "|---|---|---|---|---|---|---|"]
    for d, c in lomo_by_depth().items():
        lines.append(f"| {d} | {c.n} | {c.models} | {c.median:.1%} | {c.worst:.1%} | {_pct(c.median_anchored)} | "
                     f"{_pct(c.worst_anchored)} |")
    allp = list(leave_one_model_out())
    c = _lomo_cell(allp)
    lines.append(f"| all | {c.n} | {c.models} | {c.median:.1%} | {c.worst:.1%} | {_pct(c.median_anchored)} | "
                 f"{_pct(c.worst_anchored)} |")
    lines += ["", "| left-out model | method | rows | depths | median error | worst | median, level known | "
              "level without the model |", "|---|---|---|---|---|---|---|---|"]
    depths: dict[tuple[str, str], set[int]] = defaultdict(set)
    for p in allp:
        depths[(p.row.model, p.row.method)].add(p.row.depth)
    for (model, method), (c, how, kind) in lomo_by_model_method().items():
        lines.append(f"| {model} | {method} | {c.n} | {', '.join(map(str, sorted(depths[(model, method)])))} | "
                     f"{c.median:.1%} | {c.worst:.1%} | {_pct(c.median_anchored)} | {kind}: {how} |")
    return "\n".join(lines)


LOMO_START = "<!-- lomo-table:start (generated by scripts/validation_table.py; a test keeps it in sync) -->"
LOMO_END = "<!-- lomo-table:end -->"
