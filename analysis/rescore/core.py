"""Re-scoring a traffic trace: which (method, depth) wins per shard, the tax of today's default, what to deploy.

Owns the orchestration and the JSON document (DESIGN's ``analysis rescore`` contract). Pure: it reads
the store, writes nothing, and takes a trace frame or pre-built buckets. For each family × GPU in the
store (or the chosen ones) and each shard of the trace (analysis.rescore.trace): every candidate
(method, depth) in the store plus the user's default is scored (analysis.rescore.score), filling
unmeasured cells with the acceptance/cost model (analysis.rescore.fill) and, when the trace carries
counters, re-scoring under production acceptance (analysis.rescore.drift). The winner rule is
analysis.winners.decide on the derived bootstrap replicates, so a shard whose top candidates overlap is
a tie. Trace workloads the store lacks are scored as the equal mix of the store's workloads (``blend``);
published ``math`` maps to ``reasoning`` as in calibration.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb
import numpy as np
import polars as pl

from analysis import calibration, model_provenance
from analysis.deploy import serve_command
from analysis.gains import gain_text, interval
from analysis.metrics import Metric, get_metric
from analysis.rescore import default as default_standing
from analysis.rescore import drift as drift_model
from analysis.rescore import fill
from analysis.rescore import shard as shard_keys
from analysis.rescore import workload as workload_source
from analysis.rescore.config import Choice, needs_draft_model, scheduled, speculative_config, vllm_args
from analysis.rescore.matrix import CellSamples, Matrix, load_matrices
from analysis.rescore.score import Candidate, Prediction, ScoreCache, ShardInput, collapse, prime, score, score_many
from analysis.rescore.trace import TraceBuckets, bucketize
from analysis.schedule import SCHEDULE_MARGIN_PCT, depth_at, ranges
from analysis.winners import decide
from ingest.errors import UsageError

METRICS = ("output_throughput", "p99_e2e_ms", "goodput")
DEFAULT_CHOICE = Choice("mtp", 3)
DEFAULT_SLO = (2000.0, 50.0)


@dataclass(frozen=True, slots=True)
class RescoreOptions:
    families: tuple[str, ...] = ()
    gpus: tuple[str, ...] = ()
    default: Choice = DEFAULT_CHOICE
    metric: str = "output_throughput"
    slo_ttft_ms: float | None = None
    slo_tpot_ms: float | None = None
    shard_by: str = "auto"
    replicas: float = 1.0  # servers the whole trace is spread over; a shard gets its share of them
    concurrency: float | None = None  # fixed load per server (overrides the arrival rate)
    acceptance: str = "auto"  # auto (observed counters when present) | benchmark
    observed: Choice | None = None  # config that produced the trace's counters (default: ``default``)
    draft_models: dict[str, str] = field(default_factory=dict)

    @property
    def slo(self) -> tuple[float, float] | None:
        if self.slo_ttft_ms is None and self.slo_tpot_ms is None:
            return DEFAULT_SLO if self.metric == "goodput" else None
        return (self.slo_ttft_ms if self.slo_ttft_ms is not None else float("inf"),
                self.slo_tpot_ms if self.slo_tpot_ms is not None else float("inf"))


def _num(x: float | None, nd: int = 4) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), nd)


def workload_mapping(trace_workloads: list[str], store: list[str]) -> tuple[dict[str, dict[int, float]], dict]:
    """trace workload → {store workload index: weight}, and how each was scored (for the report)."""
    mapping, scored_as = {}, {}
    for tw in trace_workloads:
        target = tw if tw in store else calibration.WORKLOAD_MAP.get(tw)
        if target in store:
            mapping[tw], scored_as[tw] = {store.index(target): 1.0}, target
        else:
            mapping[tw], scored_as[tw] = {i: 1.0 / len(store) for i in range(len(store))}, "blend"
    return mapping, scored_as


def _shard_input(b: TraceBuckets, shard: str, mapping: dict[str, dict[int, float]], m: Matrix,
                 store: list[str], opts: RescoreOptions) -> ShardInput | None:
    rows = b.shard_rows(shard)
    pairs = [{"workload": tw, "wi": wi, "weight": wt} for tw, d in mapping.items() for wi, wt in d.items()]
    split = pl.DataFrame(pairs, schema={"workload": pl.String, "wi": pl.Int64, "weight": pl.Float64})
    ex = rows.join(split, on="workload", how="inner")
    needed = sorted(set(ex["wi"].to_list()))
    grid = [c for c in m.concurrencies if all(any(k[2] == store[w] and k[3] == c for k in m.cells) for w in needed)]
    if not grid:
        return None
    n_t = np.bincount(rows["t"].to_numpy(), weights=rows["n"].to_numpy().astype(float), minlength=b.bucket_len.size)
    rate, fixed = None, opts.concurrency
    if fixed is None and b.has_time:
        servers = max(opts.replicas * rows["n"].sum() / b.requests, 1e-9)
        rate = n_t / b.bucket_len / servers
    elif fixed is None:
        fixed = float(grid[len(grid) // 2])
    wt = ex["weight"].to_numpy()
    return ShardInput(t=ex["t"].to_numpy().astype(int), wi=ex["wi"].to_numpy().astype(int),
                      lb=ex["lb"].to_numpy().astype(int), n=ex["n"].to_numpy() * wt,
                      out=ex["out_sum"].to_numpy() * wt, inp=ex["in_sum"].to_numpy() * wt,
                      n_t=n_t, rate=rate, fixed_c=fixed, grid=grid)


def _candidate_cells(m: Matrix, choice: Choice, si: ShardInput, needed: set[int], store: list[str],
                     factors: dict[str, float], filled: dict) -> list[list[CellSamples | None]] | None:
    """cells[w][g] for the workloads the shard needs (``needed``; None elsewhere); None when one cannot be filled.

    ``filled``: the family × GPU's cells by (method, depth, workload, concurrency), made once and the same
    objects for every shard (so their per-bucket tables are built once, analysis.rescore.score)."""
    cells: list[list[CellSamples | None]] = []
    for w, wl in enumerate(store):
        per_g: list[CellSamples | None] = []
        for c in si.grid:
            depth = depth_at(choice.schedule, c) if choice.schedule else choice.depth
            cell = None
            if w in needed:
                key = (choice.method, depth, wl, c)
                if key not in filled:
                    cell = fill.fill(m, choice.method, depth, wl, c)
                    if cell is not None and wl in factors:
                        cell = fill.adjust_acceptance(cell, m.family, factors[wl])
                    filled[key] = cell
                cell = filled[key]
                if cell is None:
                    return None
            per_g.append(cell)
        cells.append(per_g)
    return cells


def _rate(cell: CellSamples) -> float:
    """Output tokens per request-second of a cell's requests (Σ out / Σ e2e)."""
    return float(cell.out.sum()) / float((cell.ttft + np.maximum(cell.out - 1, 0) * cell.tpot).sum())


