"""``spectune plan`` and ``spectune run`` — a matrix's cells and GPU-hours, and running it into the store.

``run`` stops every server it started on SIGTERM/SIGHUP/Ctrl-C and says how to continue; it exits 4 when cells ran
and every one failed (README, docs/reliability.md).
"""

from __future__ import annotations

import argparse
import functools
import json
import shlex
import signal
import sys
import time
from pathlib import Path

from analysis import derived
from ingest.errors import InputError, UsageError
from runner.backends.sim import SimBackend
from runner.backends.vllm import VllmBackend, slug
from runner.cluster import run_matrix_ray
from runner.execute import RunInterrupted, RunOptions, run_matrix, runs_dir_for
from runner.factorized import factorized_plan, run_factorized
from runner.matrix import load_matrix
from runner.plan import SERVER_START_S, plan_matrix
from runner.progress import progress_display
from runner.signals import stop_on_terminate
from runner.workloads import resolve_source
from spectune.parser import world_number


def plan_arguments(plan: argparse.ArgumentParser) -> None:
    plan.add_argument("--matrix", required=True, type=Path)
    plan.add_argument("--db", type=Path, default=None, help="store for earlier-run estimates (env SPECTUNE_DB)")
    plan.add_argument("--strategy", choices=["full", "factorized"], default="full",
                      help="full: every cell; factorized: measure what decides the winner, predict the rest")
    plan.add_argument("--json", action="store_true")


def run_arguments(run: argparse.ArgumentParser) -> None:
    run.add_argument("--matrix", required=True, type=Path)
    run.add_argument("--backend", choices=["sim", "vllm"], default="sim")
    run.add_argument("--world", type=world_number, default=None, metavar="N",
                     help="sim: measure world N, one fixed draw of the model's parameters, with sampling noise "
                          "only (docs/tune.md)")
    run.add_argument("--resume", action="store_true", help="continue the newest run of this matrix; skip done cells")
    run.add_argument("--retry-failed", action="store_true", help="with --resume, also rerun failed cells")
    run.add_argument("--run-id", default=None, help="explicit run id (default: new, or the resumed one)")
    run.add_argument("--ray", default=None, metavar="ADDRESS|auto", help="fan server configs out over a Ray cluster")
    run.add_argument("--endpoint", default=None, help="vllm: attach to a running server instead of launching")
    run.add_argument("--runs-dir", type=Path, default=None,
                     help="vllm: server logs and pidfiles go to RUNS_DIR/<run id>/ (default: <db folder>/runs)")
    run.add_argument("--db", type=Path, default=None, help="store path (default data/spectune.duckdb or SPECTUNE_DB)")
    run.add_argument("--strategy", choices=["full", "factorized"], default="full",
                     help="full: every cell; factorized: deepest + one shallow depth + baseline measured, the rest "
                          "predicted by the cost model, the contenders confirmed (docs/matrix.md)")
    run.add_argument("--json", action="store_true", help="print one JSON summary, no progress display")


