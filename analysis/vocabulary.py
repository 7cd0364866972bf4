"""One vocabulary for a winners cell on every page and report (docs/metrics.md "One vocabulary").

Owns :func:`cell_words`: from one cell of an ``analysis.winners`` document, the words every view shows for it —
the **verdict** (clear / tie / equivalent), the **best** point estimate, the **pick** (what we recommend, why,
and its chance of being best), the pick's gain over no speculation *with its certainty* (its 95 % interval, or
"not separable from none" when the interval includes 0) and the chances of the top candidates. The Winners
heatmap and its drill-down, the load strip, the GPUs page, the Trade-offs goodput heatmap and the reports all
read these strings, so the same cell says the same thing wherever it is shown. Nothing is computed here beyond
formatting the document's own figures.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from analysis.labels import candidate_of

VERDICTS = ("clear", "equivalent", "tie")  # legend order: the strongest statement first
NOT_SEPARABLE = "not separable from none"


@dataclass(frozen=True, slots=True)
class CellWords:
    verdict: str  # clear / equivalent / tie
    best: str  # the best point estimate, ``mtp·6``
    pick: str  # what we recommend, ``mtp·5``
    pick_p: float | None  # the pick's p_best (None: no replicate to tell)
    best_p: float | None
    why: str  # the pick rule's reason (``shallowest``; ``clear winner`` on a clear cell)
    gain: str  # the pick's gain vs none with its certainty, short (``+179 % [+11, +340]``, ``not separable …``)
    headline: str  # ``tie · pick mtp·5 (p 0.04)``: the one line every page shows for the cell
    chances: str  # ``mtp·8 p 0.38, dflash·5 p 0.12, mtp·4 p 0.11``: the top candidates by p_best


def p_text(p: float | None) -> str:
    """A chance of being best as text: ``p 0.31``; ``p < 0.01`` below what two decimals show; ``p ?`` when there
    is no replicate to tell."""
    if p is None:
        return "p ?"
    return "p < 0.01" if p < 0.005 else f"p {p:.2f}"  # never "p 0.00": a chance too small to print, not none


def _signed(x: float) -> str:
    return f"{x:+.0f}" if abs(x) >= 10 else f"{x:+.1f}"


def gain_short(gain: float | None, ci: list | tuple | None, *, is_none: bool = False) -> str:
    """The gain over no speculation in a few characters, never without its certainty: ``+38 % [+21, +55]``
    (95 % interval), ``not separable from none`` when the interval includes 0, ``no speculation`` for the
    baseline itself, ``gain: no interval`` when there is a figure but no interval, empty when no figure."""
    if is_none:
        return "no speculation"
    if gain is None:
        return ""
    if not ci or ci[0] is None or ci[1] is None:
        return f"{_signed(gain)} % (no interval)"
    if ci[0] <= 0 <= ci[1]:
        return NOT_SEPARABLE
    return f"{_signed(gain)} % [{_signed(ci[0])}, {_signed(ci[1])}]"


def cell_words(c: Mapping, top: int = 3) -> CellWords:
    """The words of one winners cell (see the module docstring)."""
    w = c["winner"]
    pick = c.get("pick") or {**w, "reason": "clear winner"}
    verdict = c.get("verdict") or ("clear" if c.get("clear") else "tie")
    p_of = {candidate_of(x): x.get("p_best") for x in c.get("candidates") or []}
    pick_p = pick.get("p_best", p_of.get(candidate_of(pick)))
    best_p = c.get("p_best_winner", w.get("p_best"))
    gain_holder = pick if "gain_vs_none_pct" in pick else c
    gain = gain_short(gain_holder.get("gain_vs_none_pct"), gain_holder.get("gain_vs_none_ci_pct"),
                      is_none=pick["method"] == "none")
    ranked = sorted((x for x in c.get("candidates") or [] if x.get("p_best") is not None),
                    key=lambda x: -x["p_best"])[:top]
    chances = ", ".join(f"{candidate_of(x)} {p_text(x['p_best'])}" for x in ranked)
    name = candidate_of(pick)
    why = "clear winner" if verdict == "clear" else (pick.get("reason") or "")
    return CellWords(verdict=verdict, best=candidate_of(w), pick=name, pick_p=pick_p,
                     best_p=best_p, why=why, gain=gain, headline=f"{verdict} · pick {name} ({p_text(pick_p)})",
                     chances=chances)


def verdicts_present(cells: list[Mapping]) -> list[str]:
    """The verdicts that occur among ``cells``, in legend order: a legend names only the states on screen."""
    seen = {cell_words(c).verdict for c in cells}
    return [v for v in VERDICTS if v in seen] + sorted(seen - set(VERDICTS))
