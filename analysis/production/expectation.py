"""The benchmark's acceptance for what a segment runs: the same family, method, depth and workload.

Acceptance does not depend on load (DESIGN), so every matching cell counts: the expectation is their
mean acceptance rate, the band spans their 95 % bootstrap intervals (lowest low to highest high), and
the provenance says whether they were measured (vllm/import runs) or simulated. GPU narrows the match
when the segment names one and the store has it; otherwise any GPU's cells are used and that is said.
"""

from __future__ import annotations

import duckdb
import numpy as np

from analysis.production import load


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
    lo = cells["rate_lo"].drop_nulls()
    hi = cells["rate_hi"].drop_nulls()
    backends = sorted(set(cells["backend"].to_list()))
    return {"acceptance_rate": _r(float(np.mean(rate))),
            "band": [_r(float(lo.min()) if lo.len() else float(rate.min())),
                     _r(float(hi.max()) if hi.len() else float(rate.max()))],
            "acceptance_length": _r(float(cells["acceptance_length"].mean())),
            "cells": cells.height, "backends": backends, "simulated": "sim" in backends,
            "provenance": "simulated" if backends == ["sim"] else "measured", "matched_on": matched}
