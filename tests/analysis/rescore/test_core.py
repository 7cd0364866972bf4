"""Re-scoring a trace against the measured matrix (analysis.rescore): real stores, real traces, no mocks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl
import pytest

from analysis import frames
from analysis.labels import candidate
from analysis.rescore.config import Choice
from analysis.rescore.core import RescoreOptions, rescore
from ingest import store
from ingest.records import CellKey, RunInfo, SpecCounters
from ingest.traces import read_trace

SAMPLES = Path(__file__).resolve().parents[3] / "data" / "samples" / "traces"


@pytest.fixture(scope="module")
def con(default_db):
    c = store.connect(default_db, read_only=True)
    yield c
    c.close()


def _rec(doc: dict, family: str, gpu: str, shard: str | None = None) -> dict:
    return next(r for r in doc["recommendations"] if r["family"] == family and r["gpu"] == gpu
                and (shard is None or r["shard"] == shard))


def test_code_and_conversation_azure_samples_get_different_advice(con):
    code = rescore(con, read_trace(SAMPLES / "azure_code.csv").frame)
    conv = rescore(con, read_trace(SAMPLES / "azure_conv.csv").frame)
    assert code["trace"]["workload_mix"] == {"code": 1.0} and conv["trace"]["workload_mix"] == {"chat": 1.0}
    combos = {(r["family"], r["gpu"]) for r in code["recommendations"]}
    assert len(combos) == 8  # 4 families × 2 GPUs in the default data
    differ_choice = 0
    for fam, gpu in combos:
        a, b = _rec(code, fam, gpu), _rec(conv, fam, gpu)
        assert (a["method"], a["depth"]) != (b["method"], b["depth"]) or \
            abs(a["gain_vs_default_pct"] - b["gain_vs_default_pct"]) > 5
        differ_choice += (a["method"], a["depth"]) != (b["method"], b["depth"])
    assert differ_choice >= 1
    assert code["simulated"] and code["backends"] == ["sim"]


def test_json_document_follows_the_design_contract(con):
    doc = rescore(con, read_trace(SAMPLES / "azure_conv.csv").frame, RescoreOptions(families=("Qwen",)))
    assert {"requests", "workload_mix", "shards"} <= set(doc["trace"])
    assert doc["default"] == {"method": "mtp", "depth": 3}
    for r in doc["recommendations"]:
        assert {"family", "gpu", "shard", "method", "depth", "gain_vs_default_pct", "expected",
                "speculative_config"} <= set(r)
        assert {"output_throughput", "p99_e2e_ms"} <= set(r["expected"])
        if r["method"] == "none":
            assert r["speculative_config"] is None and r["vllm_args"] == ""
        else:
            assert r["speculative_config"]["num_speculative_tokens"] == r["depth"]
            assert "--speculative-config" in r["vllm_args"]
        lo, hi = r["gain_ci_pct"]
        assert lo <= r["gain_vs_default_pct"] <= hi
    # every candidate of the store plus the default was scored, once per shard; plus at most one depth
    # schedule per speculative method (docs/rescoring.md)
    static = [c for c in doc["candidates"] if not c["schedule"]]
    stored = con.execute("SELECT count(DISTINCT (method, depth)) FROM cells WHERE family = 'Qwen' "
                         "AND concurrency IS NOT NULL").fetchall()[0][0]  # published cells: no load, not scored
    assert len(static) == stored * len(doc["recommendations"])
    assert 0 < len(doc["candidates"]) - len(static) <= 5 * len(doc["recommendations"])


def test_replaying_a_cells_own_requests_reproduces_the_cell(con):
    """A trace made of a measured cell's own requests, at its concurrency, predicts that cell back."""
    cells = frames.cells(con, frames.Filters(families=("Kimi",), gpus=("MI355X",), methods=("none", "dflash"),
                                             depth_min=3, depth_max=3))
    for row in cells.iter_rows(named=True):
        req = frames.requests(con, row["run_id"], row["cell_id"])
        trace = req.select("input_tokens", "output_tokens").with_columns(pl.lit(row["workload"]).alias("workload"))
        doc = rescore(con, trace, RescoreOptions(families=("Kimi",), gpus=("MI355X",),
                                                 default=Choice(row["method"], row["depth"]),
                                                 concurrency=row["concurrency"]))
        cand = next(c for c in doc["candidates"] if c["is_default"])
        steady = req["output_tokens"].sum() / (req["e2e_ms"].sum() / 1e3 / row["concurrency"])
        assert cand["output_throughput"] == pytest.approx(steady, rel=0.03)
        assert cand["p99_e2e_ms"] == pytest.approx(row["p99_e2e_ms"], rel=0.10)


