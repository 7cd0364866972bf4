"""``python -m analysis winners|curve|...`` — the analysis command line (DESIGN's CLI contract).

Subcommands are listed in :data:`COMMANDS` (name → (add_arguments, run, help); re-scoring and run comparison
live in analysis/cli_rescore.py and cli_compare.py); each prints one JSON
document with ``--json`` and a short table otherwise. Exit codes: 0 ok, 2 bad input/usage, 1 unexpected,
3 (compare) when a winner changed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from analysis.cli_compare import COMMANDS as compare_commands
from analysis.cli_rescore import COMMANDS as rescore_commands
from analysis.metrics import METRICS
from ingest.cli import Command
from ingest.cli import build_parser as build_parser_for
from ingest.errors import InputError, UsageError


def _open(args: argparse.Namespace):
    """Analysis only reads: an explicit --db must exist (the default store is built on first use)."""
    from ingest import store

    if args.db is not None and not Path(args.db).exists():
        raise UsageError(f"{args.db}: no such store")
    if args.db is None and store.default_db_path().exists():
        return store.connect(None, read_only=True)
    return store.connect(args.db, read_only=args.db is not None)


def _winners_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--metric", default="output_throughput", choices=list(METRICS))
    p.add_argument("--gpu", action="append", default=[], help="repeatable")
    p.add_argument("--family", action="append", default=[], help="repeatable")
    p.add_argument("--workload", action="append", default=[], help="repeatable")
    p.add_argument("--method", action="append", default=[], help="repeatable")
    p.add_argument("--concurrency", action="append", type=int, default=[], help="repeatable")
    p.add_argument("--depth-min", type=int, default=0)
    p.add_argument("--depth-max", type=int, default=64)
    p.add_argument("--backend", action="append", default=[], choices=["sim", "vllm", "import"])
    p.add_argument("--run", action="append", default=[], help="restrict to these run ids")
    p.add_argument("--slo-ttft-ms", type=float, default=2000.0, help="goodput SLO: TTFT ≤ this")
    p.add_argument("--slo-tpot-ms", type=float, default=50.0, help="goodput SLO: TPOT ≤ this")
    p.add_argument("--best-depth", action="store_true", help="compare each method at its best depth")


def _winners(args: argparse.Namespace) -> int:
    from analysis.frames import Filters
    from analysis.winners import winners

    f = Filters(gpus=tuple(args.gpu), families=tuple(args.family), workloads=tuple(args.workload),
                methods=tuple(args.method), concurrency=tuple(args.concurrency), depth_min=args.depth_min,
                depth_max=args.depth_max, runs=tuple(args.run), backends=tuple(args.backend))
    with _open(args) as con:
        res = winners(con, args.metric, f, slo_ttft_ms=args.slo_ttft_ms, slo_tpot_ms=args.slo_tpot_ms,
                      best_depth_per_method=args.best_depth)
    if not res["cells"]:
        raise UsageError("no cells match these filters")
    if args.json:
        print(json.dumps(res))
        return 0
    if res["simulated"]:
        print("SIMULATED data (backend=sim): calibrated model output, not measurements")
    for c in res["cells"]:
        w = c["winner"]
        verdict = "clear" if c["clear"] else "tie: " + ", ".join(f"{t['method']}:{t['depth']}" for t in c["tied"])
        whole = (f"  (whole window {w['whole_window_value']:.3f}"
                 f"{'; steady window not used: ' + w['steady_fallback'] if w.get('steady_fallback') else ''})"
                 if w.get("whole_window_value") is not None else "")
        edge = f"  [{c['grid_edge']['text']}]" if c.get("grid_edge") else ""
        print(f"{c['gpu']:<7} {c['family']:<8} {c['workload']:<10} c={c['concurrency']:<4} "
              f"{w['method']}:{w['depth']:<2} {w['value']:>10.3f}  {verdict}{whole}{edge}")
    return 0


def _curve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--family", required=True)
    p.add_argument("--method", required=True)
    p.add_argument("--workload", required=True)
    p.add_argument("--gpu", default=None)
    p.add_argument("--concurrency", type=int, default=None)


def _curve(args: argparse.Namespace) -> int:
    from analysis.curves import curve

    with _open(args) as con:
        res = curve(con, args.family, args.method, args.workload, args.gpu, args.concurrency)
    if not res["points"]:
        raise UsageError(f"no cells for family={args.family} method={args.method} workload={args.workload}")
    if args.json:
        print(json.dumps(res))
    else:
        if res["simulated"]:
            print("SIMULATED data (backend=sim): calibrated model output, not measurements")
        for p in res["points"]:
            print(f"{p['gpu']:<7} c={p['concurrency']:<4} depth={p['depth']}  τ={p['acceptance_length']}  "
                  f"rate={p['acceptance_rate']}  tok/s={p['output_throughput']} "
                  f"(whole window {p['whole_window_output_throughput']})  [{p['backend']}]")
    return 0


COMMANDS: dict[str, Command] = {
    "winners": (_winners_args, _winners, "winner (method, depth) per GPU × family × workload × load"),
    "curve": (_curve_args, _curve, "acceptance and throughput by depth for one method"),
    **rescore_commands,
    **compare_commands,
}


def build_parser() -> argparse.ArgumentParser:
    return build_parser_for("python -m analysis", "Winners, curves, re-scoring and drift over the store.", COMMANDS)


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command][1](args)
    except (InputError, UsageError) as exc:
        print(exc.one_line(), file=sys.stderr)
        return 2
    except ValueError as exc:
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


def _run() -> int:
    try:
        return main()
    except BrokenPipeError:  # `... | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(_run())
