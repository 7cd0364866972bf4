"""Honest baselines for winners: pandas, polars and plain DuckDB SQL over the raw request rows, each computing
the same per-cell moments and the same interval method as spectune (issue 16 item 5).

Owns :func:`winners_from_rows` (one engine) and the shared arithmetic after the scan. What spectune computes
for the default metric (output throughput), and so what every baseline computes here:

* per cell, over its successful requests (``ok`` true or unknown): the point estimate Σ output tokens / window
  (the cell's window from the cells table), and 200 Poisson-bootstrap replicates of it by the ratio estimator
  (point × (Σw·tokens / Σw·e2e) / (Σtokens / Σe2e); ingest/cellstats.py ``bootstrap_arrays``);
* a cell of more than 4,096 requests (``cellstats.EXACT_MAX_N``) takes the bootstrap's normal limit: the
  replicate sums are mean + L·z with L from the eigendecomposition of the Gram matrix Σ x xᵀ of the summed
  quantities x = (tokens, e2e[, drafted, accepted]) — the drafted/accepted rows are part of x when every request
  of a speculative cell carries them, as in spectune (the rows change L's shape, hence the draws);
* the winner rule of analysis/winners.py (p_best): best point per group (GPU × family × workload × load); each
  candidate's p_best is the share of replicate columns (paired by index) in which it is the best (a tie in a
  column splits it; NaN never wins; an all-NaN column is ignored); the winner is clear when its p_best ≥ 0.95
  (and every other candidate has a finite replicate).

So the only thing an engine does is **the scan**: from the raw rows to per cell n, Σx and the 10 distinct
entries of Σ x xᵀ (the "per-cell moments"). The normal draws use each cell's seed (``cellstats.seed_for``) in
the same order as spectune, so every engine must reproduce spectune's replicates to rounding and therefore its
verdicts, group by group; :func:`benchmarks.baseline_pandas.agreement` checks it. Not covered: cells of at most
4,096 requests, which spectune bootstraps exactly (one weight per request and replicate) — their replicates
depend on every request's weight, not on moments; :func:`winners_from_rows` refuses such a store rather than
compare different algorithms. Every cell of a generated store of ≥ 12.1 M rows is above the threshold.

What each engine reads: pandas and polars the export's Parquet files (``requests.parquet``, ``cells.parquet``;
pyarrow / polars' own reader), DuckDB SQL the store's ``requests`` and ``cells`` tables (the file spectune's
winners reads, where it finds the same cells with their replicates already stored).

    python benchmarks/baselines.py {pandas,polars,duckdb} SOURCE --json   # SOURCE: export folder or store

``--json`` prints the groups' winners with ``compute_s`` / ``compute_cpu_s``: the scan and the rule alone,
after the imports (benchmarks/scaling.py times the whole process as the end-to-end figure).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ingest.cellstats import BOOTSTRAP_REPLICATES, EXACT_MAX_N, seed_for

ENGINES = ("pandas", "polars", "duckdb")
# per model, as analysis.winners.GROUP (its dataset is left out: benchmark stores hold none)
GROUP = ("gpu", "family", "model", "workload", "concurrency")
CELL_COLUMNS = ("run_id", "cell_id", "method", "depth", *GROUP, "window_s")
X = ("x0", "x1", "x2", "x3")  # tokens, e2e (both 0 where e2e is missing), drafted, accepted (missing → 0)
PAIRS = tuple((i, j) for i in range(4) for j in range(i, 4))
MOMENTS = ("run_id", "cell_id", "n", "tok", "drafted_missing", *[f"s{i}" for i in range(4)],
           *[f"g{i}{j}" for i, j in PAIRS])


# ---- the scan, one per engine: raw rows → per-cell moments --------------------------------------------------

def parquet_files(export: Path, table: str) -> list[Path]:
    """``export/TABLE.parquet``, or one per part of a multi-part export (``export/partNN/``, generate.py)."""
    one = export / f"{table}.parquet"
    return [one] if one.exists() else sorted(export.glob(f"part*/{table}.parquet"))


def moments_pandas(export: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    import pandas as pd

    # one file at a time (a part of a big export is a day's file): per-cell sums add up across files
    out = pd.concat([_pandas_file(pd, f) for f in parquet_files(export, "requests")])
    out = out.groupby(["run_id", "cell_id"], sort=False).sum().reset_index()
    cells = pd.concat([pd.read_parquet(f, columns=[*CELL_COLUMNS, "status"]) for f in parquet_files(export, "cells")])
    cells = cells[cells["status"] == "ok"]
    return {c: out[c].to_numpy() for c in MOMENTS}, {c: cells[c].to_numpy() for c in CELL_COLUMNS}


def _pandas_file(pd, path: Path):
    req = pd.read_parquet(path, columns=["run_id", "cell_id", "output_tokens", "e2e_ms", "drafted_tokens",
                                         "accepted_tokens", "ok"])
    req = req[req["ok"].fillna(True).astype(bool)]
    tok = req["output_tokens"].astype(float).fillna(0.0)
    e2e = req["e2e_ms"].astype(float)
    fin = np.isfinite(e2e)
    x = {"x0": tok.where(fin, 0.0), "x1": e2e.where(fin, 0.0), "x2": req["drafted_tokens"].astype(float),
         "x3": req["accepted_tokens"].astype(float).fillna(0.0)}
    frame = pd.DataFrame({"run_id": req["run_id"], "cell_id": req["cell_id"], "tok": tok,
                          "drafted_missing": req["drafted_tokens"].isna().astype(np.int64),
                          **{f"s{i}": x[X[i]] for i in range(4)},
                          **{f"g{i}{j}": x[X[i]] * x[X[j]] for i, j in PAIRS}})
    g = frame.groupby(["run_id", "cell_id"], sort=False)
    return g.sum(min_count=1).join(g.size().rename("n")).reset_index()


def moments_polars(export: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    import polars as pl

    fin = pl.col("e2e_ms").is_not_null() & pl.col("e2e_ms").is_finite()
    tok = pl.col("output_tokens").cast(pl.Float64).fill_null(0.0)
    x = [pl.when(fin).then(tok).otherwise(0.0), pl.when(fin).then(pl.col("e2e_ms")).otherwise(0.0),
         pl.col("drafted_tokens").cast(pl.Float64), pl.col("accepted_tokens").cast(pl.Float64).fill_null(0.0)]
    out = (pl.scan_parquet(parquet_files(export, "requests"))
           .filter(pl.col("ok").fill_null(True))
           .group_by("run_id", "cell_id")
           .agg(pl.len().alias("n"), tok.sum().alias("tok"),
                pl.col("drafted_tokens").null_count().alias("drafted_missing"),
                *[x[i].sum().alias(f"s{i}") for i in range(4)],
                *[(x[i] * x[j]).sum().alias(f"g{i}{j}") for i, j in PAIRS])
           .collect(engine="streaming"))
    cells = pl.concat([pl.read_parquet(f, columns=[*CELL_COLUMNS, "status"]) for f in parquet_files(export, "cells")
                       ]).filter(pl.col("status") == "ok")
    return {c: out[c].to_numpy() for c in MOMENTS}, {c: cells[c].to_numpy() for c in CELL_COLUMNS}


_X_SQL = ("CASE WHEN isfinite(e2e_ms) THEN coalesce(output_tokens, 0) ELSE 0 END",
          "CASE WHEN isfinite(e2e_ms) THEN e2e_ms ELSE 0 END", "drafted_tokens", "coalesce(accepted_tokens, 0)")
_MOMENTS_SQL = f"""
SELECT run_id, cell_id, count(*) AS n, sum(coalesce(output_tokens, 0))::DOUBLE AS tok,
       count(*) - count(drafted_tokens) AS drafted_missing,
       {", ".join(f"sum({x})::DOUBLE AS s{i}" for i, x in enumerate(_X_SQL))},
       {", ".join(f"sum(({_X_SQL[i]}) * ({_X_SQL[j]}))::DOUBLE AS g{i}{j}" for i, j in PAIRS)}
