"""Constructed watch samples for analysis tests: a target's cumulative counters at a given acceptance."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from ingest.watch import land
from ingest.watch.exposition import Sample
from ingest.watch.targets import Target

T0 = 1_796_000_000.0


def target(name: str, segment: str, family: str, method: str, depth: int, gpu: str, workload: str,
           gpu_count: int = 1) -> Target:
    return Target(name=name, url="http://127.0.0.1:9/metrics", segment=segment, family=family, method=method,
                  depth=depth, gpu=gpu, gpu_count=gpu_count, workload=workload)


def hist(les: list[float], counts: list[float]) -> dict[float, float]:
    return dict(zip([*les, float("inf")], counts, strict=True))


def series(t: Target, rate: float, *, n: int = 40, step_s: float = 15.0, drafts_per_step: float = 400.0,
           out_per_req: float = 200.0, tpot_s: float = 0.02, seed: int = 0, start: float = T0,
           restart_at: int | None = None) -> list[land.Row]:
    """n samples of cumulative counters whose per-interval acceptance scatters around ``rate``.

    Per-position counts follow an i.i.d. acceptance α with rate = E[accepted]/k; latency histograms put each
    interval's requests around ``tpot_s`` (TPOT) so A/B readouts have something to compare."""
    rng = np.random.default_rng(seed)
    k = t.depth
    alpha = _alpha_for_rate(rate, k)
    cum = {"drafts": 0.0, "draft_tokens": 0.0, "accepted": 0.0, "gen": 0.0, "req": 0.0}
    per_pos = np.zeros(k)
    tpot_les = [0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1]
    e2e_les = [1.0, 2.0, 4.0, 6.0, 8.0, 10.0, 20.0]
    tpot_c = np.zeros(len(tpot_les) + 1)
    e2e_c = np.zeros(len(e2e_les) + 1)
    rows, ps = [], 1.0e9
    for i in range(n):
        if restart_at is not None and i == restart_at:
            cum = dict.fromkeys(cum, 0.0)
            per_pos[:] = 0
            tpot_c[:] = 0
            e2e_c[:] = 0
            ps = 2.0e9
        d = float(rng.poisson(drafts_per_step))
        acc_pos = np.array([rng.binomial(int(d), alpha ** (j + 1)) for j in range(k)], dtype=float)
        acc_pos = np.minimum.accumulate(acc_pos)
        cum["drafts"] += d
        cum["draft_tokens"] += d * k
        cum["accepted"] += acc_pos.sum()
        per_pos += acc_pos
        reqs = float(rng.poisson(d * (1 + acc_pos.sum() / max(d, 1)) / out_per_req) + 1)
        cum["req"] += reqs
        cum["gen"] += reqs * out_per_req
        tp = rng.normal(tpot_s, tpot_s * 0.1, size=int(reqs))
        tpot_c += np.array([(tp <= le).sum() for le in [*tpot_les, np.inf]])
        e2e_c += np.array([(tp * out_per_req <= le).sum() for le in [*e2e_les, np.inf]])
        s = Sample(values={"drafts": cum["drafts"], "draft_tokens": cum["draft_tokens"],
                           "accepted_tokens": cum["accepted"], "generation_tokens": cum["gen"],
                           "prompt_tokens": cum["req"] * 500, "requests_ok": cum["req"]},
                   per_pos=per_pos.tolist(),
                   histograms={"tpot": hist(tpot_les, tpot_c.tolist()), "e2e": hist(e2e_les, e2e_c.tolist()),
                               "ttft": hist([0.1, 1.0], [cum["req"] * 0.9, cum["req"], cum["req"]])},
                   process_start_s=ps)
        rows.append(land.Row(t.name, t, start + i * step_s, s))
    return rows


def _alpha_for_rate(rate: float, k: int) -> float:
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if sum(mid ** (j + 1) for j in range(k)) / k < rate:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def write(db: Path, rows: list[land.Row]) -> None:
    land.write_to(db, land.Batch(rows=rows))


def relabel(t: Target, **kw) -> Target:
    return replace(t, **kw)


def without_model_error(db: Path) -> None:
    """The benchmark as if it had been measured: the simulator's model draws taken out of the replicates. On the
    simulated store itself no alternative can win *clearly* (the model's own error is wider than the drift), so
    the alert is shown on a benchmark whose only uncertainty is sampling, as a measured one's is."""
    from ingest import ddl, store

    with store.session(db) as con:
        metrics = [c for c in ddl.COLUMNS["model_draws"][3:] if c in ddl.COLUMNS["cell_bootstrap"]]
        sets = ", ".join(f"{c} = b.{c} / coalesce(d.{c}, 1.0)" for c in metrics)
        con.execute(f"UPDATE cell_bootstrap AS b SET {sets} FROM model_draws AS d "
                    "WHERE b.run_id = d.run_id AND b.cell_id = d.cell_id AND b.replicate = d.replicate")
        con.execute("DELETE FROM model_draws")
