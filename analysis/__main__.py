"""``python -m analysis winners|curve|...`` — the analysis command line (DESIGN's CLI contract).

Subcommands are listed in :data:`COMMANDS` (name → (add_arguments, run, help), or a LazyCommand: re-scoring and
run comparison live in analysis/cli/rescore.py and analysis/cli/compare.py and are imported only when run); each
prints one JSON document with ``--json`` and a short table otherwise. Exit codes: 0 ok, 2 bad input/usage, 1 unexpected,
3 (compare) when a winner changed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from analysis.metrics import METRICS
from ingest.cli.parser import AnyCommand, LazyCommand, resolve
from ingest.cli.parser import build_parser as build_parser_for
from ingest.errors import InputError, UsageError, store_failure
from ingest.paths import announce_first_start, default_db_path
from ingest.pipes import run_quietly


def _open(args: argparse.Namespace):
    """Analysis only reads: an explicit --db must exist (the default store is built on first use)."""
    from ingest import open_store, store

    if args.db is not None and not Path(args.db).exists():
        raise UsageError(f"{args.db}: no such store")
    if args.db is None and store.default_db_path().exists():
        return open_store.connect(None, read_only=True)
    return open_store.connect(args.db, read_only=args.db is not None)


def _checked(con, **given: list[str] | str | None) -> dict[str, tuple[str, ...]]:
    """Dimension flags checked against the store (case fixed, with a note on stderr; unknown → exit 2)."""
    from analysis.choices import resolve_values

    values = {k: ([v] if isinstance(v, str) else list(v or [])) for k, v in given.items()}
    dims, notes = resolve_values(con, values)
    for note in notes:
        print(note, file=sys.stderr)
    return dims


def _load_arg(text: str) -> int | None:
    """``--concurrency 8``, or ``not-stated`` for the cells whose source gives no load (stored NULL)."""
    if text.strip().lower().replace(" ", "-") in ("not-stated", "none", "null"):
        return None
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: a whole number or 'not-stated'") from None


def _winners_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--metric", default="output_throughput", choices=list(METRICS))
    p.add_argument("--gpu", action="append", default=[], help="repeatable")
    p.add_argument("--family", action="append", default=[], help="repeatable")
    p.add_argument("--model", action="append", default=[], help="repeatable (a model id, e.g. Qwen/Qwen3-8B)")
    p.add_argument("--workload", action="append", default=[], help="repeatable")
    p.add_argument("--dataset", action="append", default=[], help="repeatable (GSM8K, HumanEval …)")
    p.add_argument("--method", action="append", default=[], help="repeatable")
    p.add_argument("--concurrency", action="append", type=_load_arg, default=[],
                   help="repeatable; 'not-stated' selects figures whose source gives no load")
    p.add_argument("--depth-min", type=int, default=0)
    p.add_argument("--depth-max", type=int, default=64)
    p.add_argument("--backend", action="append", default=[], choices=["sim", "vllm", "import"])
    p.add_argument("--run", action="append", default=[], help="restrict to these run ids")
    p.add_argument("--slo-ttft-ms", type=float, default=2000.0, help="goodput SLO: TTFT ≤ this")
    p.add_argument("--slo-tpot-ms", type=float, default=50.0, help="goodput SLO: TPOT ≤ this")
    p.add_argument("--best-depth", action="store_true", help="compare each method at its best depth")
    p.add_argument("--schedule", action="store_true",
                   help="per GPU × family × workload × method: the depth schedule per batch size "
                        "(num_speculative_tokens_per_batch_size) against the best static depth")
    p.add_argument("--draft-model", action="append", default=[], metavar="METHOD=PATH",
                   help="drafter checkpoint for the deploy commands (eagle3, dflash, dspark …)")
    p.add_argument("--margin", type=float, default=2.0, metavar="PCT",
                   help="practical equivalence: candidates within PCT %% of the best count as equivalent (default 2)")
    p.add_argument("--default", default="mtp:3", metavar="METHOD:DEPTH",
                   help="what you run today (default mtp:3, also mtp·3): the sensible pick prefers its method on a "
                        "tie, and the summary says what it leaves on the table")
    p.add_argument("--clear-at", type=float, default=0.95, metavar="P",
                   help="a winner is clear when its chance of being best (p_best) is at least P (default 0.95)")
    p.add_argument("--tie-at", type=float, default=0.05, metavar="P",
                   help="a candidate is tied with the winner when its p_best is at least P (default 0.05)")
    p.add_argument("--point-noise", type=float, default=3.0, metavar="PCT",
                   help="run-to-run noise given to point figures without samples (imported, published), "
                        "in %% (default 3; docs/metrics.md)")


def _winners(args: argparse.Namespace) -> int:
    res = winners_answer(args)
    return res if isinstance(res, int) else print_winners(args, res)


def winners_answer(args: argparse.Namespace) -> dict | int:
    """The ``winners`` document for these arguments (``--schedule`` prints its own answer: its exit code)."""
    from analysis.frames import Filters
    from analysis.glance import summary
    from analysis.rescore.config import parse_choice, parse_draft_models
    from analysis.winners import winners

    drafters = parse_draft_models(args.draft_model)
    if not 0 <= args.margin <= 100:
        raise UsageError(f"--margin {args.margin:g}: expected a percentage of 0–100")
    deployed = parse_choice(args.default)
    if not (0 < args.clear_at <= 1 and 0 <= args.tie_at <= args.clear_at):
        raise UsageError(f"--clear-at {args.clear_at:g} --tie-at {args.tie_at:g}: expected 0 ≤ tie-at ≤ clear-at ≤ 1 "
                         "and clear-at > 0")
    if not 0 <= args.point_noise <= 100:
        raise UsageError(f"--point-noise {args.point_noise:g}: expected a percentage of 0–100")
    with _open(args) as con:
        dims = _checked(con, gpu=args.gpu, family=args.family, workload=args.workload, method=args.method,
                        model=args.model, dataset=args.dataset)
        f = Filters(gpus=dims["gpu"], families=dims["family"], workloads=dims["workload"], methods=dims["method"],
                    concurrency=tuple(args.concurrency), depth_min=args.depth_min, depth_max=args.depth_max,
                    runs=tuple(args.run), backends=tuple(args.backend), models=dims["model"],
                    datasets=dims["dataset"])
        if args.schedule:
            return _schedule(args, con, f, drafters)
        res = winners(con, args.metric, f, slo_ttft_ms=args.slo_ttft_ms, slo_tpot_ms=args.slo_tpot_ms,
                      best_depth_per_method=args.best_depth, draft_models=drafters, margin_pct=args.margin,
                      default=(deployed.method, deployed.depth), clear_at=args.clear_at, tie_at=args.tie_at,
                      point_noise_pct=args.point_noise)
    if not res["cells"]:
        raise UsageError("no cells match these filters")
    res["summary"] = summary(res)
    return res


def print_winners(args: argparse.Namespace, res: dict) -> int:
    """``winners``' stdout for one document: JSON with ``--json``, the table otherwise."""
    from analysis.labels import candidate, group_label

    if args.json:
        print(json.dumps(res))
        return 0
    if res["simulated"]:
        print("SIMULATED data (backend=sim): calibrated model output, not measurements")
    print(res["summary"]["text"])
    print(f"sensible pick among equivalent candidates (within {args.margin:g} %): {res['pick_rule']}")
    rule = res.get("p_best_rule")
    if rule:  # the vocabulary: best = point estimate; p = chance of being best over the paired replicates
        print(f"best = the best point estimate; p = a candidate's chance of being best; {rule['text']}")
    for c in res["cells"]:
        w = c["winner"]
        verdict = c["tie_text"]
        origin = "" if c.get("origin", "measured") == "measured" else f"  [{c['origin']}]"
        whole = (f"  (whole window {w['whole_window_value']:.3f}"
                 f"{'; steady window not used: ' + w['steady_fallback'] if w.get('steady_fallback') else ''})"
                 if w.get("whole_window_value") is not None else "")
        edge = f"  [{c['grid_edge']['text']}]" if c.get("grid_edge") else ""
        source = f"  [source: {c['source_url']}]" if c.get("source_url") else ""
        print(f"{group_label(c):<60} "
              f"{candidate(w['method'], w['depth']):<10} {w['value']:>10.3f}  {verdict}{origin}{whole}{edge}{source}")
        pick = c.get("pick") or {}
        gain = pick.get("gain_vs_none_text") or c.get("gain_vs_none_text")
        if gain or c.get("uncertainty"):  # the pick's gain with its certainty, and where that certainty comes from
            who = f"pick {candidate(pick['method'], pick['depth'])}: " if pick.get("method") else ""
            unc = f"  [uncertainty: {c['uncertainty']}]" if c.get("uncertainty") else ""
            print(f"        {who}{gain or ''}{unc}")
        for cand in c["top3"]:  # a suspect acceptance is said wherever its cell is shown
            if cand.get("acceptance_suspect"):
                name = candidate(cand["method"], cand["depth"])
                print(f"  acceptance suspect ({name}): {cand['acceptance_suspect']}")
        deploy = (c.get("pick") or {}).get("deploy") or c.get("deploy")  # the pick is what to deploy
        if deploy:
            print(f"        {deploy['command']}")
            if deploy["note"]:
                print(f"        # {deploy['note']}")
    return 0