def shard_schedules(m: Matrix, si: ShardInput, store: list[str], rates: dict | None = None) -> list[Choice]:
    """Per method, the depth schedule per batch size for this shard: at each load of its grid, the measured
    depth with the most output tokens per request-second over the shard's workload mix (Σ out / Σ e2e of
    the cells' requests), as inclusive batch ranges (analysis.schedule.ranges). Only schedules that use more
    than one depth are candidates; the winner rule then picks between them and the static depths.
    ``rates``: each cell's rate by key, kept across a family × GPU's shards."""
    rates = {} if rates is None else rates
    weights = {w: float(si.n[si.wi == w].sum()) for w in np.unique(si.wi).tolist()}
    out = []
    for method in sorted({k[0] for k in m.cells if k[0] != "none"}):
        depths = sorted({k[1] for k in m.cells if k[0] == method})
        best = []
        for c in si.grid:
            speed = {}
            for d in depths:
                keys = [(method, d, store[w], c) for w in weights]
                if any(key not in m.cells for key in keys):
                    continue
                for key in keys:
                    if key not in rates:
                        rates[key] = _rate(m.cells[key])
                speed[d] = sum(wt * rates[key] for wt, key in zip(weights.values(), keys, strict=True))
            if not speed:
                break
            best.append(max(speed, key=lambda d: (speed[d], -d)))
        if len(best) == len(si.grid) and len(set(best)) > 1:
            out.append(scheduled(method, ranges(list(si.grid), best)))
    return out


