"""spectune's own performance, measured: ``python benchmarks/run.py [--quick] [--json]``.

Owns the benchmark plan (sizes, repeats, order) and the output document ``{"figures": {...}, "machine":
{...}, "sizes": {...}}``. Every figure is a median over repeats with min and max (see benchmarks/common.py),
its target from DESIGN "Performance targets" and whether it was met; the obvious baseline runs in the same
process (``winners_10m_pandas_s``). Benchmarks run one after another (the machine has 2 cores, shared).
``--quick`` (< 60 s, for CI) uses small sizes; the figure names stay the same and ``sizes`` says what was used.

Inputs are generated under ``--workdir`` (default: a temporary folder, removed afterwards): an export of N
request rows (benchmarks/generate.py), Azure-shaped traces (benchmarks/traces.py), the default store.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import REPO, figure, load_average, machine, timed

KEYS = ("winners_10m_s", "winners_10m_pandas_s", "rescore_1m_csv_s", "rescore_10m_parquet_s", "ingest_rows_per_s",
        "page_rerun_s", "cold_start_s", "dashboard_rss_mb", "client_cpu_ms_per_request", "watch_cpu_pct_100_targets")


SIZED = ("winners_10m_s", "rescore_1m_csv_s", "rescore_10m_parquet_s", "ingest_rows_per_s", "dashboard_rss_mb")


@dataclass(frozen=True, slots=True)
class Plan:
    store_rows: int = 10_000_000
    csv_rows: int = 1_000_000
    parquet_rows: int = 10_000_000
    repeats: int = 5
    ingest_repeats: int = 3
    pandas_repeats: int = 2
    rescore_repeats: int = 3
    page_changes: int = 7
    cold_repeats: int = 3
    rss_repeats: int = 1
    client_requests: int = 2000
    client_repeats: int = 3
    watch_rounds: int = 4
    watch_repeats: int = 2
    watch_interval_s: float = 15.0  # the watch's scrape period, each round one period


FULL = Plan()
# --quick: every figure once, small; the watch's round is 5 s (the full run's 15 s mostly waits, here and for the
# idle baseline beside it), and ``sizes`` in the output says so.
QUICK = Plan(store_rows=302_400, csv_rows=100_000, parquet_rows=300_000, repeats=3, ingest_repeats=1,
             pandas_repeats=1, rescore_repeats=1, page_changes=3, cold_repeats=1, client_requests=300,
             client_repeats=1, watch_rounds=1, watch_repeats=1, watch_interval_s=5.0)


def _rescore(db: Path, trace: Path, repeats: int, warm: Path) -> dict[str, Any]:
    """The CLI's own path (``python -m analysis rescore TRACE --json``) in this process, after one untimed run on
    a small trace (imports warm, as in the dashboard); one cold ``python -m`` subprocess run is reported too."""
    from analysis.__main__ import main as analysis_main

    def once(path: Path) -> dict:
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            code = analysis_main(["rescore", str(path), "--db", str(db), "--json"])
        if code != 0:
            raise RuntimeError(f"rescore exited {code}")
        return json.loads(buf.getvalue())

    once(warm)
    s = timed(lambda: once(trace), repeats)
    doc = s.results[-1]
    t0 = time.perf_counter()
    cold = subprocess.run([sys.executable, "-m", "analysis", "rescore", str(trace), "--db", str(db), "--json"],
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, timeout=600)
    cli_s = time.perf_counter() - t0
    if cold.returncode != 0:
        raise RuntimeError(f"python -m analysis rescore exited {cold.returncode}: {cold.stderr[-500:]!r}")
    return figure(s.wall, cpu=s.cpu, requests=doc["trace"]["requests"], recommendations=len(doc["recommendations"]),
                  file_mb=round(trace.stat().st_size / 2**20, 1), cli_subprocess_s=round(cli_s, 3),
                  measured="in-process CLI entry point, imports warm; cli_subprocess_s: one fresh `python -m` run")


def _make_traces(workdir: Path, plan: Plan) -> tuple[Path, Path, Path]:
    from benchmarks import traces

    # the Azure file naming carries the workload (``code``), as the public traces do
    csv = workdir / f"AzureLLMInferenceTrace_code_{plan.csv_rows}.csv"
    pq = workdir / f"trace_mixed_{plan.parquet_rows}.parquet"
    warm = workdir / "AzureLLMInferenceTrace_code_warmup.csv"
    for path, n, fmt in ((csv, plan.csv_rows, "csv"), (pq, plan.parquet_rows, "parquet"), (warm, 1000, "csv")):
        if not path.exists():
            traces.make_trace(n, path, fmt, workload="code" if fmt == "csv" else "mixed")
    return csv, pq, warm


def run(plan: Plan, workdir: Path, only: set[str] | None = None, log=print) -> dict[str, Any]:
    from benchmarks import dashboard_bench, store_bench

    def want(key: str) -> bool:
        return only is None or key in only

    figures: dict[str, Any] = {}
    info = machine()
    default_db = workdir / "default" / "spectune.duckdb"
    if not default_db.exists():
        from ingest.default_data import build_default_db

        build_default_db(default_db)

    big_db = workdir / f"store_{plan.store_rows}.duckdb"
    export = store_bench.export_dir(workdir, plan.store_rows)
    if want("ingest_rows_per_s") or not big_db.exists():
        log(f"ingest: {plan.store_rows} rows × {plan.ingest_repeats}")
        figures["ingest_rows_per_s"], _ = store_bench.ingest(export, big_db, plan.ingest_repeats)
        figures["ingest_bootstrap_s"] = store_bench.bootstrap_only(export)
    if want("winners_10m_s") or want("winners_10m_pandas_s"):
        log("winners (store)")
        figures["winners_10m_s"], doc = store_bench.winners(big_db, plan.repeats)
        if want("winners_10m_pandas_s"):
            log(f"winners (pandas baseline) × {plan.pandas_repeats}")
            figures["winners_10m_pandas_s"], figures["winners_10m_pandas_point_s"] = store_bench.pandas_baseline(
                export, plan.pandas_repeats, doc)
            figures["winners_10m_pandas_s"]["ratio_vs_spectune"] = round(
                figures["winners_10m_pandas_s"]["median"] / figures["winners_10m_s"]["median"], 1)
            figures["winners_10m_pandas_s"]["ratio_target"] = ">= 10"
            figures["winners_10m_pandas_point_s"]["ratio_vs_spectune"] = round(
                figures["winners_10m_pandas_point_s"]["median"] / figures["winners_10m_s"]["median"], 1)
    if want("rescore_1m_csv_s") or want("rescore_10m_parquet_s"):
        csv, pq, warm = _make_traces(workdir, plan)
        if want("rescore_1m_csv_s"):
            log(f"rescore CSV {plan.csv_rows}")
            figures["rescore_1m_csv_s"] = {**_rescore(default_db, csv, plan.rescore_repeats, warm), "target": "< 3"}
        if want("rescore_10m_parquet_s"):
            log(f"rescore Parquet {plan.parquet_rows}")
            figures["rescore_10m_parquet_s"] = {**_rescore(default_db, pq, plan.rescore_repeats, warm),
                                                "target": "< 10"}
        for key, target in (("rescore_1m_csv_s", 3.0), ("rescore_10m_parquet_s", 10.0)):
            if key in figures:
                figures[key]["meets_target"] = figures[key]["median"] < target
    if want("page_rerun_s"):
        log("page rerun (AppTest)")
        figures["page_rerun_s"] = dashboard_bench.page_rerun(default_db, plan.page_changes)
    if want("cold_start_s"):
        log("cold start")
        figures["cold_start_s"] = dashboard_bench.cold_start(workdir, plan.cold_repeats)
    if want("dashboard_rss_mb"):
        log("dashboard RSS (streamlit run + Chromium)")
        rows = figures.get("ingest_rows_per_s", {}).get("rows", plan.store_rows)
        figures["dashboard_rss_mb"] = dashboard_bench.dashboard_rss(big_db, rows, plan.rss_repeats)
    if want("client_cpu_ms_per_request"):
        log("client overhead")
        from benchmarks.client_overhead import measure

        runs = [measure(plan.client_requests, 64) for _ in range(plan.client_repeats)]
        figures["client_cpu_ms_per_request"] = figure(
            [r["client_cpu_ms_per_request"] for r in runs], unit="ms", n_requests=plan.client_requests,
            baseline_ms=[r["baseline"]["client_cpu_ms_per_request"] for r in runs],
            cpu_ratio_vs_baseline=[r["cpu_ratio_vs_baseline"] for r in runs])
    if want("watch_cpu_pct_100_targets"):
        log(f"watch overhead (100 simulated targets, {plan.watch_interval_s:g} s interval)")
        from benchmarks.watch_overhead import measure as watch_measure

        runs = [watch_measure(100, plan.watch_rounds, plan.watch_interval_s) for _ in range(plan.watch_repeats)]
        figures["watch_cpu_pct_100_targets"] = figure(
            [r["watch_minus_idle_pct"] for r in runs], unit="% of one core", target=5.0,
            idle_baseline_pct=[r["idle_cpu_pct_of_core"] for r in runs],
            cpu_ms_per_round=[r["cpu_ms_per_round"] for r in runs], window_s=[r["window_s"] for r in runs],
            failed_rounds=sum(r["failed_rounds"] for r in runs))
    info["load_avg_end"] = load_average()
    # the targets are defined at full size (the watch's at its 15 s interval): no verdict on a smaller run
    unsized = [k for k in SIZED if plan.store_rows < FULL.store_rows]
    unsized += ["watch_cpu_pct_100_targets"] if plan.watch_interval_s != FULL.watch_interval_s else []
    for key in unsized:
        if key in figures and figures[key].pop("meets_target", None) is not None:
            figures[key]["target_applies_at"] = "full size (python benchmarks/run.py)"
    sizes = asdict(plan)
    if "ingest_rows_per_s" in figures:  # the generator rounds up to whole cells of the default matrix
        sizes["store_rows_requested"], sizes["store_rows"] = plan.store_rows, figures["ingest_rows_per_s"]["rows"]
    return {"figures": figures, "machine": info, "sizes": sizes}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, < 60 s (CI)")
    ap.add_argument("--json", action="store_true", help="print one JSON document on stdout")
    ap.add_argument("--workdir", type=Path, default=None, help="keep generated inputs here (reused next time)")
    ap.add_argument("--only", action="append", choices=KEYS, help="run only these figures (repeatable)")
    ap.add_argument("--store-rows", type=int, default=None, help="request rows in the big store (default 10 M)")
    ap.add_argument("--repeats", type=int, default=None, help="repeats of every figure (default: per figure)")
    args = ap.parse_args(argv)
    plan = QUICK if args.quick else FULL
    if args.store_rows:
        plan = replace(plan, store_rows=args.store_rows)
    if args.repeats:
        plan = replace(plan, **{f: args.repeats for f in ("repeats", "ingest_repeats", "pandas_repeats",
                                                           "rescore_repeats", "cold_repeats", "rss_repeats",
                                                           "client_repeats")})
    tmp = None
    if args.workdir is None:
        tmp = tempfile.mkdtemp(prefix="spectune-bench-")
        workdir = Path(tmp)
    else:
        workdir = args.workdir
        workdir.mkdir(parents=True, exist_ok=True)
    try:
        res = run(plan, workdir, set(args.only) if args.only else None,
                  log=lambda m: print(f"[bench] {m}", file=sys.stderr, flush=True))
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    if args.json:
        print(json.dumps(res))
    else:
        for k, f in res["figures"].items():
            verdict = "" if "meets_target" not in f else (" ok" if f["meets_target"] else " MISSED")
            print(f"{k:<30} {f['median']:>12} {f['unit']:<6} (min {f['min']}, max {f['max']}, n={f['repeats']})"
                  f" {f.get('target', '')}{verdict}")
        print(f"machine: {res['machine']['cpus']} cores, load {res['machine']['load_avg_start']} → "
              f"{res['machine']['load_avg_end']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
