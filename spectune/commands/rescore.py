"""``spectune rescore TRACE`` — which (method, depth) wins on a traffic trace, per shard.

TRACE is a
file (read with ingest.traces, workloads assigned by ingest.classify; nothing is stored) or a stored trace
id / id prefix (``spectune trace`` prints it). Prints one JSON document with ``--json`` (DESIGN keys:
trace {requests, workload_mix, shards}, default, recommendations[...]; see docs/rescoring.md), else a
table with the ``--speculative-config`` to deploy per shard. Bad input exits 2 with one line.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from analysis import derived
from analysis.reading import checked, open_store
from analysis.rescore.config import parse_choice, parse_draft_models
from analysis.rescore.core import RescoreOptions, rescore
from analysis.rescore.inputs import load_input
from analysis.rescore.summary import recommendation_words, schedule_words
from analysis.rescore.trace import SHARD_BY
from ingest.errors import UsageError
from ingest.paths import announce_first_start, default_db_path
from ingest.traces import FORMAT_CHOICES, TIMESTAMP_UNITS

METRIC_CHOICES = ("output_throughput", "p99_e2e_ms", "goodput")
INPUT_ERRORS = (ValueError,)  # the analysis code says bad input as ValueError too (spectune/cli.py run_parsed)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", metavar="TRACE",
                   help="trace file, folder or glob of files (a day per file), or a stored trace id (prefix)")
    p.add_argument("--format", default="auto", choices=FORMAT_CHOICES, help="file format (default: detected)")
    p.add_argument("--family", action="append", default=[], help="model family (repeatable; default: all)")
    p.add_argument("--gpu", action="append", default=[], help="GPU (repeatable; default: all)")
    p.add_argument("--workload", default=None, metavar="W",
                   help="the workload (code, chat, reasoning …) of every request the file does not label itself: "
                        "the explicit assignment, it replaces the file-name guess (Azure, Mooncake) and comes "
                        "before the prompt classifier")
    p.add_argument("--default", default="mtp:3", metavar="METHOD:DEPTH", help="what you run today (default mtp:3)")
    p.add_argument("--metric", default="output_throughput", choices=METRIC_CHOICES)
    p.add_argument("--slo-ttft-ms", type=float, default=None, help="goodput SLO: TTFT ≤ this")
    p.add_argument("--slo-tpot-ms", type=float, default=None, help="goodput SLO: TPOT ≤ this")
    p.add_argument("--shard-by", default="auto", choices=SHARD_BY,
                   help="auto: the shard column if any, else workload; column: the trace's shard column (a generic "
                        "file names it with --map shard=COLUMN); output_length: output-length buckets; hour: hour "
                        "of day from the first request; none: one shard")
    p.add_argument("--replicas", type=float, default=1.0, help="servers the trace is spread over (default 1)")
    p.add_argument("--concurrency", type=float, default=None, help="fixed load per server (overrides timestamps)")
    p.add_argument("--acceptance", default="auto", choices=["auto", "benchmark"],
                   help="auto: fit acceptance from the trace's counters when present")
    p.add_argument("--observed", default=None, metavar="METHOD:DEPTH",
                   help="config that produced the trace's counters (default: --default)")
    p.add_argument("--drafter", "--draft-model", dest="draft_model", action="append", default=[],
                   metavar="METHOD=PATH", help="drafter checkpoint of a method for the deploy command (repeatable; "
                                                "eagle3, dflash, dspark …), e.g. --drafter eagle3=org/model")
    p.add_argument("--map", dest="maps", action="append", default=[], metavar="FIELD=COLUMN",
                   help="generic CSV/JSONL/Parquet: source column of a field (repeatable)")
    p.add_argument("--timestamp-unit", default=None, choices=TIMESTAMP_UNITS)
    p.add_argument("--max-trace-bytes", default=None, metavar="SIZE",
                   help="largest trace file read, e.g. 8GiB (default $SPECTUNE_MAX_TRACE_BYTES, else 4GiB)")
    p.add_argument("--ray", default=None, metavar="ADDRESS",
                   help="reduce the trace's files as Ray tasks: auto, HOST:PORT or local (docs/cluster.md)")
    p.add_argument("--ray-files-per-task", type=int, default=0, metavar="N",
                   help="files per Ray task (default: spread over the cluster's CPUs)")


def _options(args: argparse.Namespace):
    for flag, value in (("--replicas", args.replicas), ("--concurrency", args.concurrency),
                        ("--slo-ttft-ms", args.slo_ttft_ms), ("--slo-tpot-ms", args.slo_tpot_ms)):
        if value is not None and not (value > 0 and value < 1e9):
            raise UsageError(f"{flag} must be a positive number, got {value}")
    return RescoreOptions(
        families=tuple(args.family), gpus=tuple(args.gpu), default=parse_choice(args.default), metric=args.metric,
        slo_ttft_ms=args.slo_ttft_ms, slo_tpot_ms=args.slo_tpot_ms, shard_by=args.shard_by,
        replicas=args.replicas, concurrency=args.concurrency, acceptance=args.acceptance,
        observed=parse_choice(args.observed) if args.observed else None,
        draft_models=parse_draft_models(args.draft_model))


def run(args: argparse.Namespace) -> int:
    announce_first_start(args.db, args.settings)
    opts = _options(args)
    with open_store(args.db) as con:
        dims = checked(con, family=list(opts.families), gpu=list(opts.gpus))
        opts = dataclasses.replace(opts, families=dims["family"], gpus=dims["gpu"])
        # The store's matrices (its derived rows when current, else loaded; on their own cursor) come in while the trace
        # is read: both run in native code (DuckDB, numpy, polars) that releases the GIL, so the two overlap.
        db = Path(args.db) if args.db is not None else default_db_path(args.settings)
        with ThreadPoolExecutor(1) as pool:
            matrices = pool.submit(_matrices, db, con.cursor(), opts.families, opts.gpus)
            frame, meta = load_input(args, con, opts.shard_by)
            res = rescore(con, frame, opts, meta, matrices=matrices.result())
    if not res["recommendations"]:
        raise UsageError("nothing could be scored: the store has no cells for this trace's workloads and loads")
    if args.json:
        print(json.dumps(res))
        return 0
    _print(res)
    return 0


def _matrices(db: Path, cursor, families: tuple[str, ...], gpus: tuple[str, ...]) -> dict:
    with cursor:
        return derived.matrices(cursor, families, gpus)


def _print(res: dict) -> None:
    if res["simulated"]:
        print("SIMULATED data (backend=sim): predictions from calibrated model output, not measurements")
    t = res["trace"]
    mix = ", ".join(f"{w} {f:.0%}" for w, f in t["workload_mix"].items())
    src = (t.get("workload_source") or {}).get("source")
    d = res["default"]
    print(f"trace {t.get('trace_id', '')}: {t['requests']} requests ({mix}"
          + (f"; workload from {src}" if src and src != "unknown" else "") + "); default "
          + ("none" if d["method"] == "none" else f"{d['method']}·{d['depth']}") + f"; metric {res['metric']}")
    loads = [r["load"]["mean_concurrency"] for r in res["recommendations"] if r["load"]["mean_concurrency"]]
    if loads:
        span = f"{min(loads):.1f}" if min(loads) == max(loads) else f"{min(loads):.1f}–{max(loads):.1f}"
        print(f"scored at a mean concurrency of {span} per server ({res['load']['source'].replace('_', ' ')})")
    for r in res["recommendations"]:  # the answer in words, the same sentences as the dashboard's
        print(f"{r['gpu']:<7} {r['family']:<8} {r['shard'][:16]:<16} {recommendation_words(r)}")
        svs = r.get("static_vs_scheduled")
        if svs:
            print(f"        {schedule_words(svs)} on this shard's loads")
        print(f"        {r['deploy']['command']}")
        if r["deploy"]["note"]:
            print(f"        # {r['deploy']['note']}")
    for tax in res["tax"]:
        print(f"tax of the default on {tax['gpu']} {tax['family']}: {tax['output_throughput_gain_pct']:+.1f}% "
              "throughput left on the table")
    for w in res["warnings"]:
        print(f"warning: {w}")
