"""The simulator held to the published measurements (data/published_results.csv) and DESIGN's findings.

Prints a calibration table (``pytest -s`` shows it): every matching published acceptance-length row, the
simulator's value at the row's own depth, and the error. Fails when any is off by more than 15 %, or
when a published direction (MI355X vs MI300X, spec vs none, low vs high load) is wrong.
"""

from __future__ import annotations

import csv
from collections import defaultdict
from statistics import median

import polars as pl
import pytest

from analysis import calibration, costmodel
from ingest import cellstats, sql, store
from ingest.records import CellKey
from runner.simulate import simulate_cell


def _sim_tau(method: str, family: str, workload: str, depth: int, gpu: str = "MI355X", c: int = 1) -> float:
    key = CellKey(method, depth, family, costmodel.model_specs()[family].model, workload, gpu, c)
    res = simulate_cell(key, 200)
    return 1.0 + res.counters.accepted_tokens / res.counters.drafts


def _sim_throughput(method: str, depth: int, family: str, workload: str, gpu: str, c: int) -> float:
    key = CellKey(method, depth, family, costmodel.model_specs()[family].model, workload, gpu, c)
    res = simulate_cell(key, 200)
    m = cellstats.derive(res.requests, depth=depth, window_s=res.window_s, gpu_count=res.gpu_count,
                         counters=res.counters)
    return float(m.values["output_throughput_per_gpu"])


def test_simulator_samples_what_the_fitted_model_predicts(capsys):
    """The simulator's counters reproduce the calibrated model's τ (an implementation check, not a validation:
    the out-of-sample check against published rows is tests/runner/test_validation.py)."""
    rows = calibration.matching_rows()
    assert len(rows) >= 30, "the calibration set shrank: check data/published_results.csv"
    table, worst = [], 0.0
    cache: dict[tuple, float] = {}
    for r in rows:
        k = (r.method, r.family, r.workload, r.depth)
        if k not in cache:
            cache[k] = _sim_tau(*k)
        model = calibration.predict_tau(*k)
        err = (cache[k] - model) / model
        worst = max(worst, abs(err))
        table.append((r.line, r.method, r.family, r.workload, r.depth, r.dataset[:28], r.value, model, cache[k], err))
    with capsys.disabled():
        print("\nin-sample: published acceptance length, the fitted model, and the simulator's samples")
        print(f"{'line':>4} {'method':<7} {'family':<8} {'workload':<9} {'k':>2} {'dataset':<28} "
              f"{'published':>9} {'model':>6} {'sim':>6} {'sim-model':>9}")
        for line, m, f, w, d, ds, pub, mod, sim, err in table:
            print(f"{line:>4} {m:<7} {f:<8} {w:<9} {d:>2} {ds:<28} {pub:>9.2f} {mod:>6.2f} {sim:>6.2f} {err:>+9.1%}")
        print(f"worst |sim − model| = {worst:.1%} over {len(table)} rows; no row is excluded")
    # per-request difficulty noise (lognormal, mean > 1) and the 0.98 cap move the sampled τ a little
    assert worst < 0.08, f"the simulator drifted from its own model by {worst:.1%}"


def test_no_row_is_excluded_for_disagreeing():
    lines = {r.line for r in calibration.matching_rows()}
    dogacel = [r for r in calibration.all_rows() if "Dogacel/Qwen3-8B-DSpark" in r.source_url]
    assert dogacel and all(r.line in lines for r in dogacel if r.depth <= 8)
    assert not hasattr(calibration, "EXCLUDED")


def _published_speedups() -> list[dict]:
    out = []
    with open(calibration.PUBLISHED, newline="") as fh:
        for r in csv.DictReader(fh):
            if (r["metric"] == "speedup" and r["model_family"] in costmodel.model_specs()
                    and r["method"] in ("eagle3", "dflash", "mtp", "dspark") and r["gpu"] in ("MI300X", "MI355X")
                    and r["concurrency"].isdigit()):
                out.append(r)
    return out