def _schedule(args: argparse.Namespace, con, f, drafters: dict[str, str]) -> int:
    from analysis.schedule import schedules

    res = schedules(con, args.metric, f, draft_models=drafters)
    if not res["schedules"]:
        raise UsageError("no method has cells at two or more loads and depths under these filters")
    if args.json:
        print(json.dumps(res))
        return 0
    if res["simulated"]:
        print("SIMULATED data (backend=sim): calibrated model output, not measurements")
    for s in res["schedules"]:
        ranges = ", ".join(f"{a}–{b}: {k}" for a, b, k in s["schedule"])
        lo, hi = s["gain_ci_pct"]
        ci = f" [{lo:+.1f}, {hi:+.1f}]" if lo is not None else ""
        verdict = "schedule" if s["recommended"] else f"static depth {s['static']['depth']}"
        print(f"{s['gpu']:<7} {s['family']:<8} {s['workload']:<10} {s['method']:<7} batch {ranges}  "
              f"{s['gain_vs_static_pct']:+.1f} %{ci} vs static {s['static']['depth']} → {verdict}")
        print(f"        {s['deploy']['command']}")
        if s["deploy"]["note"]:
            print(f"        # {s['deploy']['note']}")
    return 0


def _curve_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--family", required=True)
    p.add_argument("--method", required=True)
    p.add_argument("--workload", required=True)
    p.add_argument("--gpu", default=None)
    p.add_argument("--concurrency", type=int, default=None)
    p.add_argument("--model", default=None, help="one model of the family (default: every model, each its own points)")