FROM requests WHERE coalesce(ok, TRUE) GROUP BY run_id, cell_id
"""


def moments_duckdb(db: Path) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        out = con.execute(_MOMENTS_SQL).fetchnumpy()
        cells = con.execute(f"SELECT {', '.join(CELL_COLUMNS)} FROM cells "
                            "WHERE status = 'ok' AND synthetic_rates IS NULL").fetchnumpy()
    finally:
        con.close()
    return {c: np.asarray(out[c]) for c in MOMENTS}, {c: np.asarray(cells[c]) for c in CELL_COLUMNS}


SCANS = {"pandas": moments_pandas, "polars": moments_polars, "duckdb": moments_duckdb}


# ---- shared after the scan: replicates from moments, the winner rule ----------------------------------------

def replicates(m: dict[str, np.ndarray], i: int, depth: int, point: float, signs: np.ndarray | None = None
               ) -> np.ndarray:
    """Cell ``i``'s 200 throughput replicates from its moments (cellstats' normal limit, the cell's seed).

    Equal to spectune's stored replicates up to the sign LAPACK gives each eigenvector: Gram matrices equal to
    ~1e-15 (sums in another order) can come back with a column of L reversed — the same normal draws, an
    equally valid replicate set (about 3 % of cells at 12.1 M). ``signs`` (±1 per column) reverses columns."""
    k = 4 if depth > 0 and m["drafted_missing"][i] == 0 and m["s2"][i] > 0 else 2
    s = np.array([m[f"s{a}"][i] for a in range(k)])
    gram = np.empty((k, k))
    for a, b in PAIRS:
        if b < k:
            gram[a, b] = gram[b, a] = m[f"g{a}{b}"][i]
    rng = np.random.default_rng(seed_for(str(m["cell_id"][i])))
    lam, vec = np.linalg.eigh(gram)
    root = vec * np.sqrt(np.clip(lam, 0.0, None))
    if signs is not None:
        root = root * signs[:k]
    sums = s[:, None] + np.einsum("ij,jb->ib", root, rng.standard_normal((k, BOOTSTRAP_REPLICATES)))
    with np.errstate(invalid="ignore", divide="ignore"):
        return point * (sums[0] / sums[1]) / (s[0] / s[1])


def decide(points: np.ndarray, reps: np.ndarray, clear_at: float = 0.95) -> tuple[int, bool]:
    """(winner index, clear) by the p_best rule: the best point estimate is clear when it is the best in at least
    ``clear_at`` of the replicate columns (ties in a column split it, NaN never wins, empty columns ignored)."""
    finite = np.isfinite(points)
    order = np.argsort(-np.where(finite, points, -np.inf), kind="stable")
    w = int(order[0])
    if finite.sum() <= 1:
        return w, True
    r = np.where(finite[:, None], reps, np.nan)
    ok = np.isfinite(r)
    if not ok[w].any() or any(finite[c] and not ok[c].any() for c in range(len(points))):
        return w, False  # a candidate without replicates cannot be ruled out
    cols = ok.any(axis=0)
    s = np.where(ok, r, -np.inf)[:, cols]
    win = (s == s.max(axis=0)) & ok[:, cols]
    p_best = (win / win.sum(axis=0)).sum(axis=1) / cols.sum()
    return w, bool(p_best[w] >= clear_at - 1e-12)


def verdicts(moments: dict[str, np.ndarray], cells: dict[str, np.ndarray]) -> dict[tuple, dict]:
    """{(gpu, family, workload, concurrency): {method, depth, value, clear}} from per-cell moments."""
    index = {(str(r), str(c)): i for i, (r, c) in enumerate(zip(moments["run_id"], moments["cell_id"], strict=True))}
    small = int((moments["n"] <= EXACT_MAX_N).sum())
    if small:
        raise ValueError(f"{small} cell(s) of ≤ {EXACT_MAX_N} requests: spectune bootstraps those exactly (one "
                         "weight per request), which per-cell moments cannot reproduce — use a store of larger cells")
    groups: dict[tuple, list[tuple[int, float, np.ndarray]]] = {}
    for j in range(len(cells["cell_id"])):
        i = index.get((str(cells["run_id"][j]), str(cells["cell_id"][j])))
        window = float(cells["window_s"][j])
        if i is None or not window > 0:
            continue
        point = float(moments["tok"][i]) / window
        key = tuple(cells[c][j].item() if hasattr(cells[c][j], "item") else cells[c][j] for c in GROUP)
        groups.setdefault(key, []).append((j, point, replicates(moments, i, int(cells["depth"][j]), point)))
    out = {}
    for key, cands in sorted(groups.items()):
        points = np.array([p for _, p, _ in cands])
        w, clear = decide(points, np.vstack([r for _, _, r in cands]))
        j = cands[w][0]
        out[key] = {"method": str(cells["method"][j]), "depth": int(cells["depth"][j]), "value": float(points[w]),
                    "clear": clear}
    return out


def winners_from_rows(engine: str, source: str | Path) -> dict[tuple, dict]:
    """The winners of ``source`` (an export folder for pandas/polars, a store for duckdb) by ``engine``."""
    return verdicts(*SCANS[engine](Path(source)))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("engine", choices=ENGINES)
    ap.add_argument("source", type=Path, help="export folder (pandas, polars) or store file (duckdb)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    c0, t0 = time.process_time(), time.perf_counter()
    res = winners_from_rows(args.engine, args.source)
    took = {"compute_s": time.perf_counter() - t0, "compute_cpu_s": time.process_time() - c0}
    groups = [{**dict(zip(GROUP, k, strict=True)), **v} for k, v in res.items()]
    if args.json:  # compute_*: the scan and the rule alone, after imports (the in-process figure)
        print(json.dumps({"engine": args.engine, **took, "groups": groups}))
    else:
        print(f"{len(groups)} groups, {sum(g['clear'] for g in groups)} clear, {took['compute_s']:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
