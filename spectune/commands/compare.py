"""``spectune compare RUN_A RUN_B`` — the drift report between two runs, as JSON, text or markdown.

``RUN_A`` may be ``previous`` (the newest run before RUN_B, same matrix and backend when possible) and ``RUN_B``
``latest``, which is what a nightly job needs. Exit code 3 when any group's winner changed
(by the rule in :mod:`analysis.compare`), so a scheduler can alert; 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from analysis.compare import COMPARED, CompareOptions, compare_runs, resolve_run
from analysis.compare_markdown import fmt, pair, to_markdown
from analysis.metrics import METRICS
from ingest import open_store, store
from ingest.errors import UsageError
from ingest.paths import announce_first_start

EXIT_WINNER_CHANGED = 3
INPUT_ERRORS = (ValueError,)  # the analysis code says bad input as ValueError too (spectune/cli.py run_parsed)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_a", metavar="RUN_A", help="baseline run id, or 'previous' (the run before RUN_B)")
    p.add_argument("run_b", metavar="RUN_B", help="new run id, or 'latest'")
    p.add_argument("--metric", default="output_throughput", choices=[m for m in METRICS if METRICS[m].bootstrapped],
                   help="metric the winners are decided on (default output_throughput)")
    p.add_argument("--best-depth", action="store_true", help="compare each method at its best depth")
    p.add_argument("--markdown", type=Path, default=None, metavar="FILE", help="also write a markdown report")
    p.add_argument("--out", type=Path, default=None, metavar="FILE", help="also write the JSON report to FILE")


def run(args: argparse.Namespace) -> int:
    announce_first_start(args.db, args.settings)
    if args.db is not None and not Path(args.db).exists():  # comparing only reads: never create a store
        raise UsageError(f"{args.db}: no such store")
    read_only = args.db is not None or store.default_db_path(args.settings).exists()
    with open_store.connect(args.db, read_only=read_only) as con:
        run_b = resolve_run(con, args.run_b)
        run_a = resolve_run(con, args.run_a, before=run_b)
        report = compare_runs(con, run_a, run_b, CompareOptions(metric=args.metric,
                                                                best_depth_per_method=args.best_depth))
    text = json.dumps(report)
    if args.out:
        args.out.write_text(text)
    if args.markdown:
        args.markdown.write_text(to_markdown(report))
    if args.json:
        print(text)
    else:
        if report["simulated"]:
            print("SIMULATED data (backend=sim): calibrated model output, not measurements")
        print(f"{run_b} vs {run_a}: {report['cells_compared']} cells compared; "
              + ", ".join(f"{m} changed in {report['cells_changed'][m]}" for m in COMPARED[:4]))
        print(f"winners changed: {report['winners_changed']} of {report['groups_compared']} groups "
              f"(unsettled {report['winners_unsettled']}, not comparable {report['winners_not_comparable']})")
        for r in report["retune"]:
            print(f"  re-tune {r['shard']:<34} {pair(r['from']):>10} -> {pair(r['to']):<10} "
                  f"{fmt(r['gain_pct'], True)}")
    return EXIT_WINNER_CHANGED if report["winners_changed"] else 0

