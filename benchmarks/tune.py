"""GPU time ``spectune tune`` spends to find the winners, against the full grid and the factorized plan, on simulated
worlds — and how often its pick is right — in one run.

Owns ``tune_gpu_share`` (tune's GPU-hours / the full grid's, per world: both estimated as ``runner plan``
estimates, server starts included), ``tune_correct_share`` (the share of groups whose pick is the world's best or
within the equivalence margin of it) and, as the same-run baselines, the full grid's and the factorized plan's
GPU-hours (``runner plan --strategy full|factorized``). A world (``--world N``) is one fixed draw of the model's
parameters measured with sampling noise only; its **truth** is the same world run with ``--truth-requests`` (3,000)
requests per cell and the winner rule on it (sampling replicates only): the best point estimate, and every
candidate within the margin of it. Tune never sees the truth; its settings are the defaults of runner.tune. The
matrix (default ``runner/matrices/tune-bench.toml``: 2 families × 2 workloads × 2 loads, 29 candidates per group)
and the worlds (default 1, 2, 3) are arguments. Targets (DESIGN): ≤ 20 % of the full grid, ≥ 95 % correct.

    python benchmarks/tune.py [--worlds 1,2,3] [--truth-requests 3000] [--matrix FILE] [--workdir DIR] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import REPO, figure, load_average, machine

MATRIX = REPO / "runner" / "matrices" / "tune-bench.toml"
SHARE_TARGET = 0.20
CORRECT_TARGET = 0.95


def truth(matrix, world: int, requests: int, db: Path) -> dict[tuple, dict]:
    """The world's winners at ``requests`` per cell (built once per world and kept under the workdir)."""
    from analysis.winners import winners
    from ingest import store
    from runner.execute import RunOptions, run_matrix

    if not db.exists():
        part = db.with_suffix(".part.duckdb")
        part.unlink(missing_ok=True)
        run_matrix(dataclasses.replace(matrix, requests_per_cell=requests, requests_per_slot=0),
                   RunOptions(db=part, world=world))
        part.rename(db)
    with store.session(db, read_only=True) as con:
        doc = winners(con, model_error=False)
    return {(c["gpu"], c["family"], c["workload"], c["concurrency"]): c for c in doc["cells"]}


def judge(groups: list[dict], truths: dict[tuple, dict], margin_pct: float) -> list[dict]:
    out = []
    for g in groups:
        t = truths[(g["gpu"], g["family"], g["workload"], g["concurrency"])]
        values = {(c["method"], c["depth"]): c["value"] for c in t["candidates"]}
        best = t["winner"]["value"]
        pick = g.get("pick")
        got = values.get((pick["method"], pick["depth"])) if pick else None
        gap = None if got is None else (best - got) / best * 100
        out.append({"family": g["family"], "workload": g["workload"], "concurrency": g["concurrency"],
                    "pick": None if not pick else f"{pick['method']}:{pick['depth']}",
                    "truth_best": f"{t['winner']['method']}:{t['winner']['depth']}", "gap_pct": gap,
                    "correct": gap is not None and gap <= margin_pct + 1e-9, "verdict": g["verdict"],
                    "stopped": g["stopped"]})
    return out


