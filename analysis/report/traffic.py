"""The Your-traffic report's summary: per shard of the trace, the candidate to deploy, its gain over today's
default with the 95 % interval, the verdict in words, the full deploy command, and where the scores come from
(from an :func:`analysis.rescore.rescore` document)."""

from __future__ import annotations

from analysis.report.document import Answer, Summary, candidate, interval_text, signed_pct
from analysis.rescore.summary import config_words, schedule_words, verdict_words

BACKEND_WORDS = {"sim": "simulated benchmark cells (spectune's calibrated simulator, not GPUs)",
                 "vllm": "benchmark cells measured on real vLLM servers",
                 "import": "benchmark cells imported from other tools' result files"}


def summary(doc: dict, trace_name: str, metric_label: str) -> Summary:
    d = doc["default"]
    today = candidate(d["method"], d["depth"])
    t = doc["trace"]
    question = (f"Which speculative-decoding method and depth serves this traffic ({trace_name}, "
                f"{t['requests']:,} requests) best by {metric_label}, compared with today's {today}?")
    answers = tuple(_answer(r, today, len(doc["recommendations"]) > 1) for r in doc["recommendations"])
    warnings = tuple(dict.fromkeys([*t.get("warnings", []), *doc.get("warnings", [])]))
    return Summary(question=question, answers=answers, sources=sources(doc), warnings=warnings)


def _answer(r: dict, today: str, several: bool) -> Answer:
    cand = config_words(r["method"], r["depth"], r.get("schedule"))  # a schedule in words, not "1-4→8,…"
    gain = r.get("gain_vs_default_pct")
    gain_text = ("today's default was not scored" if gain is None
                 else f"{signed_pct(gain)} vs {today}{interval_text(r.get('gain_ci_pct'))}")
    # the one vocabulary, as on the page and in the CLI: "clear (p 0.97)" / "tie with … (p …): any of them …"
    confidence = verdict_words(r)
    if r["clear"] and isinstance(r.get("p_best"), int | float):
        confidence += f": best in {r['p_best'] * 100:.0f} % of the paired replicates"
    if not r["clear"] and r.get("keep_default"):
        confidence += f"; today's {today} is among them, so keeping it costs nothing measurable"
    load = r.get("load") or {}
    notes = []
    if load.get("mean_concurrency") is not None:
        notes.append(f"scored at a mean concurrency of {load['mean_concurrency']:g}")
    deploy = r.get("deploy") or {}
    if deploy.get("note"):
        notes.append(deploy["note"])
    if r.get("static_vs_scheduled"):
        notes.append(schedule_words(r["static_vs_scheduled"]))
    group = f"{r['family']} on {r['gpu']}" + (f" · shard {r['shard']}" if several or r["shard"] else "")
    return Answer(group=f"{group} ({r['requests']:,} requests)", candidate=cand, gain=gain_text,
                  confidence=confidence, command=deploy.get("command") or "", notes=tuple(notes))


def sources(doc: dict) -> tuple[str, ...]:
    t = doc["trace"]
    fmt = f" ({t['format']} format)" if t.get("format") else ""
    out = [f"Traffic measured: {t['requests']:,} requests read from {t.get('name') or 'the trace'}{fmt}; "
           "lengths and arrivals are the file's own."]
    backends = doc.get("backends") or []
    if backends:
        out.append("Speeds: modelled for this traffic from " + " and ".join(BACKEND_WORDS.get(b, b) for b in backends)
                   + ".")
    shares = [r.get("provenance") or {} for r in doc["recommendations"]]
    filled = [p for p in shares if p and p.get("measured", 1.0) < 1.0]
    if filled:
        out.append(f"{len(filled)} recommendation(s) rest partly on model-filled values where the store has no "
                   "cell (see the provenance column).")
    return tuple(out)
