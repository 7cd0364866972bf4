"""``spectune drift`` and ``spectune ab`` — production acceptance against the benchmark, and A/B readouts.

With request logs in the store (``spectune requests``), ``drift`` also reports acceptance by a request label
inside one deployment (``--by tenant``; JSON key ``request_segments``, analysis/production/request_segments.py);
``--segment`` then names watch segments or label values.

``drift`` prints, per segment × config, production acceptance (with its interval), the benchmark's
expectation and band, the gap and the drift decision; exit 3 when a segment's winner changed (as ``compare``)
or its production acceptance lies outside the benchmark band (analysis.production.drift.ALERTS). Times are
printed in UTC, marked so.
``ab --a TARGET --b TARGET`` (or ``--segment S`` with exactly two targets in it) prints the A/B readout.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime

from analysis.labels import candidate
from analysis.production import request_load
from analysis.production.ab import METRICS as AB_METRICS
from analysis.production.ab import ABOptions
from analysis.production.drift import DriftOptions
from analysis.production.load import segment_names
from analysis.production.report import ProductionQuery, ab_report, production_report
from analysis.production.request_segments import SegmentQuery, default_key, segments_report
from analysis.reading import open_store
from ingest.errors import UsageError
from ingest.paths import announce_first_start
from ingest.times import parse_time

EXIT_CHANGED = 3
INPUT_ERRORS = (ValueError,)  # the analysis code says bad input as ValueError too (spectune/cli.py run_parsed)


def _time(text: str | None, flag: str) -> datetime | None:
    if text is None:
        return None
    return datetime.fromtimestamp(parse_time(text, flag), UTC).replace(tzinfo=None)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--segment", action="append", default=[], help="segment(s) to read (repeatable; default all)")
    p.add_argument("--since", default=None, metavar="T", help="ISO 8601 (UTC unless it has an offset) or unix seconds")
    p.add_argument("--until", default=None, metavar="T")


def drift_args(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--window", type=float, default=3600.0, metavar="S", help="window length in seconds (3600)")
    p.add_argument("--metric", default="output_throughput", choices=["output_throughput", "p99_e2e_ms", "goodput"])
    p.add_argument("--concurrency", type=float, default=None, help="load per server (default: the store's middle)")
    p.add_argument("--by", default=None, metavar="LABEL",
                   help="split logged requests (spectune requests) by this label: acceptance by segment "
                        "inside one server (default: tenant, else route, else workload, else the first label)")


def drift(args: argparse.Namespace) -> int:
    announce_first_start(args.db, args.settings)
    with open_store(args.db) as con:
        logged = request_load.has_request_logs(con)
    if args.by is not None and not logged:
        raise UsageError("--by: the store has no request log (run `spectune requests FILE --target NAME`)")
    return _drift(args) if not logged else _drift_with_requests(args)


def _drift_with_requests(args: argparse.Namespace) -> int:
    """``drift`` over watch segments and logged-request segments (analysis/production/request_segments.py)."""
    _check_drift_args(args)
    opts = DriftOptions(metric=args.metric, concurrency=args.concurrency)
    since, until = _time(args.since, "--since"), _time(args.until, "--until")
    with open_store(args.db) as con:
        keys = request_load.label_keys(con)
        by = args.by if args.by is not None else default_key(keys)
        if by is not None and by not in keys:
            raise UsageError(f"--by {by!r}: no logged request has that label; labels: {', '.join(keys) or 'none'}")
        watched = segment_names(con)
        values = [v if v is not None else "(no label)" for v in request_load.segment_values(con, by)] if by else []
        unknown = [s for s in args.segment if s not in watched and s not in values]
        if unknown:
            raise UsageError(f"--segment {unknown[0]!r}: no such segment; watch segments: "
                             f"{', '.join(watched[:10]) or 'none'}; {by} values: {', '.join(values[:10]) or 'none'}")
        watch_pick = tuple(s for s in args.segment if s in watched)
        value_pick = tuple(s for s in args.segment if s in values)
        doc = {"segments": [], "changed": [], "window_s": args.window, "warnings": []}
        if watched and (watch_pick or not args.segment):
            doc = production_report(con, ProductionQuery(segments=watch_pick, since=since, until=until,
                                                         window_s=args.window), opts)
        if value_pick or not args.segment:
            doc["request_segments"] = segments_report(con, SegmentQuery(by=by, values=value_pick, since=since,
                                                                        until=until, window_s=args.window), opts)
    if args.json:
        print(json.dumps(doc, default=str))
    else:
        print_drift(doc)
        print_request_segments(doc.get("request_segments"))
    changed = doc["changed"] or (doc.get("request_segments") or {}).get("changed")
    return EXIT_CHANGED if changed else 0


def _check_drift_args(args: argparse.Namespace) -> None:
    if not 1 <= args.window <= 366 * 86_400:
        raise UsageError(f"--window must be between 1 s and a year, got {args.window:g}")
    if args.concurrency is not None and not 0 < args.concurrency < 1e6:
        raise UsageError(f"--concurrency must be a positive number, got {args.concurrency:g}")


def print_request_segments(rs: dict | None) -> None:
    if not rs:
        return
    print(f"acceptance by {rs['by']} inside one deployment (from logged requests):")
    for s in rs["segments"]:
        p, b = s["production"], s.get("benchmark")
        ci = p["acceptance_rate_ci"]
        rate = "n/a" if p["acceptance_rate"] is None else f"{p['acceptance_rate']:.3f}"
        band = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci[0] is not None else " (too few requests for an interval)"
        exp = "no benchmark" if not b else f"benchmark {b['acceptance_rate']:.3f} ({b['provenance']})"
        print(f"{s['target']} · {s['segment']}: {candidate(s['method'], s['depth'])}  {s['requests']} requests  "
              f"acceptance {rate}{band} vs {exp}, gap {_pct(s.get('gap_pct'))}")
        rec = s.get("recommendation")
        if s["status"] == "winner_changed":
            print(f"  WINNER CHANGED: {candidate(rec['method'], rec['depth'])} "
                  f"({_pct(rec['gain_vs_deployed_pct'])} vs deployed)  {rec['vllm_args']}")
        elif rec:
            print(f"  no change: best {candidate(rec['method'], rec['depth'])} "
                  f"({'clear' if rec['clear'] else 'tie'})")
        else:
            print(f"  {s['status']}: {s.get('why', '')}")
    for w in rs["warnings"]:
        print(f"warning: {w}")


def _drift(args: argparse.Namespace) -> int:
    if not 1 <= args.window <= 366 * 86_400:
        raise UsageError(f"--window must be between 1 s and a year, got {args.window:g}")
    if args.concurrency is not None and not 0 < args.concurrency < 1e6:
        raise UsageError(f"--concurrency must be a positive number, got {args.concurrency:g}")
    q = ProductionQuery(segments=tuple(args.segment), since=_time(args.since, "--since"),
                        until=_time(args.until, "--until"), window_s=args.window)
    with open_store(args.db) as con:
        if args.segment:
            known = segment_names(con)
            unknown = [s for s in args.segment if s not in known]
            if unknown:
                hint = f"; known: {', '.join(known[:10])}" if known else "; the store has no watch samples"
                raise UsageError(f"--segment {unknown[0]!r}: no such segment{hint}")
        doc = production_report(con, q, DriftOptions(metric=args.metric, concurrency=args.concurrency))
    if args.json:
        print(json.dumps(doc, default=str))
    else:
        print_drift(doc)
    return EXIT_CHANGED if doc["alert"] else 0


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{x:+.1f}%"


def _num(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3f}"


def _rate(p: dict) -> str:
    """Production acceptance with its 95 % interval, or why it has none."""
    rate = _num(p.get("acceptance_rate"))
    ci = p.get("acceptance_rate_ci") or [None, None]
    if p.get("acceptance_rate") is None:
        return rate
    if ci[0] is None:
        return f"{rate} ({p.get('interval') or 'no interval'})"
    return f"{rate} [{ci[0]:.3f}, {ci[1]:.3f}]"


def _when(ts: str) -> str:
    """An ISO 8601 UTC timestamp as ``YYYY-MM-DD HH:MM:SS UTC``."""
    return datetime.fromisoformat(ts).astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def print_drift(doc: dict) -> None:
    if doc.get("period"):
        print(f"period {_when(doc['period']['start'])} → {_when(doc['period']['end'])}")
    for s in doc["segments"]:
        p, b = s["production"], s.get("benchmark")
        band = (b or {}).get("band") or [None, None]
        exp = "no benchmark" if not b else (f"benchmark {_num(b['acceptance_rate'])} [{_num(band[0])}, "
                                            f"{_num(band[1])}] ({b['provenance']})")
        print(f"{s['segment']}: {candidate(s['method'], s['depth'])} on {s['family']}/{s['gpu']}/{s['workload']}  "
              f"acceptance {_rate(p)} vs {exp}, gap {_pct(s.get('gap_pct'))}")
        rec = s.get("recommendation")
        if s["status"] == "winner_changed":
            how = "now wins clearly" if rec["clear"] else (
                f"leads, and the running config is clearly beaten (tie: "
                f"{', '.join((s.get('at_production_acceptance') or {}).get('tied') or []) or 'n/a'})")
            print(f"  WINNER CHANGED: {candidate(rec['method'], rec['depth'])} {how} "
                  f"({_pct(rec['gain_vs_deployed_pct'])} vs deployed)  {rec['vllm_args']}")
        elif s["status"] == "acceptance_outside_band" and rec:
            side = "below" if (s.get("gap_pct") or 0) < 0 else "above"
            print(f"  ACCEPTANCE OUTSIDE BAND: production is {side} the benchmark band; the benchmark no longer "
                  f"describes this traffic (re-measure on it). Best still {candidate(rec['method'], rec['depth'])} "
                  f"({'clear' if rec['clear'] else 'tie'})  {rec['vllm_args']}")
        elif rec:
            verdict = "clear" if rec["clear"] else "tie"
            print(f"  no change: best {candidate(rec['method'], rec['depth'])} ({verdict})")
        else:
            print(f"  {s['status']}: {s.get('why', '')}")
    for w in doc["warnings"]:
        print(f"warning: {w}")


def ab_args(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--a", default=None, metavar="TARGET")
    p.add_argument("--b", default=None, metavar="TARGET")
    p.add_argument("--metric", default="p99_tpot_ms", choices=list(AB_METRICS))
    p.add_argument("--block", type=float, default=60.0, metavar="S", help="pairing block in seconds (60)")
    p.add_argument("--margin-pct", type=float, default=2.0, help="practical-equivalence margin (2 %%)")


def ab(args: argparse.Namespace) -> int:
    announce_first_start(args.db, args.settings)
    if not 1 <= args.block <= 86_400:
        raise UsageError(f"--block must be between 1 s and a day, got {args.block:g}")
    if not 0 <= args.margin_pct < 100:
        raise UsageError(f"--margin-pct must be in [0, 100), got {args.margin_pct:g}")
    if (args.a is None) != (args.b is None):
        raise UsageError("give both --a and --b, or --segment with two targets")
    if args.a is None and len(args.segment) != 1:
        raise UsageError("give --a TARGET --b TARGET, or one --segment whose two targets to compare")
    with open_store(args.db) as con:
        doc = ab_report(con, tuple(args.segment), args.a, args.b, _time(args.since, "--since"),
                        _time(args.until, "--until"), ABOptions(metric=args.metric, block_s=args.block,
                                                                 margin_pct=args.margin_pct))
    if args.json:
        print(json.dumps(doc, default=str))
        return 0
    a, b = doc["a"], doc["b"]
    print(f"A/B on {doc['metric']} over {doc.get('blocks', 0)} block(s): {a['target']} vs {b['target']}")
    if doc.get("window"):
        print(f"  shared window {_when(doc['window']['start'])} → {_when(doc['window']['end'])}")
    for arm in (a, b):
        m = arm.get("metrics", {}).get(doc["metric"], {})
        name = candidate(arm.get("method"), arm.get("depth"))
        print(f"  {arm['target']:<28} {name}  {m.get('value')}  95% {m.get('ci')}")
    if doc["verdict"] == "winner":
        print(f"winner: {doc['winner']} by {doc['gain_pct']:.1f}% (difference 95% {doc['difference_ci']})")
    elif doc["verdict"] == "tie":
        print(f"tie: difference 95% {doc['difference_ci']} includes zero or is within {doc['margin_pct']:g}%")
    else:
        print(f"too early: {doc.get('why')}")
    return 0


COMMANDS = {"drift": (drift_args, drift), "ab": (ab_args, ab)}