def _expected(p: Prediction) -> dict:
    out = {"output_throughput": _num(p.output_throughput), "p99_e2e_ms": _num(p.p99_e2e_ms)}
    if p.goodput is not None:
        out["goodput"] = _num(p.goodput, 6)
    return out


@dataclass(slots=True)
class FamilyMemo:
    """What a family × GPU's shards share: the scorer's cache, the filled cells (:func:`_candidate_cells`) and
    each measured cell's rate (:func:`shard_schedules`). All bounded by the store's cells, not the trace."""

    scores: ScoreCache = field(default_factory=ScoreCache)
    filled: dict = field(default_factory=dict)
    rates: dict = field(default_factory=dict)


def _score_shard(m: Matrix, si: ShardInput, choices: list[Choice], store: list[str], opts: RescoreOptions,
                 factors: dict[str, float], memo: FamilyMemo
                 ) -> tuple[list[Choice], list[Prediction], list[str], str | None]:
    """Score every candidate at the operating point of the reference config (the default, else none).

    ``memo``: what the family × GPU's shards share."""
    dep = fill.deployment(m.family, m.gpu)
    choices = [*choices, *shard_schedules(m, si, store, memo.rates)]
    needed = set(np.unique(si.wi).tolist())
    cells = {ch: _candidate_cells(m, ch, si, needed, store, factors, memo.filled) for ch in choices}
    prime(memo.scores, (c for per_ch in cells.values() if per_ch for per_w in per_ch for c in per_w),
          int(si.lb.max()) + 1)
    ref = next((ch for ch in (opts.default, Choice("none", 0), *choices) if cells.get(ch) is not None), None)
    if ref is None:
        return [], [], [ch.label for ch in choices], None
    kw = {"workloads": store, "dep": dep, "slo": opts.slo, "n_rep": m.replicates, "cache": memo.scores}
    si, load = collapse(si, score(cells[ref], si, method=ref.method, depth=ref.depth, **kw).load)
    scored = [ch for ch in choices if cells[ch] is not None]
    unscored = [ch.label for ch in choices if cells[ch] is None]
    cands = [Candidate(cells[ch], ch.method, [depth_at(ch.schedule, c) for c in si.grid] if ch.schedule else ch.depth)
             for ch in scored]
    return scored, score_many(cands, si, load=load, **kw), unscored, ref.label


def _gain(metric: Metric, a: float, b: float) -> float:
    return ((a / b) if metric.higher_is_better else (b / a)) * 100 - 100


