"""``spectune watch TARGETS.toml`` — argument parsing and output of the production watcher.

``--once`` scrapes one round (cron-friendly); ``--interval S`` sets the period (default: the file's
``interval_s``, else 15 s); ``--since/--until`` (ISO 8601 or unix seconds) backfills the file's
Prometheus targets over a past range, at ``--interval`` steps. Exit 0 when every round landed (target
failures are warnings: one dead target never fails the watch), 2 for a bad targets file or arguments.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ingest.errors import UsageError
from ingest.times import parse_time
from ingest.watch.loop import WatchOptions, watch
from ingest.watch.targets import load_targets


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("targets", type=Path, metavar="TARGETS", help="targets file (TOML; see docs/watch.md)")
    p.add_argument("--once", action="store_true", help="one scrape round, then exit")
    p.add_argument("--interval", type=float, default=None, metavar="S",
                   help="seconds between rounds (and Prometheus step); default: the file's interval_s")
    p.add_argument("--since", default=None, metavar="T", help="backfill Prometheus targets from T")
    p.add_argument("--until", default=None, metavar="T", help="backfill up to T (default now)")
    p.add_argument("--rounds", type=int, default=None, help=argparse.SUPPRESS)  # bounded runs (tests, benchmarks)


def run(args: argparse.Namespace) -> int:
    config = load_targets(args.targets)
    interval = args.interval if args.interval is not None else config.interval_s
    if not 0.05 <= interval <= 86_400:
        raise UsageError(f"--interval must be between 0.05 and 86400 seconds, got {interval:g}")
    since = parse_time(args.since, "--since") if args.since else None
    until = parse_time(args.until, "--until") if args.until else None
    if until is not None and since is None:
        raise UsageError("--until needs --since (a backfill range)")
    if since is not None:
        if until is not None and until < since:
            raise UsageError("--until is before --since")
        if not any(t.kind == "prometheus" for t in config.targets):
            raise UsageError(f"{args.targets}: --since/--until backfill Prometheus targets, and the file has none")
    if args.db is not None and not Path(args.db).parent.exists():
        raise UsageError(f"--db {args.db}: parent folder does not exist")
    report = watch(config, WatchOptions(db=args.db, interval_s=interval, once=args.once, since=since, until=until,
                                        max_rounds=args.rounds, quiet=False))
    doc = report.as_dict()
    if args.json:
        print(json.dumps(doc))
    else:
        a = doc["added"]
        print(f"{doc['rounds']} round(s): {a['watch_samples']} samples added "
              f"({a['watch_events']} events) from {len(doc['targets'])} target(s)"
              + (f"; stopped by {doc['stopped_by']}" if doc["stopped_by"] else ""))
        for t in doc["targets"]:
            state = "ok" if not t["failed_rounds"] else f"{t['failed_rounds']} failed round(s): {t['last_error']}"
            print(f"  {t['name']:<24} {t['kind']:<10} {t['samples']:>6} samples  {state}", file=sys.stdout)
    return 0