def _curve(args: argparse.Namespace) -> int:
    from analysis import labels
    from analysis.curves import curve

    with _open(args) as con:
        dims = _checked(con, family=args.family, method=args.method, workload=args.workload, gpu=args.gpu,
                        model=args.model)
        res = curve(con, dims["family"][0], dims["method"][0], dims["workload"][0], (dims["gpu"] or (None,))[0],
                    args.concurrency, (dims["model"] or (None,))[0])
    if not res["points"]:
        raise UsageError(f"no cells for family={args.family} method={args.method} workload={args.workload}")
    if args.json:
        print(json.dumps(res))
    else:
        if res["simulated"]:
            print("SIMULATED data (backend=sim): calibrated model output, not measurements")
        for p in res["points"]:
            print(f"{labels.model_short(p['model']):<20} {p['dataset'] or '':<10} {p['gpu']:<7} "
                  f"{labels.load(p['concurrency']):<17} depth={p['depth']}  τ={p['acceptance_length']}  "
                  f"rate={p['acceptance_rate']}  tok/s={p['output_throughput']} "
                  f"(whole window {p['whole_window_output_throughput']})  [{p['backend']}]")
    return 0


COMMANDS: dict[str, AnyCommand] = {
    "winners": (_winners_args, _winners, "winner (method, depth) per GPU × family × workload × load"),
    "curve": (_curve_args, _curve, "acceptance and throughput by depth for one method"),
    "rescore": LazyCommand("analysis.cli.rescore",
                           "re-score (method, depth) on your traffic trace; the vLLM config to deploy"),
    "compare": LazyCommand("analysis.cli.compare",
                           "compare two runs: per-cell drift, changed winners, shards to re-tune"),
    "drift": LazyCommand("analysis.cli.production",
                         "production acceptance per segment vs the benchmark; exit 3 when a winner changed",
                         names=("drift_args", "drift")),
    "ab": LazyCommand("analysis.cli.production",
                      "A/B readout of two targets serving one segment (winner rule, intervals)",
                      names=("ab_args", "ab")),
}


def build_parser(argv: list[str] | None = None, *, only_selected: bool = False) -> argparse.ArgumentParser:
    return build_parser_for("python -m analysis", "Winners, curves, re-scoring and drift over the store.", COMMANDS,
                            argv, only_selected=only_selected)


# Read-only answers replayed for an unchanged store, code and data (analysis/cli/answer_cache.py).
CACHED_COMMANDS = frozenset({"winners", "curve"})


def cached_run(argv: list[str], args: argparse.Namespace, run) -> int:
    """``run()`` through the answer cache, keyed on these argument words and the store they open."""
    from analysis.cli.answer_cache import cached

    return cached(["analysis", *argv], Path(args.db) if args.db is not None else default_db_path(), run)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv, only_selected=True).parse_args(argv)
    announce_first_start(getattr(args, "db", None))
    try:
        def run() -> int:
            return resolve(COMMANDS[args.command])[1](args)

        return cached_run(argv, args, run) if args.command in CACHED_COMMANDS else run()
    except (InputError, UsageError) as exc:
        print(exc.one_line(), file=sys.stderr)
        return 2
    except Exception as exc:  # a DuckDB error is about the store: one line naming it (ingest/errors.py)
        failure = store_failure(exc, args.db if getattr(args, "db", None) is not None else default_db_path())
        if failure is not None:
            print(failure.one_line(), file=sys.stderr)
            return 2
        if not isinstance(exc, ValueError):
            raise
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(run_quietly(main))