def rescore(con: duckdb.DuckDBPyConnection, trace: pl.DataFrame | pl.LazyFrame | TraceBuckets,
            opts: RescoreOptions | None = None, meta: dict | None = None,
            matrices: dict[tuple[str, str], Matrix] | None = None) -> dict:
    """The re-scoring JSON document (see module docstring and docs/rescoring.md). ``matrices``: the store's
    :func:`load_matrices` for ``opts``' families and GPUs when the caller has them already (the CLI's cache)."""
    opts = opts or RescoreOptions()
    metric = get_metric(opts.metric)
    if metric.name not in METRICS:
        raise UsageError(f"--metric must be one of {', '.join(METRICS)} for re-scoring")
    b = trace if isinstance(trace, TraceBuckets) else bucketize(trace, opts.shard_by)
    matrices = load_matrices(con, opts.families, opts.gpus) if matrices is None else matrices
    if not matrices:
        raise UsageError("no measured cells for "
                         f"family={','.join(opts.families) or 'any'} gpu={','.join(opts.gpus) or 'any'} in the store")
    trace_wls = sorted(set(b.rows["workload"].to_list()))
    recs, cand_rows, taxes, drifts, warnings, scored_as_all = [], [], [], [], [], {}
    summary = b.summary()
    warnings += workload_source.warnings((meta or {}).get("workload_source"), summary["workload_mix"], b.requests)
    warnings += shard_keys.warnings(b.shard_by, b.has_time, any(s != shard_keys.NO_SHARD for s in b.shards))
    standings = []
    observed = opts.observed or opts.default
    for (family, gpu), m in sorted(matrices.items()):
        store = m.workloads
        standing = default_standing.standing(m, opts.default)
        default_prov: dict[str, float] = {}
        mapping, scored_as = workload_mapping(trace_wls, store)
        scored_as_all.update(scored_as)
        drift = drift_model.compute(b.counters, m, observed, mapping, store)
        factors = drift.factors if drift is not None and opts.acceptance != "benchmark" else {}
        if drift is not None:
            drifts += [{"family": family, "gpu": gpu, **r} for r in drift.rows]
            warnings += [w for w in drift.warnings if w not in warnings]
        choices = sorted({Choice(mm, d) for mm, d in m.choices()} | {opts.default})
        st_default = st_best = 0.0
        memo = FamilyMemo()
        for shard in b.shards:
            si = _shard_input(b, shard, mapping, m, store, opts)
            if si is None:
                warnings.append(f"{family}/{gpu}: shard {shard!r} has no measured load level for its workloads")
                continue
            scored, preds, unscored, ref = _score_shard(m, si, choices, store, opts, factors, memo)
            if not preds:
                warnings.append(f"{family}/{gpu}: no candidate could be scored for shard {shard!r} "
                                f"(unscored: {', '.join(unscored)})")
                continue
            rec, rows = _decide(family, gpu, shard, scored, preds, unscored, metric, opts, si, b, scored_as)
            rec["model"] = m.model
            rec["deploy"] = serve_command(m.model, m.tensor_parallel_size, scored[rec["_winner_index"]],
                                          draft_model=m.draft_models.get(rec["method"]),
                                          draft_models=opts.draft_models,
                                          extras=m.speculative_extras).as_dict()
            own_drafter = bool(m.draft_models.get(rec["method"]) and rec["needs_draft_model"])
            if own_drafter or m.speculative_extras.get(rec["method"]):  # what the benchmark's cells ran with
                drafters = {**m.draft_models, **opts.draft_models} if own_drafter else opts.draft_models
                rec["speculative_config"] = speculative_config(scored[rec["_winner_index"]], drafters,
                                                               m.speculative_extras)
                rec["vllm_args"] = vllm_args(rec["speculative_config"])
                rec["needs_draft_model"] = rec["needs_draft_model"] and not own_drafter
            rec["load"]["reference"] = ref
            recs.append(rec)
            cand_rows += rows
            if opts.default in scored:
                for k, v in preds[scored.index(opts.default)].provenance.items():
                    default_prov[k] = default_prov.get(k, 0.0) + v * rec["requests"]
                st_default += preds[scored.index(opts.default)].server_s
                st_best += preds[rec.pop("_winner_index")].server_s
            rec.pop("_winner_index", None)
        total = sum(default_prov.values())
        standing["scored"] = total > 0
        standing["provenance"] = {k: round(v / total, 6) for k, v in sorted(default_prov.items())} if total else {}
        standings.append(standing)
        if st_best > 0 and st_default > 0:
            taxes.append({"family": family, "gpu": gpu, "output_throughput_gain_pct": _num(
                (st_default / st_best - 1) * 100, 2)})
    warnings += default_standing.warnings(standings)
    backends = sorted({be for m in matrices.values() for be in m.backends})
    return {
        "trace": {**(meta or {}), **summary, "workload_scored_as": scored_as_all},
        "default": {"method": opts.default.method, "depth": opts.default.depth},
        "default_status": standings,
        "metric": metric.name, "higher_is_better": metric.higher_is_better,
        "slo": {"ttft_ms": opts.slo[0], "tpot_ms": opts.slo[1]} if opts.slo else None,
        "load": {"source": "given" if opts.concurrency is not None else
                 ("arrival_rate" if b.has_time else "assumed"), "replicas": opts.replicas,
                 "concurrency": opts.concurrency},
        "recommendations": recs, "candidates": cand_rows, "tax": taxes,
        "acceptance": {"source": "observed counters" if any(d for d in drifts) and opts.acceptance != "benchmark"
                       else "benchmark", "observed_config": observed.label if drifts else None, "drift": drifts},
        "backends": backends, "simulated": "sim" in backends, "warnings": warnings,
    }


