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


PER_REQUEST_ACCEPTANCE = ("drafted_tokens", "accepted_tokens", "spec_steps", "accepted_per_pos", "step_accepted",
                          "step_drafted")


def measured_without_per_request(db: Path, family: str, gpu: str, extras: dict[str, dict] | None = None) -> str:
    """Re-land every cell of (family, gpu) as a vLLM run whose servers lacked ``--per-request-spec-decode-metrics``
    (``runner run --endpoint`` against a plain fleet): the same requests, with no per-request acceptance, and the
    spec-decode counters over the cell as its only acceptance — through the writer the runner uses
    (store.write_cell), so the cells carry what such a run stores: acceptance_source "counters" and NaN
    acceptance replicates. ``extras``: method → the other speculative-config keys the servers ran with. The
    original cells of (family, gpu) are removed; the new run's id is returned."""
    import json

    import polars as pl

    from ingest import records, sql, store

    run_id = f"counters-only-{family}-{gpu}"
    with store.session(db) as con:
        cells = sql.frame(con, "SELECT * FROM cells WHERE family = ? AND gpu = ? AND status = 'ok'", [family, gpu])
        store.write_run(con, records.RunInfo(run_id=run_id, backend="vllm", source="runner run --endpoint (fleet)"))
        for c in cells.iter_rows(named=True):
            reqs = sql.frame(con, "SELECT * FROM requests WHERE run_id = ? AND cell_id = ? ORDER BY request_index",
                             [c["run_id"], c["cell_id"]])
            counters = None
            if c["depth"] and c["drafts"]:  # the cell's own counter totals; per position from its stored rates
                pos = sql.frame(con, "SELECT acceptance FROM positions WHERE run_id = ? AND cell_id = ? "
                                     "ORDER BY position", [c["run_id"], c["cell_id"]])["acceptance"].to_list()
                counters = records.SpecCounters(
                    drafts=int(c["drafts"]), draft_tokens=int(c["draft_tokens"]),
                    accepted_tokens=int(c["accepted_tokens"]), accepted_per_pos=[round(r * c["drafts"]) for r in pos])
            plain = reqs.drop("run_id", "cell_id").with_columns(
                *[pl.lit(None, dtype=records.REQUEST_SCHEMA[k]).alias(k) for k in PER_REQUEST_ACCEPTANCE])
            key = records.CellKey(method=c["method"], depth=c["depth"], family=family, model=c["model"],
                                  workload=c["workload"], gpu=gpu, concurrency=c["concurrency"])
            extra = (extras or {}).get(c["method"])
            store.write_cell(con, run_id, key, plain, window_s=c["window_s"], gpu_count=c["gpu_count"] or 1,
                             counters=counters,
                             labels={"speculative_extra": json.dumps(extra) if extra else None})
        for table in ("positions", "requests", "cell_bootstrap", "model_draws", "cell_slo_hist", "cells"):
            con.execute(f"DELETE FROM {table} WHERE (run_id, cell_id) IN (SELECT (run_id, cell_id) FROM cells "
                        "WHERE family = ? AND gpu = ? AND run_id <> ?)", [family, gpu, run_id])
    return run_id


NGRAM_MEASURED = {"prompt_lookup_max": 3, "prompt_lookup_min": 2}  # what the fleet's n-gram servers ran with


def counters_only_store(tmp_path_factory, default_db: Path) -> tuple[Path, float]:
    """The default data with Kimi/MI355X measured as a plain fleet measures it (counters only, n-gram with
    ``NGRAM_MEASURED``), built once per test run; and the benchmark's dspark·6 code acceptance there. The watch
    segments: ``seg-same`` at the benchmark, ``seg-low`` at 0.3× (the winner changes), ``seg-f90`` at 0.9×
    (outside the band, same winner), ``seg-tiny`` with a handful of drafts (too few tokens to tell); ``seg-same``
has a config change annotated."""
    import shutil

    from ingest import sql, store
    from tests.conftest import shared_folder

    folder, lock = shared_folder(tmp_path_factory, "counters-only")
    db = folder / "fleet.duckdb"
    with lock:
        if not (folder / "built").exists():
            shutil.copy(default_db, db)
            measured_without_per_request(db, "Kimi", "MI355X", {"ngram": NGRAM_MEASURED})
            bench = _bench(db)
            for name, factor in (("same", 1.0), ("low", 0.3), ("f90", 0.9)):
                t = target(name, f"seg-{name}", "Kimi", "dspark", 6, "MI355X", "code")
                write(db, series(t, bench * factor, seed=1))
            tiny = target("tiny", "seg-tiny", "Kimi", "dspark", 6, "MI355X", "code")
            write(db, series(tiny, bench, n=4, drafts_per_step=2.0, seed=5))
            land.write_to(db, land.Batch(events=[land.Event("same", T0 + 10 * 15, "config_change", "depth 5 → 6")]))
            (folder / "built").write_text("ok")
    with store.session(db, read_only=True) as con:
        assert sql.one(con, "SELECT count(*) FROM cells WHERE acceptance_source = 'counters'")[0] > 0
    return db, _bench(db)


def _bench(db: Path) -> float:
    from ingest import sql, store

    with store.session(db, read_only=True) as con:
        return float(sql.one(con, "SELECT avg(acceptance_rate) FROM cells WHERE family = 'Kimi' AND gpu = 'MI355X' "
                                  "AND workload = 'code' AND method = 'dspark' AND depth = 6")[0])
