"""Which filters a report lists: only those that change what it shows (an SLO threshold matters for goodput
only, so a throughput report does not list one)."""

from __future__ import annotations

from collections.abc import Mapping

SLO_PREFIX = "SLO"  # the dashboard's SLO filters are labelled "SLO: TTFT ≤ (ms)" …
SLO_METRICS = frozenset({"goodput"})


def applicable(filters: Mapping[str, str], metric: str) -> dict[str, str]:
    """``filters`` (label → value) without those that do not apply to ``metric``."""
    return {k: v for k, v in filters.items() if not (k.startswith(SLO_PREFIX) and metric not in SLO_METRICS)}
