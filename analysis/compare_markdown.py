"""The drift report between two runs (:func:`analysis.compare.compare_runs`) in words: markdown for a file or the
dashboard's download, and the labels the command line prints."""

from __future__ import annotations

import json

from analysis.labels import candidate

TOP_MOVERS = 15


def fmt(x: float | None, pct: bool = False) -> str:
    if x is None:
        return "–"
    return f"{x:+.1f} %" if pct else f"{x:.4g}"


def pair(side: dict) -> str:
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
            lines.append(f"| {r['shard']} | {pair(r['from'])} | {pair(r['to'])} | {fmt(r['gain_pct'], True)} "
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
                         f"{pair(c)} | {fmt(v['a'])} | {fmt(v['b'])} | {fmt(v['delta_pct'], True)} | "
                         f"[{fmt(v['ci_low'])}, {fmt(v['ci_high'])}] |")
    return "\n".join(lines) + "\n"