def run(matrix_path: Path, worlds: list[int], truth_requests: int, workdir: Path, log=print) -> dict[str, Any]:
    from runner.factorized import factorized_plan
    from runner.matrix import load_matrix
    from runner.plan import plan_matrix
    from runner.tune import TuneOptions, tune

    matrix = load_matrix(matrix_path)
    opts = TuneOptions()
    full = fact = 0.0
    per_world = []
    for w in worlds:
        t0 = time.perf_counter()
        log(f"world {w}: truth at {truth_requests} requests per cell")
        truths = truth(matrix, w, truth_requests, workdir / f"truth-{matrix.name}-w{w}-{truth_requests}.duckdb")
        t_truth = time.perf_counter() - t0
        if not full:  # the plans read a store for earlier vLLM runs: the truth's (simulated only: the cost model)
            plan_db = workdir / f"truth-{matrix.name}-w{w}-{truth_requests}.duckdb"
            full = plan_matrix(matrix, plan_db).estimated_gpu_hours
            fact = float(factorized_plan(matrix, plan_db)["estimated_gpu_hours"])  # type: ignore[arg-type]
        db = workdir / f"tune-w{w}.duckdb"
        db.unlink(missing_ok=True)
        log(f"world {w}: tune")
        t1 = time.perf_counter()
        res = tune(matrix, dataclasses.replace(opts, world=w, db=db)).as_dict()
        t_tune = time.perf_counter() - t1
        judged = judge(res["groups"], truths, opts.margin_pct)
        per_world.append({"world": w, "gpu_hours": res["gpu_hours"], "gpu_hours_full_grid": res["gpu_hours_full_grid"],
                          "share": res["share_of_full_grid"], "rounds": res["rounds"], "requests": res["requests"],
                          "correct": sum(j["correct"] for j in judged), "groups": len(judged), "judged": judged,
                          "truth_s": round(t_truth, 1), "tune_s": round(t_tune, 1)})
    shares = [w["share"] for w in per_world]
    groups = sum(w["groups"] for w in per_world)
    correct = sum(w["correct"] for w in per_world)
    tune_hours = sum(w["gpu_hours"] for w in per_world) / len(per_world)
    figures = {
        "tune_gpu_share": figure(shares, unit="share of the full grid's GPU-hours", target=SHARE_TARGET,
                                 tune_gpu_hours_mean=round(tune_hours, 3), full_grid_gpu_hours=round(full, 3),
                                 factorized_gpu_hours=round(fact, 3),
                                 factorized_share=round(fact / full, 4) if full else None,
                                 basis="runner plan's estimate for all three (server starts + cell time)"),
        "tune_correct_share": {**figure([correct / groups], unit="share of groups", target=CORRECT_TARGET,
                                        higher_is_better=True),
                               "groups": groups, "correct": correct,
                               "rule": f"pick's true value within {opts.margin_pct:g} % of the world's best"},
    }
    figures["tune_gpu_share"]["meets_target"] = max(shares) <= SHARE_TARGET
    figures["tune_gpu_share"]["target"] = f"<= {SHARE_TARGET:g} in every world"
    return {"figures": figures, "worlds": per_world,
            "sizes": {"matrix": str(matrix_path), "worlds": worlds, "truth_requests": truth_requests,
                      "cells": len(matrix.cells()), "groups_per_world": per_world[0]["groups"] if per_world else 0,
                      "tune_options": {k: v for k, v in dataclasses.asdict(opts).items()
                                       if isinstance(v, (int, float, str, type(None)))}}}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrix", type=Path, default=MATRIX)
    ap.add_argument("--worlds", default="1,2,3", help="comma-separated world numbers")
    ap.add_argument("--truth-requests", type=int, default=3000)
    ap.add_argument("--workdir", type=Path, default=None, help="keep the truth stores here (reused next time)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    worlds = [int(x) for x in args.worlds.split(",") if x.strip()]
    tmp = None
    if args.workdir is None:
        tmp = Path(tempfile.mkdtemp(prefix="tune-bench-"))
    workdir = args.workdir or tmp
    workdir.mkdir(parents=True, exist_ok=True)
    info = machine()
    try:
        doc = run(args.matrix, worlds, args.truth_requests, workdir,
                  log=(lambda s: print(s, file=sys.stderr)) if args.json else print)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    info["load_avg_end"] = load_average()
    doc["machine"] = info
    if args.json:
        print(json.dumps(doc, indent=1))
    else:
        f = doc["figures"]
        share = f["tune_gpu_share"]
        print(f"tune: {share['median'] * 100:.1f} % of the full grid's GPU-hours (max {share['max'] * 100:.1f} %; "
              f"factorized plan {share['factorized_share'] * 100:.1f} %), "
              f"pick correct in {f['tune_correct_share']['correct']}/{f['tune_correct_share']['groups']} groups")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
