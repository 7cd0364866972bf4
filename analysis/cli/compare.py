"""``python -m analysis compare RUN_A RUN_B`` — the drift report between two runs, as JSON, text or markdown.

Owns the command (``add_args``/``run``, registered lazily in analysis/__main__.py). ``RUN_A`` may be
``previous`` (the newest run before RUN_B, same matrix and backend when possible) and
``RUN_B`` ``latest``, which is what a nightly job needs. Exit code 3 when any group's winner changed
(by the rule in :mod:`analysis.compare`), so a scheduler can alert; 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from analysis.compare import COMPARED, CompareOptions, compare_runs, resolve_run
from analysis.labels import candidate
from analysis.metrics import METRICS
from ingest.errors import UsageError

EXIT_WINNER_CHANGED = 3
TOP_MOVERS = 15


def add_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("run_a", metavar="RUN_A", help="baseline run id, or 'previous' (the run before RUN_B)")
    p.add_argument("run_b", metavar="RUN_B", help="new run id, or 'latest'")
    p.add_argument("--metric", default="output_throughput", choices=[m for m in METRICS if METRICS[m].bootstrapped],
                   help="metric the winners are decided on (default output_throughput)")
    p.add_argument("--best-depth", action="store_true", help="compare each method at its best depth")
    p.add_argument("--markdown", type=Path, default=None, metavar="FILE", help="also write a markdown report")
    p.add_argument("--out", type=Path, default=None, metavar="FILE", help="also write the JSON report to FILE")


def _fmt(x: float | None, pct: bool = False) -> str:
    if x is None:
        return "–"
    return f"{x:+.1f} %" if pct else f"{x:.4g}"


def _pair(side: dict) -> str:
    return side["method"] if side["method"] == "none" else candidate(side['method'], side['depth'])


def movers(report: dict, metric: str, n: int = TOP_MOVERS) -> list[dict]:
    """The cells whose ``metric`` changed significantly, largest relative change first."""
    moved = [c for c in report["cells"] if c["metrics"][metric]["significant"]]
    return sorted(moved, key=lambda c: -abs(c["metrics"][metric]["delta_pct"] or 0.0))[:n]


def to_markdown(report: dict) -> str:
    a, b = report["run_a"], report["run_b"]
    lines = [f"# spectune drift report: {b['run_id']} vs {a['run_id']}", ""]
    if report["simulated"]:
        lines += ["> **Simulated data** (backend `sim`): calibrated model output, not measurements.", ""]
    lines += [
        f"- run A: `{a['run_id']}` ({a['backend']}, {a['started_at']}, {a['cells']} cells)",
        f"- run B: `{b['run_id']}` ({b['backend']}, {b['started_at']}, {b['cells']} cells)",
        f"- winners decided on `{report['metric']}`; cells compared: {report['cells_compared']} "
        f"(only in A: {report['only_in_a']}, only in B: {report['only_in_b']})",
        f"- **winners changed: {report['winners_changed']}** of {report['groups_compared']} groups "
        f"(unsettled: {report['winners_unsettled']}; not comparable, a run lacks the other's winner: "
        f"{report['winners_not_comparable']})",
        f"- rule: {report['rule']}", "",
    ]
    if report["retune"]:
        lines += ["## Re-tune these shards", "", "| shard | from | to | gain in run B | --speculative-config |",
                  "|---|---|---|---|---|"]
        for r in report["retune"]:
            cfg = json.dumps(r["speculative_config"]) if r["speculative_config"] else "(no speculation)"
            lines.append(f"| {r['shard']} | {_pair(r['from'])} | {_pair(r['to'])} | {_fmt(r['gain_pct'], True)} "
                         f"| `{cfg}` |")
        lines.append("")
    else:
        lines += ["No winner changed: nothing to re-tune.", ""]
    lines += ["## Significant changes per metric (95 % interval excludes 0)", "",
              "| metric | cells changed |", "|---|---|"]
    lines += [f"| {m} | {n} |" for m, n in report["cells_changed"].items()]
    for m in ("acceptance_rate", "output_throughput", "p99_e2e_ms"):
        top = movers(report, m)
        if not top:
            continue
        lines += ["", f"### Largest significant changes in {m}", "",
                  "| gpu | family | workload | c | method | A | B | change | 95 % interval |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for c in top:
            v = c["metrics"][m]
            lines.append(f"| {c['gpu']} | {c['family']} | {c['workload']} | {c['concurrency']} | "
                         f"{_pair(c)} | {_fmt(v['a'])} | {_fmt(v['b'])} | {_fmt(v['delta_pct'], True)} | "
                         f"[{_fmt(v['ci_low'])}, {_fmt(v['ci_high'])}] |")
    return "\n".join(lines) + "\n"


def run(args: argparse.Namespace) -> int:
    from ingest import open_store, store

    if args.db is not None and not Path(args.db).exists():  # comparing only reads: never create a store
        raise UsageError(f"{args.db}: no such store")
    with open_store.connect(args.db, read_only=args.db is not None or store.default_db_path().exists()) as con:
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
            print(f"  re-tune {r['shard']:<34} {_pair(r['from']):>10} -> {_pair(r['to']):<10} "
                  f"{_fmt(r['gain_pct'], True)}")
    return EXIT_WINNER_CHANGED if report["winners_changed"] else 0

