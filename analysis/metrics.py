"""The metrics spectune compares, declared once: column, label, unit, direction and help text.

Definitions follow vLLM (see ingest/cellstats.py, which applies them when a cell lands, and
docs/metrics.md). This registry is the allow-list for every metric name that reaches a query.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Metric:
    name: str
    label: str
    unit: str
    higher_is_better: bool
    help: str
    bootstrapped: bool = True  # has replicates in cell_bootstrap
    # the `cells` / `cell_bootstrap` column the winner rule reads (default: the name), and the figure shown
    # next to it (output throughput: decided on the steady window, the whole-window one alongside)
    column: str = ""
    whole_window_column: str | None = None

    @property
    def value_column(self) -> str:
        return self.column or self.name

    def better(self, a: float, b: float) -> bool:
        return a > b if self.higher_is_better else a < b


METRICS: dict[str, Metric] = {m.name: m for m in (
    Metric("output_throughput", "Output throughput", "tok/s", True,
           "Output tokens / time while all the load's slots were busy (steady state: ramp-up and wind-down "
           "left out); the whole-window figure vllm bench serve reports is shown next to it.",
           column="steady_output_throughput", whole_window_column="output_throughput"),
    Metric("p99_e2e_ms", "p99 end-to-end latency", "ms", False, "99th percentile of request latency."),
    Metric("p99_tpot_ms", "p99 TPOT", "ms", False, "99th percentile of (e2e − TTFT)/(output tokens − 1)."),
    Metric("p99_ttft_ms", "p99 TTFT", "ms", False, "99th percentile of time to first token."),
    Metric("acceptance_rate", "Acceptance rate", "", True, "Accepted draft tokens / drafted tokens."),
    Metric("acceptance_length", "Acceptance length τ", "tok/step", True, "1 + accepted tokens / drafts."),
    Metric("goodput", "Goodput", "req/s", True,
           "Requests/s meeting the SLO (TTFT ≤ a and TPOT ≤ b).", bootstrapped=False),
)}

# Columns of `cells` that may be selected or charted (the allow-list for identifiers).
CELL_COLUMNS: tuple[str, ...] = (
    "output_throughput", "output_throughput_per_gpu", "request_throughput", "acceptance_rate", "acceptance_length",
    *[f"{p}_{lat}" for lat in ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms") for p in ("p50", "p90", "p99")],
    "mean_ttft_ms", "mean_tpot_ms", "mean_e2e_ms",
    "steady_output_throughput", "steady_output_throughput_per_gpu", "steady_window_s", "steady_requests",
    "steady_fallback",
)
DIMENSION_COLUMNS: tuple[str, ...] = ("method", "depth", "family", "model", "workload", "dataset", "gpu",
                                      "concurrency")


def get_metric(name: str) -> Metric:
    try:
        return METRICS[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r} (expected one of {', '.join(METRICS)})") from None


def speedup(value: float, baseline: float, metric: Metric) -> float:
    """Improvement factor over the baseline in the metric's good direction (>1 = better)."""
    if not baseline or not value:
        return float("nan")
    return value / baseline if metric.higher_is_better else baseline / value
