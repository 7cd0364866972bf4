"""Out-of-sample validation of the acceptance model: leave one source out.

For every source S with comparable rows (a method the simulator knows, a workload it models, depth 1–8),
refit everything without S — the per-method decay, the α tables, the pools and the family ratios — and
predict S's rows with the same rules a simulated cell uses (its family and MoE flag; the borrowing rules when
S was the only data). The error of a row is |predicted τ − published τ| / published τ. The table gives the
median (and the count and 90th percentile) by depth and by method × depth; tests/runner/test_validation.py
prints it and holds the median to ``TOLERANCE`` at every depth with data, and docs/simulator.md carries the
same table (``markdown_table``), kept in sync by that test.
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
    for src in sorted({r.source_url for r in evaluable_rows()}):
        for r in (x for x in evaluable_rows() if x.source_url == src):
            s = calibration.alpha_source(r.method, r.family, r.workload, moe=r.moe, exclude=src)
            tau = acceptance.expected_tokens(acceptance.positions(s.alpha, calibration.decay_for(r.method, src),
                                                                  r.depth))
            out.append(Prediction(r, tau, s.kind))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Cell:
    n: int
    median: float
    p90: float
    sources: int


def _cell(preds: list[Prediction]) -> Cell:
    e = np.array([p.error for p in preds])
    return Cell(len(preds), float(np.median(e)), float(np.percentile(e, 90)), len({p.row.source_url for p in preds}))


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
        by_src[p.row.source_url].append(p)
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
    lines.append(f"| all | {len(allp)} | {len({p.row.source_url for p in allp})} | {np.median(e):.1%} | "
                 f"{np.percentile(e, 90):.1%} | " + " | ".join("" for _ in methods) + " |")
    return "\n".join(lines)


DOC_START = "<!-- validation-table:start (generated by scripts/validation_table.py; a test keeps it in sync) -->"
DOC_END = "<!-- validation-table:end -->"


def doc_table(doc: str) -> str | None:
    """The generated table between the markers of ``doc`` (None when the markers are missing)."""
    if DOC_START not in doc or DOC_END not in doc:
        return None
    return doc.split(DOC_START, 1)[1].split(DOC_END, 1)[0].strip()


def with_table(doc: str) -> str:
    """``doc`` with the current table between its markers."""
    head, rest = doc.split(DOC_START, 1)
    tail = rest.split(DOC_END, 1)[1]
    return f"{head}{DOC_START}\n{markdown_table()}\n{DOC_END}{tail}"