def test_load_follows_the_arrival_rate_and_gains_shrink_with_it(con):
    frame = read_trace(SAMPLES / "azure_conv.csv").frame
    opts = RescoreOptions(families=("Qwen",), gpus=("MI300X",))
    loads, gains = [], []
    for scale in (1.0, 0.3, 0.1, 0.001):
        doc = rescore(con, frame.with_columns(pl.col("timestamp_s") * scale), opts)
        r = doc["recommendations"][0]
        loads.append(r["load"]["mean_concurrency"])
        gains.append(r["gain_vs_default_pct"])
        assert doc["load"]["source"] == "arrival_rate"
    assert loads == sorted(loads) and loads[0] < 16 < loads[-1]
    assert r["load"]["saturated_share"] == 1.0  # 1000× the arrival rate is beyond the largest measured load
    single = rescore(con, frame.drop("timestamp_s"), RescoreOptions(families=("Qwen",), gpus=("MI300X",),
                                                                   concurrency=1.0))
    assert single["load"]["source"] == "given"
    assert single["recommendations"][0]["gain_vs_default_pct"] > gains[-1]  # speculation pays most at low load


def test_without_timestamps_the_load_is_assumed_and_said_so(con):
    frame = read_trace(SAMPLES / "azure_code.csv").frame.drop("timestamp_s")
    doc = rescore(con, frame, RescoreOptions(families=("Gemma",), gpus=("MI355X",)))
    assert doc["load"]["source"] == "assumed" and not doc["trace"]["has_timestamps"]
    assert doc["recommendations"][0]["load"]["mean_concurrency"] == 16.0  # middle of the measured 1/16/64


def test_longer_outputs_mean_longer_p99_and_other_numbers(con):
    frame = read_trace(SAMPLES / "azure_conv.csv").frame
    opts = RescoreOptions(families=("MiniMax",), gpus=("MI355X",), concurrency=16.0)
    short = rescore(con, frame, opts)["recommendations"][0]
    long = rescore(con, frame.with_columns(pl.col("output_tokens") * 4), opts)["recommendations"][0]
    assert long["expected"]["p99_e2e_ms"] > 2 * short["expected"]["p99_e2e_ms"]
    assert long["default_expected"]["output_throughput"] != short["default_expected"]["output_throughput"]


# ---- a synthetic store: exact control over which candidates are equal -----------------------------------

def _requests(tpot_ms: float, n: int = 200, seed: int = 0) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    out = rng.integers(50, 400, n)
    ttft = rng.uniform(40, 60, n)
    tpot = tpot_ms * rng.lognormal(0, 0.05, n)
    e2e = ttft + (out - 1) * tpot
    return pl.DataFrame({"request_index": np.arange(n), "input_tokens": rng.integers(300, 900, n),
                         "output_tokens": out, "ttft_ms": ttft, "tpot_ms": tpot, "e2e_ms": e2e,
                         "start_s": np.cumsum(e2e) / 1e3})


def synthetic_store(path: Path, cells: dict[tuple[str, int], float], workloads=("code",), concs=(1, 16)) -> Path:
    """Cells (method, depth) → TPOT ms, same request samples (seed) for every cell: equal TPOT = equal cell."""
    with store.session(path) as c:
        store.write_run(c, RunInfo(run_id="syn", backend="vllm", source="test"))
        for wl in workloads:
            for conc in concs:
                for (method, depth), tpot in cells.items():
                    req = _requests(tpot * (1 + conc / 64))
                    counters = SpecCounters(drafts=10_000, draft_tokens=10_000 * depth, accepted_tokens=15_000) \
                        if method != "none" else None
                    key = CellKey(method, depth, "Qwen", "Qwen/Qwen3.5-397B-A17B", wl, "MI355X", conc)
                    store.write_cell(c, "syn", key, req, window_s=float(req["start_s"].max()), gpu_count=2,
                                     counters=counters)
    return path


def _trace(n: int = 400, workload: str | None = "code") -> pl.DataFrame:
    rng = np.random.default_rng(1)
    return pl.DataFrame({"timestamp_s": np.cumsum(rng.exponential(0.5, n)), "input_tokens": rng.integers(200, 900, n),
                         "output_tokens": rng.integers(30, 500, n), "workload": [workload] * n})