def _static_vs_scheduled(scored: list[Choice], values: np.ndarray, reps: np.ndarray, metric: Metric, w: int
                         ) -> dict | None:
    """The best static and the best scheduled candidate of a shard, and the schedule's gain with its interval
    (paired replicates); None when the shard had no schedule candidate."""
    sign = 1.0 if metric.higher_is_better else -1.0
    score_ = np.where(np.isfinite(values), sign * values, -np.inf)
    sched = [j for j, ch in enumerate(scored) if ch.schedule]
    static = [j for j, ch in enumerate(scored) if not ch.schedule]
    if not sched or not static:
        return None
    js, jt = max(sched, key=lambda j: score_[j]), max(static, key=lambda j: score_[j])
    ci = None
    if reps.size:
        with np.errstate(invalid="ignore", divide="ignore"):
            ratio = reps[js] / reps[jt] if metric.higher_is_better else reps[jt] / reps[js]
        ci = [_num(x * 100 - 100, 2) for x in interval(ratio * 1.0)]
    return {"static": {"method": scored[jt].method, "depth": scored[jt].depth, "value": _num(values[jt])},
            "scheduled": {"method": scored[js].method, "schedule": [list(r) for r in scored[js].schedule],
                          "value": _num(values[js])},
            "gain_pct": _num(_gain(metric, values[js], values[jt]), 2), "gain_ci_pct": ci,
            "chosen": "scheduled" if scored[w].schedule else "static",
            "rule": f"the schedule is chosen only when no static depth is tied with it and it gains ≥ "
                    f"{SCHEDULE_MARGIN_PCT:g} % (practical equivalence)"}


