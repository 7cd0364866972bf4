"""Practical equivalence and the sensible pick (DESIGN's winner rule, docs/metrics.md).

The winner rule (analysis.winners.decide) gives each candidate its chance of being best (p_best), calls the best
point estimate **clear** when that chance reaches the stated threshold, and otherwise names the **tied** set (every
candidate with a real chance). This module adds what a user needs to act on it:

- **equivalent**: every candidate whose point estimate is within ``margin_pct`` (default 2 %) of the best —
  a difference that small is not worth acting on even when the interval is narrow (clearly beaten by 1 % still
  counts as equivalent);
- the **verdict**: ``clear`` (the winner is clear by p_best and nobody is within the margin), ``equivalent``
  (everyone in the tied set — or, for a clear winner, everyone within the margin — is within the margin: any of
  them will do, the pick is a clear answer), ``tie`` (a tied candidate further than the margin behind has a real
  chance of being best: the evidence does not separate them);
- the **sensible pick** among the equivalent candidates, by a stated rule: the shallowest depth (``none`` counts
  as depth 0), then the method already deployed (the default), then a method that needs no separate drafter
  checkpoint, then a fixed depth (a schedule or adaptive verification has moving parts: worth them only when it
  is ahead by more than the margin), then the best point estimate. Tied candidates beyond the margin are named
  but never picked: the evidence does not rule them out, yet their point estimates are worse by more than the
  margin;
- the **gap** of each candidate behind the best point estimate (%), so a 1 % tie reads differently from a 30 % one;
- the tie in plain words, with each named candidate's chance of being best:
  ``tie: mtp·4 (p 0.41), dspark·6 (p 0.33) and 3 more — pick mtp·4 (shallowest)``;
- the pick's gain over the user's default with its interval (``pick_gain_ci_pct``, ``pick_gain_text``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from analysis.gains import gain_text, gain_vs
from analysis.labels import and_more, candidate
from analysis.metrics import Metric
from analysis.rescore.config import NEEDS_DRAFT_MODEL

DEFAULT_MARGIN_PCT = 2.0
DEFAULT_CANDIDATE = ("mtp", 3)  # what a team runs before tuning (the re-score default, `mtp·3`)
RULE = ("shallowest depth, then the method already deployed (the default), then no drafter needed, "
        "then a fixed depth (over a schedule or adaptive verification), then the best point estimate")


@dataclass(frozen=True, slots=True)
class Judgement:
    verdict: str  # clear | equivalent | tie
    equivalent: list[int]  # candidate indices within the margin, best first (the winner first)
    beyond: list[int]  # tied candidates further behind than the margin
    pick: int
    pick_reason: str
    gaps: dict[int, float]  # candidate index → % behind the best point estimate (≥ 0)
    clearly_behind: int  # candidates the evidence separates from the best (not tied)


def gap_pct(best: float, other: float, higher_is_better: bool) -> float:
    """How much worse ``other`` is than ``best``, in % of ``best`` (0 when equal; inf when not finite)."""
    if not (np.isfinite(best) and np.isfinite(other)):
        return float("inf")
    if best == 0:  # e.g. a goodput of 0: only an equal value is "0 % behind"
        return 0.0 if other == best else float("inf")
    d = (best - other) if higher_is_better else (other - best)
    return float(d / abs(best) * 100)


def _depth(method: str, depth: int) -> int:
    return 0 if method == "none" else int(depth)


def _needs_drafter(method: str) -> bool:
    return method in NEEDS_DRAFT_MODEL


def p_near_best(reps: np.ndarray, margin_pct: float, higher_is_better: bool) -> np.ndarray:
    """Each row's chance of being best or within ``margin_pct`` of the best: the share of the replicate columns
    (columns with any finite value) in which it is at most the margin behind that column's best. A row without a
    finite value in a column does not count there; NaN rows get 0. What ``spectune tune`` drops a candidate on:
    below a small share it has no real chance of being best or equivalent."""
    reps = np.atleast_2d(np.asarray(reps, dtype=float))
    if reps.size == 0:
        return np.zeros(reps.shape[0])
    ok = np.isfinite(reps)
    cols = ok.any(axis=0)
    if not cols.any():
        return np.zeros(reps.shape[0])
    r = reps[:, cols]
    okc = ok[:, cols]
    f = margin_pct / 100.0
    if higher_is_better:
        best = np.where(okc, r, -np.inf).max(axis=0)
        near = r >= best * (1.0 - f) - 1e-12 * np.abs(best)
    else:
        best = np.where(okc, r, np.inf).min(axis=0)
        near = r <= best * (1.0 + f) + 1e-12 * np.abs(best)
    return (near & okc).sum(axis=1) / cols.sum()


def pick_among(cands: Sequence[tuple[str, int] | tuple[str, int, str]], default_method: str | None
               ) -> tuple[int, str]:
    """Index (into ``cands``: (method, depth[, mode]), best point estimate first) of the sensible pick, and the
    reason in words: the rule's criteria that set it apart from the others, in the rule's order."""
    keys = [(_depth(c[0], c[1]), c[0] != default_method, _needs_drafter(c[0]),
             (c[2] if len(c) > 2 else "fixed") != "fixed", i) for i, c in enumerate(cands)]
    ranked = sorted(range(len(cands)), key=lambda i: keys[i])
    best = ranked[0]
    if len(cands) == 1:
        return best, "best point estimate"
    names = ("shallowest", "deployed method", "no drafter needed", "fixed depth", "best point estimate")
    used: set[int] = set()
    for other in ranked[1:]:
        used.add(next(k for k in range(5) if keys[best][k] != keys[other][k]))
    words = [names[k] for k in sorted(used)]
    if cands[best][0] == "none" and 0 in used:
        words[0] = "no speculation needed"
    return best, ", then ".join(words)


def judge(methods: Sequence[str], depths: Sequence[int], values: np.ndarray, order: Sequence[int],
          tied: Sequence[int], metric: Metric, margin_pct: float = DEFAULT_MARGIN_PCT,
          default_method: str | None = DEFAULT_CANDIDATE[0], clear: bool | None = None,
          modes: Sequence[str] | None = None) -> Judgement:
    """Equivalence, verdict and sensible pick of one group (indices as in ``analysis.winners.Decision``).

    ``clear``: the winner rule's own verdict (p_best ≥ clear-at); a winner that is not clear is never called clear
    here, even when no other candidate reaches the tie threshold. None: clear when nobody else is tied."""
    w = order[0]
    finite = [j for j in order if np.isfinite(values[j])]
    gaps = {j: gap_pct(values[w], values[j], metric.higher_is_better) for j in finite}
    gaps[w] = 0.0  # the best is always its own equivalent, whatever its value
    equivalent = [j for j in finite if gaps[j] <= margin_pct + 1e-12] or [w]
    beyond = [j for j in tied if j != w and gaps.get(j, float("inf")) > margin_pct + 1e-12]
    verdict = "tie" if beyond else "equivalent" if len(equivalent) > 1 else "clear"
    if verdict == "clear" and clear is False:
        verdict = "tie"
    modes = modes or ["fixed"] * len(methods)
    k, reason = pick_among([(methods[j], int(depths[j]), modes[j]) for j in equivalent], default_method)
    return Judgement(verdict, equivalent, beyond, equivalent[k], reason, gaps, len(finite) - len(set(tied) | {w}))


def _pct(x: float) -> str:
    return f"{x:.1f} %" if x < 10 else f"{x:.0f} %"


def _with_p(name: str, p: float | None) -> str:
    return name if p is None else f"{name} (p {p:.2f})"


def tie_text(j: Judgement, names: Sequence[str], margin_pct: float, runner_up: int | None,
             tied: Sequence[int] = (), p_best: Sequence[float | None] | None = None) -> str:
    """The verdict in plain words (``names``: each candidate's notation, by index; ``p_best``: each one's chance
    of being best, said beside the named candidates)."""
    pick = names[j.pick]
    w = j.equivalent[0]

    def p(i: int) -> float | None:
        return p_best[i] if p_best is not None else None

    if j.verdict == "clear":
        chance = f" (p {p(w):.2f})" if p(w) is not None else ""
        if runner_up is None:
            return f"clear: {pick} (the only candidate)"
        return f"clear: {pick}{chance}, {_pct(j.gaps[runner_up])} ahead of {names[runner_up]}"
    if j.verdict == "equivalent":
        eq = [names[i] for i in j.equivalent]
        return (f"equivalent within {margin_pct:g} %: {and_more(eq)} — pick {pick} ({j.pick_reason})")
    shown = list(tied or [w, *j.beyond])
    if p_best is not None:  # the likeliest first: the sentence says who has a real chance, and how much
        shown.sort(key=lambda i: -(p(i) or 0.0))
    tied_names = [_with_p(names[i], p(i)) for i in shown]
    worst = max((j.gaps[i] for i in j.beyond), default=0.0)
    within = (f"; {len(j.equivalent)} within {margin_pct:g} %" if len(j.equivalent) > 1
              else f"; none other within {margin_pct:g} %")
    if j.clearly_behind:
        within += f"; {j.clearly_behind} ruled out"
    return (f"tie: {and_more(tied_names)} (up to {_pct(worst)} behind on point estimates{within}) — "
            f"pick {pick} ({j.pick_reason})")


def cell_fields(rows: Sequence[dict], values: np.ndarray, order: Sequence[int], tied: Sequence[int],
                metric: Metric, margin_pct: float, default: tuple[str, int] | None, runner_up: int | None, *,
                p_best: Sequence[float | None] | None = None, reps: np.ndarray | None = None,
                clear: bool | None = None) -> dict:
    """The JSON fields one winners cell gains (verdict, equivalent, pick, tie_text, default).

    ``reps``: the candidates' paired replicates, for the intervals of the pick's gains (vs none, vs the default);
    ``clear``: the winner rule's verdict (see :func:`judge`)."""
    methods = [r["method"] for r in rows]
    depths = [int(r["depth"]) for r in rows]
    modes = [r.get("mode") or ("schedule" if r.get("schedule") else "fixed") for r in rows]
    schedules = [_schedule(r.get("schedule")) for r in rows]
    j = judge(methods, depths, values, order, tied, metric, margin_pct, default[0] if default else None, clear,
              modes)
    names = [candidate(m, d, md, sc) for m, d, md, sc in zip(methods, depths, modes, schedules, strict=True)]
    r = np.asarray(reps, dtype=float) if reps is not None else np.zeros((0, 0))

    def entry(i: int) -> dict:
        return {"method": methods[i], "depth": depths[i], "mode": modes[i], "schedule": schedules[i],
                "label": names[i], "value": _num(values[i]),
                "gap_pct": _num(j.gaps.get(i, float("nan"))),
                "p_best": None if p_best is None or p_best[i] is None else round(float(p_best[i]), 6)}

    base = next((i for i, m in enumerate(methods) if m == "none"), None)
    pg, pci = gain_vs(values, r, j.pick, base, metric)
    pick = {**entry(j.pick), "reason": j.pick_reason, "gain_vs_none_pct": _num(pg) if pg is not None else None,
            "gain_vs_none_ci_pct": pci,
            "gain_vs_none_text": gain_text(pg, pci, "none", winner_is_baseline=j.pick == base)}
    out = {"verdict": j.verdict, "equivalent": [entry(i) for i in j.equivalent], "pick": pick,
           "tie_text": tie_text(j, names, margin_pct, runner_up, tied, p_best), "clearly_behind": j.clearly_behind,
           "default": None}
    if default is not None:
        dm, dd = default
        idx = next((i for i in range(len(rows)) if methods[i] == dm and modes[i] == "fixed"
                    and (dm == "none" or depths[i] == int(dd))), None)
        if idx is not None and np.isfinite(values[idx]):
            # what switching from the default to the pick gains (+23 %: 1.23× throughput, or 1/1.23 the latency)
            gain, ci = gain_vs(values, r, j.pick, idx, metric)
            label = candidate(dm, dd)
            out["default"] = {"method": dm, "depth": 0 if dm == "none" else int(dd), "label": label,
                              "value": _num(values[idx]), "pick_gain_pct": _num(gain) if gain is not None else None,
                              "pick_gain_ci_pct": ci,
                              "pick_gain_text": ("the pick is the default" if idx == j.pick else
                                                 gain_text(gain, ci, f"{label} (your default)")),
                              "p_best": entry(idx)["p_best"],
                              "tied": idx in tied, "equivalent": idx in j.equivalent}
    return out


def _schedule(value: object) -> list[list[int]] | None:
    """A row's schedule (JSON text in the store, a list in a frame) as plain ranges; None without one."""
    if not value:
        return None
    ranges = json.loads(value) if isinstance(value, str) else value
    return [[int(x) for x in r] for r in ranges]


def _num(x: float) -> float | None:
    return None if x is None or not np.isfinite(x) else round(float(x), 6)