def _plural(n: int | float, word: str) -> str:
    return f"{n:g} {word}" + ("" if n == 1 else "s")


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def _cmd_plan(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.matrix)
    warnings = []
    for wl in matrix.workloads:  # what `run` would refuse at its start; a plan made elsewhere only warns
        try:
            resolve_source(wl, matrix.path.parent)
        except InputError as exc:
            warnings.append(exc.one_line().replace("error: ", "warning: ", 1))
    for w in warnings:
        print(w, file=sys.stderr)
    if args.strategy == "factorized":
        return _print_factorized(args, matrix)
    plan = plan_matrix(matrix, args.db)
    if args.json:
        print(json.dumps(plan.as_dict(), indent=2))
        return 0
    per_cell = {"requests_per_cell": "requests per cell",
                "adaptive_simulated": "requests per cell (adaptive stopping, simulated mean)",
                "adaptive_max": "requests per cell (adaptive max_requests: no simulated estimate)"}
    print(f"{_plural(plan.cells, 'cell')} in {_plural(len(plan.server_configs), 'server config')}, "
          f"{plan.requests_per_cell:g} {per_cell[plan.requests_basis]}; ~{plan.estimated_gpu_hours:.1f} GPU-hours")
    names = {"earlier_runs": "from earlier runs in the store", "cost_model": "from the cost model",
             "flat_guess": "from a flat guess"}
    parts = [f"{n} {names[k]}" for k, n in plan.estimate_sources.items() if n]
    print(f"  cell times: {', '.join(parts) or 'none'}; plus ~{_duration(SERVER_START_S)} per server start "
          f"(a guess); in run order:")
    for cfg in plan.server_configs:
        print(f"  {cfg['order']:>4}. {cfg['label']:<36} {_plural(int(cfg['cells']), 'cell'):>9}  "  # type: ignore[call-overload]
              f"~{_duration(float(cfg['estimated_s']))}")  # type: ignore[arg-type]
    if plan.adaptive and "requests_saved_pct" in plan.adaptive:
        a = plan.adaptive
        print(f"adaptive stopping (simulated, {a['cells_simulated']} cells, target width "
              f"{a['target_rel_width']:g}): {a['mean_adaptive_requests_per_cell']:g} requests/cell vs "
              f"{a['fixed_requests_per_cell']} fixed for equal CI width — {a['requests_saved_pct']:g} % fewer "
              f"requests, {a['gpu_time_saved_pct']:g} % less GPU time, ~{a['gpu_hours_saved']:.1f} GPU-hours saved "
              f"(~{a['adaptive_gpu_hours']:.1f} vs ~{a['fixed_gpu_hours']:.1f})")
    elif plan.adaptive:
        print(f"adaptive stopping: {plan.adaptive.get('note', 'no simulated estimate')}")
    return 0


def _print_factorized(args: argparse.Namespace, matrix) -> int:
    fp = factorized_plan(matrix, args.db)
    if args.json:
        print(json.dumps(fp, indent=2))
        return 0
    m, c, f = fp["measure"], fp["confirm_expected"], fp["full_grid"]
    print(f"factorized plan: measure {_plural(m['cells'], 'cell')} in {_plural(m['server_configs'], 'server config')} "  # type: ignore[index]
          f"(~{m['estimated_gpu_hours']:.1f} GPU-hours), predict {fp['predicted_cells']} with the cost model, "  # type: ignore[index]
          f"confirm ~{c['cells']} (~{c['estimated_gpu_hours']:.1f} GPU-hours, estimated)")  # type: ignore[index]
    print(f"  ~{fp['estimated_gpu_hours']:.1f} GPU-hours vs ~{f['estimated_gpu_hours']:.1f} for the full grid "  # type: ignore[index]
          f"({f['cells']} cells, {f['server_configs']} server configs): {fp['saving_pct']:g} % less GPU time")  # type: ignore[index]
    return 0


def _resume_command(args: argparse.Namespace, run_id: str) -> str:
    argv = ["python", "-m", "runner", "run", "--matrix", str(args.matrix), "--backend", args.backend,
            "--run-id", run_id, "--retry-failed" if args.retry_failed else "--resume"]
    for flag, value in (("--db", args.db), ("--runs-dir", args.runs_dir), ("--endpoint", args.endpoint),
                        ("--ray", args.ray), ("--world", args.world)):
        if value is not None:
            argv += [flag, str(value)]
    return shlex.join(argv)