def _decide(family: str, gpu: str, shard: str, scored: list[Choice], preds: list[Prediction], unscored: list[str],
            metric: Metric, opts: RescoreOptions, si: ShardInput, b: TraceBuckets, scored_as: dict[str, str]
            ) -> tuple[dict, list[dict]]:
    """The winner rule on one shard's candidates → its recommendation and its candidate rows."""
    values = np.array([getattr(p, metric.name) for p in preds], dtype=float)  # None (no SLO) → NaN
    reps = np.stack([p.reps.get(metric.name, np.full(0, np.nan)) for p in preds])
    d = decide(values, reps, metric)
    w = d.order[0]
    if scored[w].schedule:  # a schedule is worth its moving parts only when it beats every static depth clearly
        static = [j for j in d.order if not scored[j].schedule and np.isfinite(values[j])]
        if static and (static[0] in d.tied or _gain(metric, values[w], values[static[0]]) < SCHEDULE_MARGIN_PCT):
            w = static[0]
    win, wp = scored[w], preds[w]
    di = scored.index(opts.default) if opts.default in scored else None
    gain = gain_ci = None
    if di is not None and np.isfinite(values[di]) and values[di]:
        gain = _gain(metric, values[w], values[di])
        if reps.size:
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = reps[w] / reps[di] if metric.higher_is_better else reps[di] / reps[w]
            gain_ci = [_num(x * 100 - 100, 2) for x in interval(ratio * 1.0)]
    ru = d.order[1] if len(d.order) > 1 else None
    config = speculative_config(win, opts.draft_models)
    shard_wls = sorted({tw for tw in b.shard_rows(shard)["workload"].unique().to_list()})
    rec = {
        "family": family, "gpu": gpu, "shard": shard, "requests": int(si.n_t.sum() + 0.5),
        "method": win.method, "depth": win.depth, "gain_vs_default_pct": _num(gain, 2), "gain_ci_pct": gain_ci,
        # the gain in words with its certainty: "+12 % [+3, +20] vs mtp·3 (default)" or "not separable from …"
        "gain_vs_default_text": ("the default is the winner" if di == w else
                                 gain_text(gain, gain_ci if gain_ci and gain_ci[0] is not None else None,
                                           f"{scored[di].label} (default)") if di is not None else None),
        "expected": _expected(wp),
        "default_expected": _expected(preds[di]) if di is not None else None,
        # where the default's numbers came from (share of requests per cell provenance); the winner's is below
        "default_provenance": preds[di].provenance if di is not None else None,
        "speculative_config": config, "vllm_args": vllm_args(config),
        "needs_draft_model": needs_draft_model(win, opts.draft_models),
        "clear": d.clear, "p_best": _num(d.p_best[w]) if d.p_best[w] is not None else None,
        "tied": [] if d.clear else [{"method": scored[j].method, "depth": scored[j].depth,
                                     "label": scored[j].label, "value": _num(values[j]),
                                     "schedule": [list(r) for r in scored[j].schedule] or None,
                                     "p_best": _num(d.p_best[j]) if d.p_best[j] is not None else None}
                                    for j in d.tied],
        "label": win.label,
        "keep_default": di is not None and di in d.tied,
        "runner_up": {"method": scored[ru].method, "depth": scored[ru].depth, "value": _num(values[ru])}
        if ru is not None else None,
        "load": {"mean_concurrency": _num(wp.mean_concurrency, 2), "saturated_share": _num(wp.saturated_share),
                 "grid": si.grid},
        "scored_as": {tw: scored_as.get(tw) for tw in shard_wls}, "provenance": wp.provenance,
        # where the model's numbers for the winner came from (per workload of the shard; see model_provenance)
        "model_provenance": {wl: model_provenance.provenance(win.method, family, wl, win.depth)
                             for wl in sorted({scored_as.get(tw) or tw for tw in shard_wls})},
        "unscored": unscored,
        "schedule": [list(r) for r in win.schedule] if win.schedule else None,
        "static_vs_scheduled": _static_vs_scheduled(scored, values, reps, metric, w),
        "_winner_index": w,
    }
    rows = []
    for j, (ch, p) in enumerate(zip(scored, preds, strict=True)):
        lo, hi = d.intervals[j]
        rows.append({"family": family, "gpu": gpu, "shard": shard, "method": ch.method, "depth": ch.depth,
                     "schedule": [list(r) for r in ch.schedule] if ch.schedule else None, "label": ch.label,
                     **_expected(p), "value": _num(values[j]), "ci_low": _num(lo), "ci_high": _num(hi),
                     "mean_concurrency": _num(p.mean_concurrency, 2),
                     "measured_share": _num(p.provenance.get("measured", 0.0)),
                     "is_default": ch == opts.default, "is_winner": j == w, "tied": j in d.tied,
                     "p_best": _num(d.p_best[j]) if d.p_best[j] is not None else None})
    return rec, rows