def test_identical_candidates_tie_and_a_faster_one_wins_clearly(tmp_path):
    db = synthetic_store(tmp_path / "s.duckdb", {("none", 0): 20.0, ("eagle3", 3): 10.0, ("mtp", 3): 10.0,
                                                 ("dflash", 2): 5.0})
    with store.session(db, read_only=True) as c:
        tie = rescore(c, _trace(), RescoreOptions(default=Choice("mtp", 3)), {}).copy()
        r = tie["recommendations"][0]
        assert (r["method"], r["depth"]) == ("dflash", 2) and r["clear"] and r["tied"] == []
        assert r["gain_vs_default_pct"] > 50 and not r["keep_default"]
        assert r["needs_draft_model"] and "model" not in r["speculative_config"]
        assert not tie["simulated"]
    db2 = synthetic_store(tmp_path / "t.duckdb", {("none", 0): 20.0, ("eagle3", 3): 10.0, ("mtp", 3): 10.0})
    with store.session(db2, read_only=True) as c:
        r = rescore(c, _trace(), RescoreOptions(default=Choice("mtp", 3)))["recommendations"][0]
    assert not r["clear"] and {(t["method"], t["depth"]) for t in r["tied"]} == {("eagle3", 3), ("mtp", 3)}
    assert r["keep_default"] and r["gain_vs_default_pct"] == pytest.approx(0.0, abs=1e-6)


def test_unmeasured_default_and_methods_are_filled_by_the_model(tmp_path):
    db = synthetic_store(tmp_path / "s.duckdb", {("none", 0): 20.0, ("eagle3", 3): 10.0})
    with store.session(db, read_only=True) as c:
        deeper = rescore(c, _trace(), RescoreOptions(default=Choice("eagle3", 6)))
        other = rescore(c, _trace(), RescoreOptions(default=Choice("mtp", 3)))
    for doc, (method, depth) in ((deeper, ("eagle3", 6)), (other, ("mtp", 3))):
        d = next(x for x in doc["candidates"] if x["is_default"])
        (rec,) = doc["recommendations"]
        assert (d["method"], d["depth"], d["measured_share"]) == (method, depth, 0.0)
        # the filled default is what the recommendation compares against: its numbers, and the gain from them
        assert rec["default_expected"] == {"output_throughput": d["output_throughput"], "p99_e2e_ms": d["p99_e2e_ms"]}
        want_gain = (rec["expected"]["output_throughput"] / d["output_throughput"] - 1) * 100
        assert rec["gain_vs_default_pct"] == pytest.approx(want_gain, abs=0.02)
    # the model moved the numbers: the filled eagle3:6 is not a copy of the measured eagle3:3 it was filled from,
    # and the filled mtp:3 not a copy of the none cell; both stay within what depth 3 can give (τ ≤ 4, so
    # within a factor 3 of their source once the verify and draft costs are paid)
    by = {(x["method"], x["depth"]): x["output_throughput"] for x in deeper["candidates"]}
    assert by[("eagle3", 6)] != by[("eagle3", 3)] and 0.5 < by[("eagle3", 6)] / by[("eagle3", 3)] < 2
    by = {(x["method"], x["depth"]): x["output_throughput"] for x in other["candidates"]}
    assert by[("mtp", 3)] != by[("none", 0)] and 0.5 < by[("mtp", 3)] / by[("none", 0)] < 3


def test_unknown_and_unstored_workloads_are_scored_as_a_blend_and_shown(con):
    frame = read_trace(SAMPLES / "azure_code.csv").frame
    frame = frame.with_columns(pl.when(pl.col("request_index") % 3 == 0).then(None)
                               .when(pl.col("request_index") % 3 == 1).then(pl.lit("summarization"))
                               .otherwise(pl.lit("math")).alias("workload"))
    doc = rescore(con, frame, RescoreOptions(families=("Kimi",), gpus=("MI300X",), shard_by="workload"))
    assert doc["trace"]["workload_scored_as"] == {"math": "reasoning", "summarization": "blend", "unknown": "blend"}
    assert {s["shard"] for s in doc["trace"]["shards"]} == {"math", "summarization", "unknown"}
    assert doc["trace"]["workload_mix"]["unknown"] == pytest.approx(1 / 3, abs=0.01)


def test_shards_come_from_the_shard_column(con):
    tf = read_trace(SAMPLES / "generic.csv", mapping=__import__("ingest.traces", fromlist=["x"]).TraceMapping(
        input_tokens="prompt_tokens", output_tokens="completion_tokens", workload="task", shard="tenant",
        timestamp="arrival_ms", timestamp_unit="ms"))
    doc = rescore(con, tf.frame, RescoreOptions(families=("Qwen",), gpus=("MI355X",)))
    assert doc["trace"]["shard_by"] == "column"
    assert {r["shard"] for r in doc["recommendations"]} == {"acme", "globex", "initech"}
    by_wl = rescore(con, tf.frame, RescoreOptions(families=("Qwen",), gpus=("MI355X",), shard_by="workload"))
    assert {r["shard"] for r in by_wl["recommendations"]} == {"chat", "code", "reasoning"}


def _with_counters(frame: pl.DataFrame, rate: float, k: int) -> pl.DataFrame:
    drafted = (pl.col("output_tokens") * k).cast(pl.Int64)
    return frame.with_columns(drafted.alias("drafted_tokens"), (drafted * rate).round().cast(pl.Int64)
                              .alias("accepted_tokens"))


