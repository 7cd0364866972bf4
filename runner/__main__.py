"""``python -m runner plan|run`` — the runner's command line (DESIGN's CLI contract)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ingest.cli import OneLineParser
from ingest.errors import InputError, UsageError


def build_parser() -> argparse.ArgumentParser:
    ap = OneLineParser(prog="python -m runner", description="Plan and run speculative-decoding benchmark matrices.")
    sub = ap.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    plan = sub.add_parser("plan", help="cells, server configs and estimated GPU-hours of a matrix")
    plan.add_argument("--matrix", required=True, type=Path)
    plan.add_argument("--db", type=Path, default=None, help="store for earlier-run estimates (env SPECTUNE_DB)")
    plan.add_argument("--json", action="store_true")
    run = sub.add_parser("run", help="run a matrix and write results to the store")
    run.add_argument("--matrix", required=True, type=Path)
    run.add_argument("--backend", choices=["sim", "vllm"], default="sim")
    run.add_argument("--resume", action="store_true", help="continue the newest run of this matrix; skip done cells")
    run.add_argument("--retry-failed", action="store_true", help="with --resume, also rerun failed cells")
    run.add_argument("--run-id", default=None, help="explicit run id (default: new, or the resumed one)")
    run.add_argument("--ray", default=None, metavar="ADDRESS|auto", help="fan server configs out over a Ray cluster")
    run.add_argument("--endpoint", default=None, help="vllm: attach to a running server instead of launching")
    run.add_argument("--runs-dir", type=Path, default=None,
                     help="vllm: server logs and pidfiles go to RUNS_DIR/<run id>/ (default: <db folder>/runs)")
    run.add_argument("--db", type=Path, default=None, help="store path (default data/spectune.duckdb or SPECTUNE_DB)")
    run.add_argument("--json", action="store_true", help="print one JSON summary, no progress display")
    return ap


def _cmd_plan(args: argparse.Namespace) -> int:
    from runner.matrix import load_matrix
    from runner.plan import plan_matrix

    plan = plan_matrix(load_matrix(args.matrix), args.db)
    if args.json:
        print(json.dumps(plan.as_dict(), indent=2))
    else:
        print(f"{plan.cells} cells in {len(plan.server_configs)} server configs; "
              f"~{plan.estimated_gpu_hours:.1f} GPU-hours ({plan.estimate_sources})")
        for cfg in plan.server_configs:
            print(f"  {cfg['order']:>4}. {cfg['label']:<36} {cfg['cells']:>3} cells  ~{cfg['estimated_s']:.0f} s")
        if plan.adaptive and "requests_saved_pct" in plan.adaptive:
            a = plan.adaptive
            print(f"adaptive stopping (simulated, {a['cells_simulated']} cells, target width "
                  f"{a['target_rel_width']:g}): {a['mean_adaptive_requests_per_cell']:g} requests/cell vs "
                  f"{a['fixed_requests_per_cell']} fixed for equal CI width — {a['requests_saved_pct']:g} % fewer "
                  f"requests, {a['gpu_time_saved_pct']:g} % less GPU time, ~{a['gpu_hours_saved']:.1f} GPU-hours saved")
        elif plan.adaptive:
            print(f"adaptive stopping: {plan.adaptive.get('note', 'no simulated estimate')}")
    return 0


def _cmd_run(args: argparse.Namespace) -> int:
    from runner.execute import RunOptions, run_matrix
    from runner.matrix import load_matrix
    from runner.progress import progress_display

    matrix = load_matrix(args.matrix)
    if args.retry_failed and not args.resume:
        args.resume = True
    opts = RunOptions(backend=args.backend, db=args.db, resume=args.resume, retry_failed=args.retry_failed,
                      run_id=args.run_id, runs_dir=args.runs_dir)
    backend = None
    if args.endpoint:
        if args.backend != "vllm":
            raise UsageError("--endpoint needs --backend vllm")
        from runner.backends.vllm import VllmBackend

        backend = VllmBackend(endpoint=args.endpoint)
    if args.ray:
        from runner.cluster import run_matrix_ray

        with progress_display(quiet=args.json) as progress:
            summary = run_matrix_ray(matrix, opts, address=args.ray, progress=progress)
    else:
        with progress_display(quiet=args.json) as progress:
            summary = run_matrix(matrix, opts, progress=progress, backend=backend)
    if args.json:
        print(json.dumps(summary.as_dict()))
    else:
        print(f"run {summary.run_id}: {summary.cells_ok} ok, {summary.cells_failed} failed, "
              f"{summary.cells_skipped} skipped (already in the store)")
    return 0


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return {"plan": _cmd_plan, "run": _cmd_run}[args.command](args)
    except (InputError, UsageError) as exc:
        print(exc.one_line(), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("error: interrupted; rerun with --resume to continue", file=sys.stderr)
        return 130


def _run() -> int:
    try:
        return main()
    except BrokenPipeError:  # `... | head`: the reader left; not an error
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


if __name__ == "__main__":
    raise SystemExit(_run())