def test_spec_beats_none_where_published_and_gains_shrink_with_load():
    rows = _published_speedups()
    assert rows, "no published AMD speedup rows for the model families"
    by_series: dict[tuple, dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for r in rows:
        by_series[(r["model_family"], r["method"], r["gpu"])][int(r["concurrency"])].append(float(r["value"]))
    for (family, method, gpu), points in by_series.items():
        sim = {}
        for c in points:
            # published rows are random/mixed prompts: compare with the mean over the three workloads
            sim[c] = sum(_sim_throughput(method, 3, family, w, gpu, c) / _sim_throughput("none", 0, family, w, gpu, c)
                         for w in ("code", "chat", "reasoning")) / 3
            assert (sim[c] > 1) == (median(points[c]) > 1), (family, method, gpu, c, sim[c], points[c])
        lo, hi = min(points), max(points)
        if lo != hi and median(points[lo]) > median(points[hi]):
            assert sim[lo] > sim[hi], f"{family}/{method}@{gpu}: published gain shrinks {lo}→{hi}, sim does not"


@pytest.mark.parametrize("family", ["Gemma", "Qwen", "Kimi", "MiniMax"])
def test_mi355x_beats_mi300x_per_gpu(family):
    for c in (1, 64):
        assert _sim_throughput("none", 0, family, "chat", "MI355X", c) > \
            _sim_throughput("none", 0, family, "chat", "MI300X", c)


# ---- DESIGN's qualitative findings, on the embedded default data -------------------------------------

@pytest.fixture(scope="module")
def default_cells(default_db) -> pl.DataFrame:
    with store.session(default_db, read_only=True) as con:
        cells = sql.frame(con, "SELECT method, depth, family, workload, gpu, concurrency, acceptance_length, "
                               "output_throughput FROM cells WHERE status = 'ok'")
    base = cells.filter(pl.col("method") == "none").select(
        "family", "workload", "gpu", "concurrency", pl.col("output_throughput").alias("base"))
    return cells.join(base, on=["family", "workload", "gpu", "concurrency"]).with_columns(
        speedup=pl.col("output_throughput") / pl.col("base"))


def test_no_universal_winner_and_best_depth_moves(default_cells):
    best = (default_cells.sort("output_throughput", descending=True)
            .group_by("family", "workload", "gpu", "concurrency").first())
    assert best.select("method", "depth").unique().height >= 4
    assert best["method"].n_unique() >= 3
    per_workload = best.group_by("family", "gpu", "concurrency").agg(pl.col("depth").n_unique().alias("n"))
    assert (per_workload["n"] > 1).any(), "the best depth never moves with the workload"


def _kept(default_cells) -> dict[str, dict[int, float]]:
    """Per family: the median over workloads and GPUs of the best speedup, by concurrency."""
    spec = default_cells.filter(pl.col("method") != "none")
    best = spec.group_by("family", "workload", "gpu", "concurrency").agg(pl.col("speedup").max())
    by_c = best.group_by("family", "concurrency").agg(pl.col("speedup").median()).sort("concurrency")
    return {fam[0]: dict(zip(grp["concurrency"], grp["speedup"], strict=True)) for fam, grp in by_c.group_by("family")}


def test_gains_shrink_with_load(default_cells):
    for fam, s in _kept(default_cells).items():
        assert s[1] > s[16] > s[64], (fam, s)


def _moe_keeps_less() -> dict[str, float]:
    """MoE families that keep no more of their low-load gain at c = 64 than dense Gemma (computed on the committed
    default data, so the strict xfail below states the figures it was decided on)."""
    cells = pl.read_parquet(store.REPO_ROOT / "data" / "default" / "cells.parquet").filter(pl.col("status") == "ok")
    base = cells.filter(pl.col("method") == "none").select("family", "workload", "gpu", "concurrency",
                                                             pl.col("output_throughput").alias("base"))
    joined = cells.join(base, on=["family", "workload", "gpu", "concurrency"]).with_columns(
        speedup=pl.col("output_throughput") / pl.col("base"))
    kept = {f: s[64] / s[1] for f, s in _kept(joined).items()}
    behind = {f: k for f, k in kept.items() if f != "Gemma" and k <= kept["Gemma"]}
    return behind | ({"Gemma": kept["Gemma"]} if behind else {})


MOE_BEHIND = _moe_keeps_less()


@pytest.mark.xfail(bool(MOE_BEHIND), strict=True, reason=(
    "NOT MET since the refit on vLLM's AMD post (docs/simulator.md, 'Qualitative findings'): share of the c=1 gain "
    "kept at c=64 " + ", ".join(f"{f} {k:.2f}" for f, k in sorted(MOE_BEHIND.items()))
    + ": MiniMax-M3's plain step is mostly the 10.2 ms host overhead fitted on MiniMax-M2.5 (M3's 23B active MXFP8 "
      "weights over TP4 stream in < 1 ms), so speculation amortises it into the largest c=1 gain of all families; "
      "at c=64 its small per-sequence term (0.063 ms vs Kimi's 0.22) leaves the per-token verify cost of the extra "
      "tokens to dominate, as for Gemma. The post states no load, so nothing in it fits those terms"))
def test_moe_tolerates_load_better_than_dense_gemma(default_cells):
    kept = {f: s[64] / s[1] for f, s in _kept(default_cells).items()}  # share of the low-load gain kept
    assert all(kept["Gemma"] < kept[f] for f in ("Qwen", "Kimi", "MiniMax")), kept


def _reasoning_al_at_depth_3(cells: pl.DataFrame) -> dict[str, float]:
    d3 = cells.filter(pl.col("depth") == 3, pl.col("concurrency") == 1, pl.col("workload") == "reasoning")
    return dict(d3.group_by("method").agg(pl.col("acceptance_length").mean()).iter_rows())


COMMITTED_D3 = _reasoning_al_at_depth_3(pl.read_parquet(store.REPO_ROOT / "data" / "default" / "cells.parquet")
                                        .filter(pl.col("status") == "ok"))


@pytest.mark.xfail(COMMITTED_D3["mtp"] >= COMMITTED_D3["dspark"], strict=True, reason=(
    f"NOT MET since the refit on vLLM's AMD post: reasoning acceptance length at depth 3, c=1, MTP "
    f"{COMMITTED_D3['mtp']:.2f} vs DSpark {COMMITTED_D3['dspark']:.2f}. In the post native MTP heads (Qwen3.5) and "
    "Gemma-4's MTP drafter are not behind DSpark on reasoning (depth 3: 3.64-3.67 vs 3.33-3.68; depth 7: 5.73-5.91 "
    "vs 5.07-6.49) and the simulator follows the post (docs/simulator.md, 'Qualitative findings')"))
def test_dspark_leads_mtp_on_reasoning(default_cells):
    get = _reasoning_al_at_depth_3(default_cells)
    assert get["dspark"] > get["mtp"], get


def test_acceptance_by_workload_mtp_shape_dflash_depth_dspark_reasoning(default_cells):
    d3 = default_cells.filter(pl.col("depth") == 3, pl.col("concurrency") == 1)
    al = d3.group_by("method", "workload").agg(pl.col("acceptance_length").mean())
    get = {(r["method"], r["workload"]): r["acceptance_length"] for r in al.iter_rows(named=True)}
    for m in ("mtp", "eagle3", "dflash", "dspark", "ngram"):
        assert get[(m, "code")] > get[(m, "chat")], m
    # DSpark leads the separate drafters on reasoning. Native MTP heads are not behind it in vLLM's AMD post
    # (reasoning, depth 3: Qwen3.5 and Gemma-4 MTP 3.64–3.67 vs DSpark 3.33–3.68; depth 7: MTP 5.73–5.91 vs DSpark
    # 5.07–6.49), so the simulator, which follows the data, does not put DSpark above MTP (docs/simulator.md).
    assert max(get[(m, "reasoning")] for m in ("eagle3", "dflash", "ngram")) < get[("dspark", "reasoning")]
    mtp = default_cells.filter(pl.col("method") == "mtp", pl.col("concurrency") == 1, pl.col("workload") == "code")
    rise = {f: (g.filter(pl.col("depth") == 5)["acceptance_length"].mean()
                - g.filter(pl.col("depth") == 3)["acceptance_length"].mean()) for (f,), g in mtp.group_by("family")}
    # What an extra depth adds is family-dependent (through each family's fitted or borrowed level); no
    # published curve shows an MTP head flattening after 3, so there is no cliff (docs/simulator.md).
    assert max(rise.values()) - min(rise.values()) > 0.2, f"MTP depth gains do not depend on the family: {rise}"
    dflash = default_cells.filter(pl.col("method") == "dflash", pl.col("concurrency") == 64)
    deep = dflash.group_by("depth").agg(pl.col("speedup").median()).sort("depth")["speedup"].to_list()
    assert deep[-1] < max(deep), "DFlash should degrade when pushed deep under load"
