"""Published head-to-head comparisons at batch 1 and the simulator's verdict on each (default data).

Comparisons are found in data/published_results.csv, not written here: rows of one source, one model and one
dataset that give the same metric for two of the simulator's methods — batch-1 throughput/speedup
(concurrency 1 or not stated) and acceptance length at the same depth. For each, the simulator's verdict
at c = 1 on the product family with that label, on every GPU and matching workload: the best depth of A vs
the best depth of B under the winner rule (replicates with model draws). The test prints every comparison
and its verdicts (``pytest -s``) and fails when a verdict is *clear* and opposite to the published one; a
tie is consistent with either. Comparisons on families the product does not simulate are printed, not held.
"""

from __future__ import annotations

import csv
import itertools
from collections import defaultdict

import numpy as np
import polars as pl
import pytest

from analysis import calibration, frames, winners
from analysis.metrics import get_metric
from ingest import store

METHODS = ("mtp", "eagle3", "dflash", "dspark", "ngram")
THROUGHPUT = ("speedup", "output_throughput_tok_s")


def comparisons() -> list[dict]:
    groups: dict[tuple, dict[str, float]] = defaultdict(dict)
    with open(calibration.PUBLISHED, newline="") as fh:
        for r in csv.DictReader(fh):
            if r["method"] not in METHODS:
                continue
            if r["metric"] in THROUGHPUT and r["concurrency"].strip() in ("1", ""):
                key = (r["source_url"], r["model"], r["model_family"], r["workload"], r["dataset"], r["metric"], "")
            elif r["metric"] == "acceptance_length" and r["depth"].strip():
                key = (r["source_url"], r["model"], r["model_family"], r["workload"], r["dataset"], r["metric"],
                       r["depth"])
            else:
                continue
            groups[key][r["method"]] = float(r["value"])
    out = []
    for (src, model, fam, wl, ds, metric, depth), vals in groups.items():
        for a, b in itertools.combinations(sorted(vals), 2):
            if vals[a] == vals[b]:
                continue
            win, lose = (a, b) if vals[a] > vals[b] else (b, a)
            out.append({"source": src, "model": model, "family": fam, "workload": wl, "dataset": ds,
                        "metric": "acceptance_length" if metric == "acceptance_length" else "output_throughput",
                        "depth": int(depth) if depth else None, "winner": win, "loser": lose,
                        "values": (vals[win], vals[lose])})
    return out


def _verdict(cells: pl.DataFrame, reps: np.ndarray, model: np.ndarray, metric: str, a: str, b: str,
             depth: int | None) -> str:
    m = get_metric(metric)
    pick = []
    for meth in (a, b):
        sub = cells.with_row_index("_i").filter(pl.col("method") == meth)
        if depth is not None:
            usable = sub.filter(pl.col("depth") <= depth)
            sub = usable.filter(pl.col("depth") == usable["depth"].max()) if usable.height else usable
        if sub.height == 0:
            return "n/a"
        best = sub.sort(metric, descending=m.higher_is_better).row(0, named=True)
        pick.append(best["_i"])
    idx = np.array(pick)
    values = cells[metric].to_numpy().astype(float)[idx]
    d = winners.decide(values, reps[idx], m)  # model draws are folded into the replicates (paired columns)
    if not d.clear:
        return "tie"
    return a if d.order[0] == 0 else b


@pytest.fixture(scope="module")
def c1(default_db):
    with store.session(default_db, read_only=True) as con:
        cells = frames.cells(con, frames.Filters(concurrency=(1,)))
        out = {}
        for metric in ("output_throughput", "acceptance_length"):
            out[metric] = (frames.replicates(con, cells, metric), frames.model_factors(con, cells, metric))
    return cells, out


def test_published_batch1_head_to_heads_and_the_simulators_verdicts(c1, capsys):
    cells, mats = c1
    comps = comparisons()
    assert any(c["metric"] == "output_throughput" for c in comps), "no published batch-1 throughput head to head"
    families = set(cells["family"].unique())
    lines, bad = [], []
    for c in comps:
        wls = [calibration.WORKLOAD_MAP[c["workload"]]] if c["workload"] in calibration.WORKLOAD_MAP \
            else sorted(set(cells["workload"]))
        head = (f"{c['winner']} > {c['loser']} ({c['values'][0]:g} vs {c['values'][1]:g} {c['metric']}"
                f"{'' if c['depth'] is None else ' @' + str(c['depth'])}) "
                f"{c['model']} / {c['dataset'][:30]} — {c['source']}")
        if c["family"] not in families:
            lines.append(f"  [not a simulated family: {c['family']}] {head}")
            continue
        verdicts = []
        for gpu, wl in itertools.product(sorted(set(cells["gpu"])), wls):
            mask = (cells["family"] == c["family"]) & (cells["gpu"] == gpu) & (cells["workload"] == wl)
            idx = np.flatnonzero(mask.to_numpy())
            reps, model = mats[c["metric"]]
            v = _verdict(cells[idx], reps[idx], model[idx] if model.size else model, c["metric"], c["winner"],
                         c["loser"], c["depth"])
            verdicts.append(f"{gpu}/{wl}: {v}")
            if v == c["loser"]:
                bad.append(f"{head}: simulator clearly says {v} on {c['family']} {gpu}/{wl}")
        lines.append(f"  {c['family']}: {head}\n      simulator at c=1: " + "; ".join(verdicts))
    with capsys.disabled():
        print("\npublished head-to-head comparisons (batch 1 throughput; acceptance at a stated depth):")
        print("\n".join(lines))
    assert not bad, "\n".join(bad)


def test_every_c1_winner_is_consistent_with_the_published_pairs(c1):
    """A c=1 group winner (clear) never contradicts a published pair on its family: it is never the loser
    of a pair whose published winner is in the same group."""
    cells, mats = c1
    reps, _model = mats["output_throughput"]
    doc = winners.decide_groups(cells, cells["output_throughput"].to_numpy().astype(float), reps,
                                get_metric("output_throughput"))  # model draws folded into reps
    pairs = [c for c in comparisons() if c["metric"] == "output_throughput"]
    for g in doc["cells"]:
        if not g["clear"]:
            continue
        for c in pairs:
            if c["family"] == g["family"] and (c["workload"] not in calibration.WORKLOAD_MAP
                                               or calibration.WORKLOAD_MAP[c["workload"]] == g["workload"]):
                assert g["winner"]["method"] != c["loser"], (g, c)
