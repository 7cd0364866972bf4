"""The live answers of ``spectune winners`` and ``spectune curve``: computed from the store and printed (JSON with
``--json``, a short table otherwise). Loaded by spectune/commands/winners.py only when an answer is computed."""

from __future__ import annotations

import argparse
import json
import sys

from analysis import derived, labels
from analysis.curves import curve
from analysis.frames import Filters
from analysis.glance import summary
from analysis.labels import candidate_of, group_label
from analysis.reading import checked, open_store
from analysis.rescore.config import parse_choice, parse_draft_models
from analysis.schedule import schedules
from analysis.winners import winners
from ingest.errors import UsageError


def winners_run(args: argparse.Namespace, kept: str | None = None, stamp: str | None = None,
                keep: bool = False) -> int:
    """Print the kept document (the table form of it), or compute the answer; with ``keep``, the default store then
    keeps it (printed first: the answer is out before the store is written)."""
    if kept is not None:
        return print_winners(args, json.loads(kept))
    res = winners_answer(args)
    if isinstance(res, int):
        return res
    code = print_winners(args, res)
    if keep:
        sys.stdout.flush()
        derived.keep_default_answer(res, stamp)
    return code


def winners_answer(args: argparse.Namespace) -> dict | int:
    """The ``winners`` document for these arguments (``--schedule`` prints its own answer: its exit code)."""
    drafters = parse_draft_models(args.draft_model)
    if not 0 <= args.margin <= 100:
        raise UsageError(f"--margin {args.margin:g}: expected a percentage of 0–100")
    deployed = parse_choice(args.default)
    if not (0 < args.clear_at <= 1 and 0 <= args.tie_at <= args.clear_at):
        raise UsageError(f"--clear-at {args.clear_at:g} --tie-at {args.tie_at:g}: expected 0 ≤ tie-at ≤ clear-at ≤ 1 "
                         "and clear-at > 0")
    if not 0 <= args.point_noise <= 100:
        raise UsageError(f"--point-noise {args.point_noise:g}: expected a percentage of 0–100")
    with open_store(args.db) as con:
        dims = checked(con, gpu=args.gpu, family=args.family, workload=args.workload, method=args.method,
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
              f"{candidate_of(w):<10} {w['value']:>10.3f}  {verdict}{origin}{whole}{edge}{source}")
        pick = c.get("pick") or {}
        gain = pick.get("gain_vs_none_text") or c.get("gain_vs_none_text")
        if gain or c.get("uncertainty"):  # the pick's gain with its certainty, and where that certainty comes from
            who = f"pick {candidate_of(pick)}: " if pick.get("method") else ""
            unc = f"  [uncertainty: {c['uncertainty']}]" if c.get("uncertainty") else ""
            print(f"        {who}{gain or ''}{unc}")
        for cand in c["top3"]:  # a suspect acceptance is said wherever its cell is shown
            if cand.get("acceptance_suspect"):
                name = candidate_of(cand)
                print(f"  acceptance suspect ({name}): {cand['acceptance_suspect']}")
        deploy = (c.get("pick") or {}).get("deploy") or c.get("deploy")  # the pick is what to deploy
        if deploy:
            print(f"        {deploy['command']}")
            if deploy["note"]:
                print(f"        # {deploy['note']}")
    return 0


def _schedule(args: argparse.Namespace, con, f, drafters: dict[str, str]) -> int:
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


def curve_run(args: argparse.Namespace) -> int:
    with open_store(args.db) as con:
        dims = checked(con, family=args.family, method=args.method, workload=args.workload, gpu=args.gpu,
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
