"""``spectune tune`` — race a matrix's candidates in rounds (runner.tune) and print each group's pick with its
chance of being best and the command to deploy it.

JSON (``--json``): tune_id, gpu_hours, gpu_hours_full_grid, share_of_full_grid, rounds, requests, round_log,
budget_stop, groups: [{gpu, family, model, workload, concurrency, winner: {method, depth, mode, value, p_best},
p_best, verdict, pick: {…, reason, deploy}, candidates, candidates_left, screened, dropped, stopped}], schedules:
[{gpu, family, model, workload, method, schedule, raced, note, predicted: {gain_pct, ci, static_depth}, measured:
{gain_pct, ci, loads: [{concurrency, value, requests, static, best_fixed, picked}]}, verdict}] (docs/tune.md).
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
from pathlib import Path

from analysis import derived
from ingest.errors import UsageError
from runner.execute import RunInterrupted
from runner.matrix import load_matrix
from runner.progress import progress_display
from runner.signals import stop_on_terminate
from runner.trace_shards import read_shards, trace_summary, tune_shards
from runner.tune import SCREEN_AT, TuneOptions, tune
from runner.workloads import resolve_source
from spectune.parser import world_number


def budget_hours(text: str) -> float:
    """``--budget-gpu-hours H``: a positive, finite number of GPU-hours."""
    value = float(text)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(text)
    return value


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--matrix", required=True, type=Path)
    p.add_argument("--trace", type=Path, default=None,
                   help="your traffic trace: race per shard on its request lengths and load (docs/tune.md)")
    p.add_argument("--backend", choices=["sim", "vllm"], default="sim")
    p.add_argument("--world", type=world_number, default=None, metavar="N",
                   help="sim: measure world N, one fixed draw of the model's parameters (docs/tune.md)")
    p.add_argument("--budget-gpu-hours", type=budget_hours, default=None, metavar="H",
                   help="stop before a round that would spend more than H GPU-hours in all")
    p.add_argument("--resume", action="store_true", help="continue the newest tune of this matrix (and world)")
    p.add_argument("--ray", default=None, metavar="ADDRESS|auto", help="fan server configs out over a Ray cluster")
    p.add_argument("--no-screen", action="store_true",
                   help="measure every candidate (skip the model's screen of candidates without a chance)")
    p.add_argument("--no-schedule", action="store_true",
                   help="do not race a depth schedule predicted to beat the best fixed depth (docs/tune.md)")
    p.add_argument("--db", type=Path, default=None, help="store path (default data/spectune.duckdb or SPECTUNE_DB)")
    p.add_argument("--json", action="store_true", help="print one JSON document, no progress display")


def _note(text: str) -> None:
    print(text, file=sys.stderr)


def _options(args: argparse.Namespace) -> TuneOptions:
    if args.world is not None and args.backend != "sim":
        raise UsageError("--world needs --backend sim")
    if args.ray and args.trace is not None:
        raise UsageError("--trace runs its rounds locally for now; it cannot be combined with --ray (docs/tune.md)")
    return TuneOptions(backend=args.backend, world=args.world, db=args.db, budget_gpu_hours=args.budget_gpu_hours,
                       resume=args.resume, screen_at=0.0 if args.no_screen else SCREEN_AT, ray=args.ray,
                       schedules=not args.no_schedule)


def _tune(args: argparse.Namespace) -> int:
    opts = _options(args)
    matrix = load_matrix(args.matrix)
    for wl in matrix.workloads:  # what a run would refuse at its start, before anything is written
        resolve_source(wl, matrix.path.parent)
    if args.trace is not None and args.backend != "sim":
        raise UsageError("--trace: the shards' lengths are replayed on the sim backend for now (docs/tune.md)")
    shards = read_shards(args.trace, matrix) if args.trace is not None else None  # bad trace: before any write
    try:
        with stop_on_terminate(), progress_display(quiet=args.json) as progress:
            if shards is not None:
                result = tune_shards(matrix, shards, opts, progress=progress, notify=_note)
            else:
                result = tune(matrix, opts, progress=progress, notify=_note)
    except RunInterrupted as exc:
        why = signal.Signals(exc.signum).name if exc.signum else "interrupted"
        print(f"error: {why}: tune stopped in run {exc.run_id}, finished cells kept; continue with the same "
              f"command and --resume", file=sys.stderr)
        return 128 + (exc.signum or signal.SIGINT)
    doc = result.as_dict()
    if shards is not None:
        doc["trace"] = trace_summary(shards)
    if args.json:
        print(json.dumps(doc))
        return 0
    share = doc["share_of_full_grid"]
    print(f"tune {doc['tune_id']}: {doc['rounds']} round(s), ~{doc['gpu_hours']:.2f} GPU-hours "
          f"(full grid ~{doc['gpu_hours_full_grid']:.2f}" + (f", {share * 100:.0f} %" if share is not None else "")
          + ")" + (f"; world {opts.world} (simulated)" if opts.world is not None else ""))
    if doc["budget_stop"]:
        print(f"  stopped: {doc['budget_stop']}")
    for g in doc["groups"]:
        what = f"shard {g['shard']}" if g.get("shard") is not None else g["workload"]
        where = f"{g['family']} ({g['model']}) @ {g['gpu']}, {what}, concurrency {g['concurrency']}"
        pick = g.get("pick")
        if not pick:
            print(f"{where}: {g['verdict']}")
            continue
        name = pick["method"] if pick["method"] == "none" else f"{pick['method']}·{pick['depth']}"
        mode = "" if pick["mode"] == "fixed" else f" ({pick['mode']})"
        p = f"p_best {pick['p_best']:.2f}" if pick.get("p_best") is not None else "p_best unknown"
        print(f"{where}: pick {name}{mode} — {g['verdict']}, {p}; {pick['reason']}; "
              f"{g['candidates_left']} of {g['candidates']} candidates left ({g['stopped']})")
        if pick.get("deploy"):
            print(f"  deploy: {pick['deploy']['command']}")
    for s in doc.get("schedules", []):
        _print_schedule(s)
    return 0


def _pct(x: float | None) -> str:
    return "?" if x is None else f"{x:+.1f} %"


def _print_schedule(s: dict) -> None:
    """One predicted schedule: predicted gain over the static depth, then per load measured against it."""
    ranges = ", ".join(f"{a}–{b}: {k}" for a, b, k in s["schedule"])
    pred, meas = s["predicted"], s["measured"]
    ci = pred["ci"]
    print(f"schedule {s['method']} [{ranges}] for {s['family']} @ {s['gpu']}, {s['workload']}: predicted "
          f"{_pct(pred['gain_pct'])} over {s['method']}·{pred['static_depth']} (95 % CI {_pct(ci[0])} … "
          f"{_pct(ci[1])}), measured {_pct(meas['gain_pct'])} — {s['verdict']}" + (f" ({s['note']})" if s["note"]
                                                                                   else ""))
    for load in meas["loads"]:
        if load["value"] is None:
            continue
        best = load["best_fixed"]
        print(f"  concurrency {load['concurrency']}: schedule {load['value']:.1f} vs {s['method']}·"
              f"{load['static']['depth']} {load['static']['value'] or float('nan'):.1f}, best fixed "
              f"{s['method']}·{best['depth']} {best['value'] or float('nan'):.1f}"
              + (" — picked" if load["picked"] else ""))


def run(args: argparse.Namespace) -> int:
    code = _tune(args)
    if code == 0:  # the store was written: what answers need is derived now, in this process (analysis/derived.py)
        derived.after_write(args.db)
    return code
