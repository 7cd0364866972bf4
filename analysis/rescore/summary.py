"""Frames that describe a trace and a re-scoring result for tables and charts (the dashboard's inputs).

Owns the shaping of numbers already computed elsewhere: length histograms (log2 bins), the workload
mix, the arrival rate over time (from analysis.rescore.trace's buckets), and the recommendation,
candidate and tax tables of an analysis.rescore document; and the re-score answer in plain words (a depth
schedule as "8 at batch 1–4, 6 at 5–32", a gain with "95 % interval … to …", the verdict in the one
vocabulary of docs/metrics.md), for the page, the CLI and the report alike. No chart code here, and no store
access.
"""

from __future__ import annotations

import polars as pl

from analysis.labels import candidate, candidate_expr
from analysis.rescore.trace import TraceBuckets, time_profile


def length_histogram(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Requests per power-of-two bin of ``column`` (input_tokens / output_tokens): lo, hi, bin, requests."""
    if column not in ("input_tokens", "output_tokens"):
        raise ValueError(f"no histogram for {column!r}")
    k = pl.max_horizontal(pl.col(column), pl.lit(1)).cast(pl.Float64).log(2).floor().cast(pl.Int32)
    out = frame.lazy().select(k.alias("k")).group_by("k").len().sort("k").collect()
    lo = (2 ** out["k"].cast(pl.Int64))
    return pl.DataFrame({"lo": lo, "hi": lo * 2 - 1, "requests": out["len"]}).with_columns(
        pl.format("{}–{}", "lo", "hi").alias("bin"))


def mix_frame(mix: dict[str, float]) -> pl.DataFrame:
    return pl.DataFrame({"workload": list(mix), "share": list(mix.values())},
                        schema={"workload": pl.String, "share": pl.Float64})


def arrival_rate(b: TraceBuckets) -> pl.DataFrame:
    """t_start_s, requests, rate_rps per time bucket (empty without timestamps)."""
    if not b.has_time:
        return pl.DataFrame(schema={"t_start_s": pl.Float64, "requests": pl.UInt32, "rate_rps": pl.Float64})
    return time_profile(b)


def _pct(x: float) -> str:
    return f"{x:+.1f}" if abs(x) < 10 else f"{x:+.0f}"


def ranges_words(schedule: list | tuple) -> str:
    """A depth schedule in words: ``8 at batch 1–4, 6 at 5–32, 3 at 33–64``."""
    parts = [f"{int(k)} at {'batch ' if i == 0 else ''}{int(a)}–{int(b)}" for i, (a, b, k) in enumerate(schedule)]
    return ", ".join(parts)


def config_words(method: str, depth: int | None, schedule: list | tuple | None = None) -> str:
    """A configuration in words: ``dspark·8``, or ``dspark with a depth schedule (8 at batch 1–4, …)``."""
    if schedule:
        return f"{method} with a depth schedule ({ranges_words(schedule)})"
    return candidate(method, depth)


def gain_words(gain: float | None, ci: list | None, ref: str) -> str:
    """A gain with its certainty in words: ``+19 % over mtp·3 (95 % interval +3.1 to +30 %)``, or ``not
    separable from mtp·3 (+1.2 %, 95 % interval −0.8 to +3.0 %)`` when the interval includes 0."""
    if gain is None:
        return ""
    if not ci or ci[0] is None or ci[1] is None:
        return f"{_pct(gain)} % over {ref} (no interval)"
    span = f"95 % interval {_pct(ci[0])} to {_pct(ci[1])} %"
    if ci[0] <= 0 <= ci[1]:
        return f"not separable from {ref} ({_pct(gain)} %, {span})"
    return f"{_pct(gain)} % over {ref} ({span})"


def verdict_words(r: dict, shown: int = 3) -> str:
    """A recommendation's verdict in the one vocabulary: ``clear (p 0.97)`` or ``tie with mtp·4 (p 0.30) and
    dspark with a depth schedule (…) (p 0.12): any of them is as good``."""
    if r["clear"]:
        return "clear" + (f" (p {r['p_best']:.2f})" if r.get("p_best") is not None else "")
    others = [t for t in r["tied"] if (t["method"], t["depth"], t.get("schedule")) !=
              (r["method"], r["depth"], r.get("schedule"))]
    names = [config_words(t["method"], t["depth"], t.get("schedule"))
             + (f" (p {t['p_best']:.2f})" if t.get("p_best") is not None else "") for t in others[:shown]]
    more = f" and {len(others) - shown} more" if len(others) > shown else ""
    who = ", ".join(names) + more
    return f"tie with {who}: any of them is as good" if who else "tie"


def schedule_words(svs: dict) -> str:
    """The schedule against the best static depth in words: ``a depth schedule (8 at batch 1–4, 6 at 5–32) would
    add 1.7 % (95 % interval +0.3 to +4.7 %) against static dspark·6; we recommend static dspark·6 (…)``."""
    sched = ranges_words(svs["scheduled"]["schedule"])
    static = candidate(svs["static"]["method"], svs["static"]["depth"])
    gain, ci = svs.get("gain_pct"), svs.get("gain_ci_pct")
    if gain is None:
        effect = "cannot be compared"
    else:
        effect = f"would {'add' if gain >= 0 else 'lose'} {abs(gain):.1f} %"
        if ci and ci[0] is not None and ci[1] is not None:
            effect += f" (95 % interval {_pct(ci[0])} to {_pct(ci[1])} %" + (
                ", not separable from static)" if ci[0] <= 0 <= ci[1] else ")")
    chosen = (f"we recommend the schedule ({svs['rule']})" if svs["chosen"] == "scheduled" else
              f"we recommend static {static} ({svs['rule']})")
    return f"a depth schedule for {svs['scheduled']['method']} ({sched}) {effect} against static {static}; {chosen}"


def recommendation_words(r: dict) -> str:
    """One shard's answer in a sentence: what to run, what it gains over your default, how sure."""
    run = config_words(r["method"], r["depth"], r.get("schedule"))
    gain = r.get("gain_vs_default_text")
    if r.get("gain_vs_default_pct") is not None and gain != "the default is the winner":
        gain = gain_words(r["gain_vs_default_pct"], r.get("gain_ci_pct"), "your default")
    # on a tie the recommended configuration's own chance of being best comes with it (a clear verdict says it)
    chance = f" (p {r['p_best']:.2f})" if not r["clear"] and r.get("p_best") is not None else ""
    return f"run {run}{chance}" + (f": {gain}" if gain else "") + f"; {verdict_words(r)}"


def recommendations(doc: dict) -> pl.DataFrame:
    """One row per (family, gpu, shard): the winner, its gain over the default, the verdict, the config."""
    rows = []
    for r in doc["recommendations"]:
        ci = r.get("gain_ci_pct") or [None, None]
        rows.append({
            "family": r["family"], "gpu": r["gpu"], "shard": r["shard"], "requests": r["requests"],
            "method": r["method"], "depth": r["depth"], "gain_vs_default_pct": r["gain_vs_default_pct"],
            "gain_ci_low": ci[0], "gain_ci_high": ci[1],
            "verdict": verdict_words(r),
            "keep_default": r["keep_default"],
            "output_throughput": r["expected"]["output_throughput"], "p99_e2e_ms": r["expected"]["p99_e2e_ms"],
            "mean_concurrency": r["load"]["mean_concurrency"], "vllm_args": r["vllm_args"],
            "config": config_words(r["method"], r["depth"], r.get("schedule")),
            "schedule_gain_pct": (r.get("static_vs_scheduled") or {}).get("gain_pct"),
            "command": (r.get("deploy") or {}).get("command"),
        })
    schema = {"family": pl.String, "gpu": pl.String, "shard": pl.String, "requests": pl.Int64, "method": pl.String,
              "depth": pl.Int64, "gain_vs_default_pct": pl.Float64, "gain_ci_low": pl.Float64,
              "gain_ci_high": pl.Float64, "verdict": pl.String, "keep_default": pl.Boolean,
              "output_throughput": pl.Float64, "p99_e2e_ms": pl.Float64, "mean_concurrency": pl.Float64,
              "vllm_args": pl.String, "config": pl.String, "schedule_gain_pct": pl.Float64, "command": pl.String}
    return pl.DataFrame(rows, schema=schema)


def candidates(doc: dict) -> pl.DataFrame:
    """Every scored candidate per shard with its value relative to the shard's default (gain %)."""
    frame = pl.DataFrame(doc["candidates"], infer_schema_length=None) if doc["candidates"] else pl.DataFrame()
    if frame.height == 0:
        return frame
    base = frame.filter(pl.col("is_default")).select("family", "gpu", "shard", pl.col("value").alias("_base"))
    frame = frame.join(base, on=["family", "gpu", "shard"], how="left")
    ratio = (pl.col("value") / pl.col("_base")) if doc["higher_is_better"] else (pl.col("_base") / pl.col("value"))
    label = candidate_expr()
    if "label" in frame.columns:  # a depth schedule's candidate is named by its ranges
        label = pl.coalesce(pl.col("label"), label)
    return frame.with_columns(((ratio - 1) * 100).alias("gain_vs_default_pct"), label.alias("candidate")).drop("_base")


def tax(doc: dict) -> pl.DataFrame:
    """Per shard: what the default costs against the recommendation (gain %, interval, winning method)."""
    return recommendations(doc).select("family", "gpu", "shard", "method", "depth", "gain_vs_default_pct",
                                       "gain_ci_low", "gain_ci_high", "requests")


def operating_load(doc: dict) -> dict[str, str]:
    """The concurrency per server the trace was scored at, for a KPI: ``value`` (one number or the range
    over shards) and ``how`` (arrival rate, assumed or given)."""
    loads = sorted(r["load"]["mean_concurrency"] for r in doc["recommendations"]
                   if r["load"].get("mean_concurrency") is not None)
    value = "—" if not loads else (f"{loads[0]:.1f}" if loads[0] == loads[-1] else f"{loads[0]:.1f}–{loads[-1]:.1f}")
    load = doc["load"]
    if load["source"] == "given":
        how = f"fixed at {load['concurrency']:g} requests in flight per server (your choice)"
    elif load["source"] == "arrival_rate":
        how = (f"mean requests in flight per server, from the trace's arrival rate spread over "
               f"{load['replicas']:g} server(s)")
    else:
        grids = sorted({c for r in doc["recommendations"] for c in r["load"].get("grid", [])})
        how = f"assumed: the trace has no timestamps, so it is scored at the middle of the measured loads {grids}"
    return {"value": value, "how": how}
