"""The answer at a glance: one sentence, computed from a winners document over every load.

:func:`summary` reads an ``analysis.winners`` document (cells carrying ``verdict`` and ``pick`` from
analysis.equivalence) and counts what the landing page and ``spectune winners --json`` (key
``summary``) say in one sentence: how many cells are clear, equivalent or tied; how many methods and depths are
the sensible pick somewhere; in how many GPU × model × workload [× dataset] groups the pick changes with (stated)
load; what the
default (``mtp·3``) leaves on the table. Every figure is counted here, none is written in advance; simulated
data says so and ties are counted as ties.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from analysis.labels import candidate_of, load, model_short
from analysis.vocabulary import cell_words

GROUP_KEY = ("gpu", "family", "model", "workload", "dataset")  # a winners group without its load


def _plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else (many or word + 's')}"


def summary(doc: dict) -> dict:
    """Figures and the sentence (``text``) of a winners document; the same function feeds page and CLI."""
    cells = doc.get("cells") or []
    margin = doc.get("equivalence_margin_pct")
    verdicts = {v: sum(1 for c in cells if c.get("verdict") == v) for v in ("clear", "equivalent", "tie")}
    picks = [c["pick"] for c in cells if c.get("pick")]
    methods = sorted({p["method"] for p in picks})
    depths = sorted({int(p["depth"]) for p in picks if p["method"] != "none"})
    by_group: dict[tuple, dict[int | None, str]] = defaultdict(dict)
    for c in cells:
        if c.get("pick"):
            by_group[tuple(c.get(k) for k in GROUP_KEY)][c["concurrency"]] = candidate_of(c["pick"])
    # "changes with load" compares stated loads only: a load not stated is no point on the load axis
    stated = {g: {k: v for k, v in loads.items() if k is not None} for g, loads in by_group.items()}
    multi = {g: loads for g, loads in stated.items() if len(loads) > 1}
    changing = sum(1 for loads in multi.values() if len(set(loads.values())) > 1)
    loads = sorted({c["concurrency"] for c in cells}, key=lambda x: (x is None, x or 0))  # null last: not stated
    defaults = [c["default"] for c in cells if c.get("default") and c["default"].get("pick_gain_pct") is not None]
    default_label = defaults[0]["label"] if defaults else None
    median_left = round(statistics.median(d["pick_gain_pct"] for d in defaults), 1) if defaults else None
    default_inseparable = sum(1 for d in defaults if _not_separable(d))
    tied_sizes = [len(c["tied"]) for c in cells if c.get("verdict") == "tie" and c.get("tied")]
    out = {
        "cells": len(cells), "groups": len(by_group), "loads": loads,
        "load_not_stated_cells": sum(1 for c in cells if c["concurrency"] is None),
        "simulated": bool(doc.get("simulated")),
        "metric": doc.get("metric"), "margin_pct": margin, **{f"{k}_cells": n for k, n in verdicts.items()},
        "pick_methods": methods, "pick_depths": depths, "groups_with_several_loads": len(multi),
        "groups_pick_changes_with_load": changing, "default": default_label, "default_cells": len(defaults),
        "default_median_left_pct": median_left, "default_not_separable_cells": default_inseparable,
        # how many candidates a tie names (p_best ≥ tie-at): "tie" with 3 chances reads differently from 40
        "median_tied": statistics.median(tied_sizes) if tied_sizes else None,
        "tie_at": (doc.get("p_best_rule") or {}).get("tie_at"),
    }
    out["text"] = sentence(out)
    out["answer"] = answer(doc)
    return out


def _where(cells: list[dict]) -> str:
    """Where a pick is clear, in words: ``on MI300X chat and MI355X code``, or — a pick being per model (model is
    a dimension) — ``for Kimi-K2.5 on MI300X code (MBPP), for Qwen3-8B on MI300X code and 3 more places``."""
    def place(c: dict) -> str:
        dataset = f" ({c['dataset']})" if c.get("dataset") else ""
        model = f"for {model_short(c['model'])} on " if c.get("model") else ""
        return f"{model}{c['gpu']} {c['workload']}{dataset}"

    places = list(dict.fromkeys(place(c) for c in cells))
    lead = "" if any(c.get("model") for c in cells) else "on "
    if len(places) <= 2:
        return lead + " and ".join(places)
    return lead + ", ".join(places[:2]) + f" and {_plural(len(places) - 2, 'more place')}"


def answer(doc: dict, shown: int = 3) -> str:
    """The plain answer that opens the landing page: what to run where and how sure it is. With clear cells:
    "Run mtp·4 for Qwen3.5-122B-A10B on MI300X chat (clear in 3 of 72 cells); …"; without: the picks we would
    try, how often each is the pick, and "measure before you deploy". Counted from the document; the wording of
    the vocabulary."""
    cells = [c for c in doc.get("cells") or [] if c.get("pick")]
    if not cells:
        return "No cells match these filters."
    n = len(cells)
    on = ("On simulated data" if doc.get("simulated") else
          "On the published figures" if all(c.get("source_url") for c in cells) else "On these measurements")
    name = {id(c): candidate_of(c["pick"]) for c in cells}
    clear = [c for c in cells if c.get("verdict") == "clear"]
    if not clear:
        freq: dict[str, int] = defaultdict(int)
        for c in cells:
            freq[name[id(c)]] += 1
        top = sorted(freq.items(), key=lambda kv: (-kv[1], kv[0]))
        listed = ", ".join(f"{k} ({v} of {n} cells)" for k, v in top[:shown])
        more = f" and {_plural(len(top) - shown, 'other')}" if len(top) > shown else ""
        return (f"{on} no cell has a clear winner: the picks we would try are {listed}{more}; "
                "measure before you deploy.")
    by_pick: dict[str, list[dict]] = defaultdict(list)
    for c in clear:
        by_pick[name[id(c)]].append(c)
    top = sorted(by_pick.items(), key=lambda kv: (-len(kv[1]), kv[0]))
    runs = "; ".join(f"{k} {_where(v)} (clear in {len(v)} of {n} cells)" for k, v in top[:shown])
    more = (f"; {_plural(len(top) - shown, 'other clear pick')}" if len(top) > shown else "")
    rest = n - len(clear)
    tail = (f"; the other {_plural(rest, 'cell')} {'is' if rest == 1 else 'are'} ties or equivalent: "
            "measure before you deploy there" if rest else "")
    return f"{on}: run {runs}{more}{tail}."


def lead(published: dict, rest: dict) -> str:
    """The landing page's opening answer over a store with published figures and other cells: the published
    answer first (real numbers, said so), then the rest's (simulated or measured), each in :func:`answer`'s
    words, so a newcomer reads what the published figures say before what the simulator suggests."""
    parts = [answer(d) for d in (published, rest) if d.get("cells")]
    return " ".join(parts) if parts else "No cells match these filters."


def _not_separable(d: dict) -> bool:
    """The default cannot be told from the pick: its gain interval includes 0 (the one meaning of "not
    separable"), or — without an interval — the default is tied or equivalent."""
    ci = d.get("pick_gain_ci_pct")
    if ci and ci[0] is not None and ci[1] is not None:
        return ci[0] <= 0 <= ci[1]
    return bool(d.get("tied") or d.get("equivalent"))


def sentence(s: dict) -> str:
    """The one sentence of :func:`summary`'s figures."""
    if not s["cells"]:
        return "No cells match these filters."
    parts = []
    n = s["cells"]
    where = f"{_plural(n, 'cell')} ({_plural(s['groups'], 'group')} × {_plural(len(s['loads']), 'load')}" + (
        f", {s['load_not_stated_cells']} with the load not stated)" if s.get("load_not_stated_cells") else ")")
    counts = [f"{s['clear_cells']} clear", f"{s['equivalent_cells']} equivalent within {s['margin_pct']:g} %",
              f"{s['tie_cells']} tied under the evidence"]
    if s["tie_cells"] == n:
        verdict = f"no cell has a clear winner: all {where} are ties the evidence cannot separate"
        if s.get("median_tied") is not None and s.get("tie_at") is not None:
            verdict += (f", each between a median {s['median_tied']:g} candidates with a real chance of being best "
                        f"(p ≥ {s['tie_at']:g})")
    elif s["clear_cells"] == n:
        verdict = f"a clear winner in every one of {where}"
    else:
        verdict = f"of {where}, " + ", ".join(c for c in counts if not c.startswith("0 "))
    ms, ds = s["pick_methods"], s["pick_depths"]
    if len(ms) == 1 and len(ds) <= 1:
        picks = "one sensible pick everywhere"
    else:
        picks = (f"no universal winner: the sensible picks use {_plural(len(ms), 'method')} and "
                 f"{_plural(len(ds), 'depth')}")
    parts.append(f"{verdict}; {picks}")
    if s["groups_with_several_loads"]:
        parts.append(f"the pick changes with load in {s['groups_pick_changes_with_load']} of "
                     f"{_plural(s['groups_with_several_loads'], 'group')}")
    if s["default"] is not None:
        left = s["default_median_left_pct"]
        txt = (f"`{s['default']}` everywhere leaves a median {left:.1f} % on the table" if left > 0 else
               f"`{s['default']}` everywhere gives up nothing on the median cell ({left:+.1f} %)")
        txt += f" on point estimates (not separable from the pick in {s['default_not_separable_cells']} of " \
               f"{s['default_cells']} cells)"
        parts.append(txt)
    text = "; ".join(parts) + "."
    text = text[0].upper() + text[1:]
    return ("Simulated data: " + text[0].lower() + text[1:]) if s["simulated"] else text


def split_published(doc: dict) -> tuple[dict, dict]:
    """A winners document cut in two: the published groups (imported figures that name their public source,
    ``source_url``) and the rest (simulated or measured here), each with its own ``backends``/``simulated`` —
    so the simulated banner and summary speak of the simulated part only."""
    def part(cells: list[dict]) -> dict:
        backends = sorted({c["backend"] for c in cells})
        return {**doc, "cells": cells, "backends": backends, "simulated": "sim" in backends}

    cells = doc.get("cells") or []
    return (part([c for c in cells if c.get("source_url")]), part([c for c in cells if not c.get("source_url")]))


def published(doc: dict) -> dict:
    """The published winner per model × dataset of a (published) winners document, for the landing page: one row
    per group — model, dataset, workload, GPU, the best (method·depth) on the source's own figures, its speedup
    over no speculation (the source's baseline), the verdict, the load ("load not stated" when the source gives
    none) and the source. ``sources``: the distinct source URLs; ``text``: one sentence."""
    rows = []
    for c in doc.get("cells") or []:
        w = c["winner"]
        gain = c.get("gain_vs_none_pct")
        words = cell_words(c)  # the one vocabulary: verdict · pick (p), the pick's gain with its interval
        rows.append({
            "model": model_short(c.get("model")), "model_id": c.get("model"), "dataset": c.get("dataset") or "",
            "workload": c["workload"], "gpu": c["gpu"], "best": candidate_of(w),
            "method": w["method"], "depth": int(w["depth"]), "value": w["value"],
            "speedup": None if gain is None else round(1 + gain / 100, 2),
            "verdict": c.get("verdict") or ("clear" if c["clear"] else "tie"), "load": load(c["concurrency"]),
            "headline": words.headline, "gain": words.gain,
            "source": c.get("source_url") or "",
        })
    rows.sort(key=lambda r: (r["model"], r["dataset"], r["workload"]))
    sources = sorted({r["source"] for r in rows if r["source"]})
    models = sorted({r["model"] for r in rows})
    methods = sorted({r["method"] for r in rows})
    text = (f"Published: {_plural(len(models), 'model')} × their datasets ({_plural(len(rows), 'group')}); the best "
            f"method on the source's own figures is {', '.join(methods)} depending on model and dataset; "
            f"load not stated by the source." if rows else "No published figures match these filters.")
    return {"rows": rows, "sources": sources, "models": models, "text": text}
