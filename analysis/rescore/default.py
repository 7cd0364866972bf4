"""What the store knows about the user's default (``--default METHOD:DEPTH``), and the warning it calls for.

Owns the default's standing per family × GPU. Every "+x % vs default" is only as good as the default's
own number, so the result says where that number came from:

* ``measured`` — the store has cells for this method at this depth;
* ``model-filled`` — the method is measured at other depths and this depth lies between them: the
  acceptance/cost model moves a measured depth (analysis.rescore.fill, ``model:depth``);
* ``extrapolated`` — the same fill, but beyond the measured depths (e.g. ``mtp·9`` when mtp was measured
  at 1–8): the model is used outside the range it was checked on;
* ``model-filled from none`` — the method was never measured on this family × GPU: its cells come from
  the ``none`` cells with the published-results calibration (``model:none``);
* ``not in store`` — never measured and no model for it: it cannot be scored, so there is no gain.

Anything but ``measured`` is a warning (analysis.rescore.core puts it in the JSON ``warnings``; the page
shows it as a banner).
"""

from __future__ import annotations

from analysis import params
from analysis.rescore.config import Choice
from analysis.rescore.matrix import Matrix


def notation(choice: Choice) -> str:
    """``mtp·3``; ``none`` alone for no speculation."""
    return "none" if choice.method == "none" else f"{choice.method}·{choice.depth}"


def _span(depths: list[int]) -> str:
    return f"{depths[0]}" if len(depths) == 1 else f"{depths[0]}–{depths[-1]}"


def standing(m: Matrix, choice: Choice) -> dict:
    """The default's standing on one family × GPU (see the module docstring): status, measured depths, why."""
    depths = sorted({d for mm, d in m.choices() if mm == choice.method})
    label = notation(choice)
    out = {"family": m.family, "gpu": m.gpu, "label": label, "method": choice.method, "depth": choice.depth,
           "measured_depths": depths}
    if (choice.method, choice.depth) in m.choices():
        return {**out, "status": "measured", "detail": f"{label} is measured"}
    if depths:
        outside = choice.depth < depths[0] or choice.depth > depths[-1]
        return {**out, "status": "extrapolated" if outside else "model-filled",
                "detail": f"{choice.method} was measured at depth {_span(depths)}, so the acceptance/cost model "
                          + (f"extrapolates to depth {choice.depth}" if outside else
                             f"fills depth {choice.depth} from the nearest measured depth")}
    p = params.load()
    if choice.method in p.methods and m.family in p.families and any(mm == "none" for mm, _d in m.choices()):
        return {**out, "status": "model-filled from none",
                "detail": f"{choice.method} is not in the store: {label} is modelled from the none cells with the "
                          "published-results calibration"}
    return {**out, "status": "not in store",
            "detail": f"{choice.method} has no measured cell and no model, so {label} cannot be scored and there "
                      "is no gain vs default"}


def warnings(standings: list[dict]) -> list[str]:
    """One warning per kind of unmeasured default, naming the family × GPU pairs it holds for (none when the
    default is measured everywhere)."""
    groups: dict[tuple[str, str], list[dict]] = {}
    for st in standings:
        if st["status"] != "measured":
            groups.setdefault((st["status"], st["detail"]), []).append(st)
    out = []
    for (status, detail), sts in groups.items():
        where = ", ".join(f"{st['family']}/{st['gpu']}" for st in sts)
        label = sts[0]["label"]
        if status == "not in store":
            out.append(f"default {label} not in the store on {where}: {detail}")
            continue
        shares: dict[str, float] = {}
        for st in sts:
            for k, v in (st.get("provenance") or {}).items():
                shares[k] = shares.get(k, 0.0) + v / len(sts)
        numbers = ", ".join(f"{k} {v:.0%}" for k, v in sorted(shares.items(), key=lambda kv: -kv[1]))
        tail = f" (its numbers: {numbers})" if numbers else ""
        out.append(f"default {label} never measured ({status}) on {where}: {detail}{tail}; every gain vs default "
                   "rests on that model — measure it, or pick a measured default")
    return out
