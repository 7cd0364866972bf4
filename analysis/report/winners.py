"""The Winners report's summary: per GPU · family · workload, the pick at one load, its gain over no speculation
with the 95 % interval, the verdict in the one vocabulary (``tie · pick mtp·5 (p 0.04)``, analysis.vocabulary)
and in words, the full deploy command, and which answers are simulated, measured or imported (from an
:func:`analysis.winners.winners` document)."""

from __future__ import annotations

from collections import Counter

from analysis.labels import candidate_of, group_label
from analysis.report.document import Answer, Summary, interval_text, plural, signed_pct
from analysis.vocabulary import cell_words

BACKEND_WORDS = {
    "sim": "simulated by spectune's calibrated simulator (backend 'sim'), not measured on GPUs",
    "vllm": "measured on real vLLM servers",
    "import": "imported from other tools' result files",
}


def summary(doc: dict, metric_label: str, concurrency: object) -> Summary:
    cells = doc["cells"]
    question = (f"Which speculative-decoding method and depth gives the best {metric_label} at concurrency "
                f"{concurrency}, for each GPU × model family × workload?")
    several_loads = len({c.get("concurrency") for c in cells}) > 1
    return Summary(question=question, answers=tuple(_answer(c, several_loads) for c in cells), sources=sources(cells))


def _gain_text(c: dict, w: dict) -> str:
    gain = c.get("gain_vs_none_pct")
    if w["method"] == "none":
        return "no speculation is the fastest here"
    if gain is None:
        return "no baseline (none) measured in this group"
    if c.get("gain_vs_none_text"):  # with its certainty: "not separable from no speculation" when it includes 0
        return c["gain_vs_none_text"]
    return f"{signed_pct(gain)} vs none{interval_text(c.get('gain_vs_none_ci_pct'))}"


def _answer(c: dict, several_loads: bool = False) -> Answer:
    """The recommendation of one cell: the clear winner, or — when the evidence cannot separate candidates —
    the stated sensible pick among those within the equivalence margin (analysis.equivalence), whose deploy
    command it carries."""
    w = c["winner"]
    words = cell_words(c)  # the same words as every page shows for this cell
    best = candidate_of(w)
    verdict = c.get("verdict", "clear" if c["clear"] else "tie")
    pick = c.get("pick") if isinstance(c.get("pick"), dict) and c["pick"].get("method") else None
    chosen = pick if pick is not None and verdict != "clear" else None
    cand = candidate_of(chosen) if chosen else best
    gain_text = _gain_text(c, w)
    if chosen and cand != best:
        if chosen.get("gain_vs_none_text") and w["method"] != "none":  # the pick's own gain, with its certainty
            gain_text = chosen["gain_vs_none_text"]
        gap = chosen.get("gap_pct")
        behind = f"{gap:.1f} % behind" if isinstance(gap, int | float) else "behind"
        gain_text = f"{behind} the best point estimate {best} ({gain_text})"
    ru = c.get("runner_up")
    if verdict == "clear":
        ahead = (f" ahead of {candidate_of(ru)} by {c['margin_pct']:.1f} %"
                 if ru and c.get("margin_pct") is not None else "")
        chance = w.get("p_best")
        confidence = (f"clear winner{ahead}: best in {chance * 100:.0f} % of the paired replicates"
                      if isinstance(chance, int | float) else f"clear winner{ahead}")
    elif c.get("tie_text"):
        confidence = c["tie_text"]
    else:
        tied = [candidate_of(t) for t in c["tied"] if candidate_of(t) != best]
        shown = ", ".join(tied[:3]) + (f" and {len(tied) - 3} more" if len(tied) > 3 else "")
        confidence = (f"tie with {shown}: each has a real chance of being best; "
                      f"{best} has the best point estimate")
        if chosen:
            why = chosen.get("rule") or chosen.get("reason")
            confidence += f"; sensible pick: {cand}" + (f" ({why})" if why else "")
    confidence = f"{words.headline}; {confidence}" + (
        f"; chance of being best: {words.chances}" if words.chances and verdict != "clear" else "")
    notes = []
    if c.get("origin") == "predicted":
        notes.append("predicted by the factorized plan's model, not run")
    if c.get("grid_edge"):
        notes.append(c["grid_edge"]["text"])
    deploy = (chosen.get("deploy") if chosen else None) or c.get("deploy") or {}
    if deploy.get("note"):
        notes.append(deploy["note"])
    # the model (a group never mixes models), the dataset when given, and the load — "load not stated" always said
    group = group_label(c, with_load=several_loads or c.get("concurrency") is None)
    return Answer(group=group, candidate=cand, gain=gain_text, confidence=confidence,
                  command=deploy.get("command") or "", notes=tuple(notes))


def sources(cells: list[dict]) -> tuple[str, ...]:
    """One sentence per backend behind the answers, and how the modelled ones were modelled."""
    if not cells:
        return ("No cells match these filters.",)
    by_backend = Counter(c["backend"] for c in cells)
    out = []
    for backend, n in sorted(by_backend.items()):
        runs = sorted({str(c.get("run_id")) for c in cells if c["backend"] == backend})
        out.append(f"{n} of {plural(len(cells), 'answer')} {BACKEND_WORDS.get(backend, f'from backend {backend}')} "
                   f"(runs: {', '.join(runs)}).")
    kinds = Counter(((c.get("provenance") or {}).get("acceptance") or {}).get("kind") for c in cells
                    if (c.get("provenance") or {}).get("kind") == "modelled")
    if kinds:
        parts = ", ".join(f"{kind or 'unknown'} in {n}" for kind, n in sorted(kinds.items(), key=str))
        out.append(f"Modelled winners' acceptance rates: {parts} (see the provenance column of the table).")
    predicted = sum(c.get("origin") == "predicted" for c in cells)
    if predicted:
        out.append(f"{plural(predicted, 'winner')} predicted by the plan's model without being run.")
    return tuple(out)