def test_production_counters_fit_acceptance_and_report_drift(con):
    frame = read_trace(SAMPLES / "azure_code.csv").frame
    cell = frames.cells(con, frames.Filters(families=("Kimi",), gpus=("MI355X",), methods=("mtp",),
                                            workloads=("code",), depth_min=3, depth_max=3))
    bench_rate = float(cell["acceptance_rate"].mean())
    opts = RescoreOptions(families=("Kimi",), gpus=("MI355X",))
    same = rescore(con, _with_counters(frame, bench_rate, 3), opts)
    assert same["acceptance"]["source"] == "observed counters"
    assert abs(same["acceptance"]["drift"][0]["drift_pct"]) < 3
    worse = rescore(con, _with_counters(frame, bench_rate * 0.5, 3), opts)
    drift = worse["acceptance"]["drift"][0]
    assert drift["drift_pct"] < -20 and drift["observed_acceptance_rate"] == pytest.approx(bench_rate * 0.5, rel=0.02)
    bench = rescore(con, _with_counters(frame, bench_rate * 0.5, 3), RescoreOptions(
        families=("Kimi",), gpus=("MI355X",), acceptance="benchmark"))
    assert bench["acceptance"]["source"] == "benchmark"
    w, b = worse["recommendations"][0], bench["recommendations"][0]
    assert w["expected"]["output_throughput"] < b["expected"]["output_throughput"]


def test_goodput_under_an_slo_and_latency_as_the_metric(con):
    frame = read_trace(SAMPLES / "azure_conv.csv").frame
    base = {"families": ("Qwen",), "gpus": ("MI355X",)}
    loose = rescore(con, frame, RescoreOptions(**base, metric="goodput", slo_ttft_ms=60_000, slo_tpot_ms=1_000))
    tight = rescore(con, frame, RescoreOptions(**base, metric="goodput", slo_ttft_ms=60_000, slo_tpot_ms=6.0))
    assert loose["slo"] == {"ttft_ms": 60_000, "tpot_ms": 1_000}
    lg, tg = loose["recommendations"][0]["expected"]["goodput"], tight["recommendations"][0]["expected"]["goodput"]
    assert 0 < tg < lg
    none = next(c for c in tight["candidates"] if c["method"] == "none")
    assert none["goodput"] < tg  # the baseline's slower tokens miss a tight TPOT SLO more often
    p99 = rescore(con, frame, RescoreOptions(**base, metric="p99_e2e_ms"))
    assert not p99["higher_is_better"]
    win = p99["recommendations"][0]
    # the best point estimate wins — among static depths unless a schedule beats them clearly by the margin
    pool = [c for c in p99["candidates"] if not c["schedule"] or win["schedule"]]
    assert win["expected"]["p99_e2e_ms"] == min(c["p99_e2e_ms"] for c in pool)


def test_each_shard_chooses_between_static_depths_and_a_depth_schedule(con):
    import json
    import shlex

    from analysis.schedule import SCHEDULE_MARGIN_PCT, depth_at
    from tests.analysis.test_deploy import vllm_would_accept

    doc = rescore(con, read_trace(SAMPLES / "azure_conv.csv").frame)
    with_sched = [r for r in doc["recommendations"] if r["static_vs_scheduled"]]
    assert with_sched  # the default data's winning depth moves with load: schedules are candidates
    sched_rows = [c for c in doc["candidates"] if c["schedule"]]
    assert sched_rows and all("→" in c["label"] for c in sched_rows)
    for r in with_sched:
        svs = r["static_vs_scheduled"]
        argv = shlex.split(r["deploy"]["command"])
        config = json.loads(argv[argv.index("--speculative-config") + 1])
        vllm_would_accept(config)
        if svs["chosen"] == "scheduled":
            assert r["schedule"] == svs["scheduled"]["schedule"] == config["num_speculative_tokens_per_batch_size"]
            assert svs["gain_pct"] >= SCHEDULE_MARGIN_PCT
            assert not any(t["label"] == candidate(svs['static']['method'], svs['static']['depth']) for t in r["tied"])
        else:
            assert r["schedule"] is None and "num_speculative_tokens_per_batch_size" not in config
    # at one fixed load a schedule runs one depth: it can never beat that depth by the margin
    fixed = rescore(con, read_trace(SAMPLES / "azure_conv.csv").frame, RescoreOptions(concurrency=64.0))
    for r in fixed["recommendations"]:
        svs = r["static_vs_scheduled"]
        assert svs is None or svs["chosen"] == "static"
        if svs is not None:
            at64 = depth_at(tuple(map(tuple, svs["scheduled"]["schedule"])), 64)
            assert at64 >= 1 and r["schedule"] is None
