"""The benchmark's acceptance for what a segment runs: the same family, method, depth and workload.

Acceptance does not depend on load (DESIGN), so every matching cell counts: the expectation is their
mean acceptance rate, the band spans their 95 % intervals (lowest low to highest high), and the provenance
says whether they were measured (vllm/import runs) or simulated. A cell's interval is the bootstrap over its
requests; a cell measured from the /metrics counters alone (no per-request data: a server without
``--per-request-spec-decode-metrics``) has its acceptance from the counters and, as interval, the Wilson
score interval over its drafts (analysis.production.windows.wilson: each draft's accepted fraction lies in
[0, 1], so it is never narrower than independent drafts allow); a cell with neither counts as its point.
``band_source`` says which (``bootstrap``, ``counters``, ``mixed``, ``points``). GPU narrows the match
when the segment names one and the store has it; otherwise any GPU's cells are used and that is said.
"""

from __future__ import annotations

import duckdb
import numpy as np

from analysis.production import load
from analysis.production.windows import wilson


def _r(x, nd: int = 6):
    return None if x is None or not np.isfinite(x) else round(float(x), nd)


def expectation(con: duckdb.DuckDBPyConnection, family: str | None, method: str | None, depth: int | None,
                workload: str | None, gpu: str | None = None) -> dict | None:
    """{acceptance_rate, band, acceptance_length, cells, backends, matched_on} or None when nothing matches."""
    if not family or not method or depth is None or method == "none":
        return None
    cells = load.benchmark_cells(con, family, method, int(depth), workload, gpu)
    matched = ["family", "method", "depth", *(["workload"] if workload else []), *(["gpu"] if gpu else [])]
    if cells.height == 0 and gpu:
        cells = load.benchmark_cells(con, family, method, int(depth), workload, None)
        matched = [m for m in matched if m != "gpu"]
    if cells.height == 0:
        return None
    rate = cells["acceptance_rate"].to_numpy()
    los, his, kinds = [], [], set()
    for c in cells.iter_rows(named=True):
        lo, hi, kind = cell_interval(c)
        los.append(lo)
        his.append(hi)
        kinds.add(kind)
    backends = sorted(set(cells["backend"].to_list()))
    length = cells["acceptance_length"].drop_nulls().drop_nans()
    return {"acceptance_rate": _r(float(np.mean(rate))),
            "band": [_r(min(los)), _r(max(his))],
            "band_source": kinds.pop() if len(kinds) == 1 else "mixed",
            "acceptance_length": _r(float(length.mean())) if length.len() else None,
            "cells": cells.height, "backends": backends, "simulated": "sim" in backends,
            "provenance": "simulated" if backends == ["sim"] else "measured", "matched_on": matched}


def cell_interval(c: dict) -> tuple[float, float, str]:
    """One cell's 95 % acceptance-rate interval and where it came from (module doc)."""
    rate = float(c["acceptance_rate"])
    if c["rate_lo"] is not None and c["rate_hi"] is not None and np.isfinite(c["rate_lo"]) \
            and np.isfinite(c["rate_hi"]):
        return min(float(c["rate_lo"]), rate), max(float(c["rate_hi"]), rate), "bootstrap"
    drafts = c.get("drafts")
    if drafts is not None and np.isfinite(drafts) and drafts > 0:
        lo, hi = wilson(min(max(rate, 0.0), 1.0), float(drafts))
        return lo, hi, "counters"
    return rate, rate, "points"