def _cmd_run(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.matrix)
    if args.retry_failed and not args.resume:
        args.resume = True
    if args.world is not None and args.backend != "sim":
        raise UsageError("--world needs --backend sim")
    opts = RunOptions(backend=args.backend, db=args.db, resume=args.resume, retry_failed=args.retry_failed,
                      run_id=args.run_id, runs_dir=args.runs_dir, world=args.world)
    backend = None if args.world is None else SimBackend(world=args.world)
    if args.endpoint:
        if args.backend != "vllm":
            raise UsageError("--endpoint needs --backend vllm")
        if args.ray:
            raise UsageError("--endpoint attaches to one running server; it cannot be combined with --ray")
        backend = VllmBackend(endpoint=args.endpoint, settings=args.settings)
    t0 = time.monotonic()
    try:
        with stop_on_terminate():
            if args.strategy == "factorized":
                if args.ray:
                    raise UsageError("--strategy factorized runs locally; it cannot be combined with --ray yet")
                with progress_display(quiet=args.json) as progress:
                    summary, fsum = run_factorized(matrix, opts, progress=progress, backend=backend, notify=_note)
            elif args.ray:
                with progress_display(quiet=args.json) as progress:
                    factory = None if args.world is None else functools.partial(SimBackend, world=args.world)
                    summary = run_matrix_ray(matrix, opts, address=args.ray, progress=progress, factory=factory,
                                             settings=args.settings)
            else:
                with progress_display(quiet=args.json) as progress:
                    summary = run_matrix(matrix, opts, progress=progress, backend=backend, notify=_note)
    except RunInterrupted as exc:
        why = signal.Signals(exc.signum).name if exc.signum else "interrupted"
        print(f"error: {why}: run {exc.run_id} stopped after {exc.cells_done} cell(s) this time, every server "
              f"stopped, finished cells kept; continue with: {_resume_command(args, exc.run_id)}", file=sys.stderr)
        return 128 + (exc.signum or signal.SIGINT)
    # Scripts must tell "nothing worked" from success: no cell ran well this time, and some were tried.
    code = NO_CELL_SUCCEEDED if summary.cells_failed and not summary.cells_ok else 0
    factorized = fsum.as_dict() if args.strategy == "factorized" else None
    if args.json:
        print(json.dumps({**summary.as_dict(), **({"factorized": factorized} if factorized else {})}))
        return code
    skipped = "already in the store"
    if summary.skipped_failed:
        skipped += f"; {summary.skipped_failed} of them failed earlier: --retry-failed runs them again"
    took = time.monotonic() - t0
    line = (f"run {summary.run_id}: {summary.cells_ok} ok, {summary.cells_failed} failed, "
            f"{summary.cells_skipped} skipped ({skipped}) in "
            + (f"{took / 60:.1f} min" if took >= 120 else f"{took:.0f} s"))
    if args.backend == "vllm" and not args.ray and not args.endpoint and (summary.cells_ok or summary.cells_failed):
        line += f"; server logs: {runs_dir_for(opts) / slug(summary.run_id)}"
    print(line)
    if factorized:
        err = factorized["prediction_error_pct"] or {}
        print(f"  factorized: {factorized['cells_measured']} measured, {factorized['cells_predicted']} predicted "
              f"(run {summary.run_id}-predicted), {factorized['cells_confirmed']} confirmed in "
              f"{factorized['confirm_rounds']} round(s); ~{factorized['gpu_hours']:.1f} GPU-hours; prediction error "
              f"median {err.get('median', '–')} %, max {err.get('max', '–')} %")
    for f in summary.failures:  # the reasons, so nobody has to dig them out of the store
        print(f"  failed {f.get('cell', f['cell_id'])}: {f['error']}")
    if code:
        print(f"error: run {summary.run_id}: no cell succeeded ({summary.cells_failed} failed); exit "
              f"{NO_CELL_SUCCEEDED}", file=sys.stderr)
    return code


NO_CELL_SUCCEEDED = 4  # `runner run` exit code: cells were run and every one failed (README, docs/reliability.md)


def _note(text: str) -> None:
    print(text, file=sys.stderr)


def _run(args: argparse.Namespace) -> int:
    return derived.after_landing(_cmd_run(args), args.db)  # what answers need, derived once the store was written


COMMANDS = {"plan": (plan_arguments, _cmd_plan), "run": (run_arguments, _run)}
