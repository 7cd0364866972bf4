"""The Winners report's summary: per GPU · family · workload, the winning candidate at one load, its gain over
no speculation with the 95 % interval, the verdict in words, the full deploy command, and which answers are
simulated, measured or imported (from an :func:`analysis.winners.winners` document)."""

from __future__ import annotations

from collections import Counter

from analysis.report.document import Answer, Summary, candidate, interval_text, plural, signed_pct

BACKEND_WORDS = {
    "sim": "simulated by spectune's calibrated simulator (backend 'sim'), not measured on GPUs",
    "vllm": "measured on real vLLM servers",
    "import": "imported from other tools' result files",
}


def summary(doc: dict, metric_label: str, concurrency: object) -> Summary:
    cells = doc["cells"]
    question = (f"Which speculative-decoding method and depth gives the best {metric_label} at concurrency "
                f"{concurrency}, for each GPU × model family × workload?")
    return Summary(question=question, answers=tuple(_answer(c) for c in cells), sources=sources(cells))


def _answer(c: dict) -> Answer:
    w = c["winner"]
    cand = candidate(w["method"], w["depth"])
    gain = c.get("gain_vs_none_pct")
    if w["method"] == "none":
        gain_text = "no speculation is the fastest here"
    elif gain is None:
        gain_text = "no baseline (none) measured in this group"
    else:
        gain_text = f"{signed_pct(gain)} vs none{interval_text(c.get('gain_vs_none_ci_pct'))}"
    ru = c.get("runner_up")
    if c["clear"]:
        ahead = (f" ahead of {candidate(ru['method'], ru['depth'])} by {c['margin_pct']:.1f} %"
                 if ru and c.get("margin_pct") is not None else "")
        confidence = f"clear winner{ahead}: the 95 % interval of the difference excludes zero"
    else:
        tied = [candidate(t["method"], t["depth"]) for t in c["tied"] if (t["method"], t["depth"])
                != (w["method"], w["depth"])]
        shown = ", ".join(tied[:3]) + (f" and {len(tied) - 3} more" if len(tied) > 3 else "")
        confidence = (f"tie with {shown}: within the 95 % interval, any of them is as good; "
                      f"{cand} has the best point estimate")
        pick = c.get("pick")  # the stated pick among tied candidates, where the winners document names one
        if isinstance(pick, dict) and pick.get("method"):
            why = pick.get("rule") or pick.get("reason")
            confidence += f"; sensible pick: {candidate(pick['method'], pick.get('depth'))}" + (
                f" ({why})" if why else "")
    notes = []
    if c.get("origin") == "predicted":
        notes.append("predicted by the factorized plan's model, not run")
    if c.get("grid_edge"):
        notes.append(c["grid_edge"]["text"])
    deploy = c.get("deploy") or {}
    if deploy.get("note"):
        notes.append(deploy["note"])
    return Answer(group=f"{c['gpu']} · {c['family']} · {c['workload']}", candidate=cand, gain=gain_text,
                  confidence=confidence, command=deploy.get("command") or "", notes=tuple(notes))


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
