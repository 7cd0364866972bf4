"""One vLLM ``/metrics`` text → one validated :class:`Sample` (or a :class:`BadExposition` that says why).

Parsed with ``prometheus_client``'s text parser. Kept: the spec-decode counters (drafts, draft tokens,
accepted tokens, accepted per position — vLLM's definitions, DESIGN "Metric definitions"), the token
and request counters that give throughput, the latency histograms (TTFT, TPOT, e2e) the A/B readout
takes p99s from, and ``process_start_time_seconds`` (a changed value marks a restart). Samples are
summed over every other label (``model_name``, ``engine``) as the runner does (runner/vllm/metrics.py).

A sample is refused whole — never stored half right — when the text does not parse, is cut off (no
final newline: a truncated body can end inside a number), or contradicts vLLM's own invariants (accepted ≤
draft tokens, Σ accepted per position = accepted, the per-position counts not increasing with position).

A *series* that lies is refused on its own, named in :attr:`Sample.refused` (the watcher warns): a counter or
bucket count that is non-finite, negative or ≥ :data:`MAX_COUNTER`; a histogram bucket whose ``le`` is missing,
not a number, NaN or −Inf; a series (name + label set) that appears twice in the page (both copies — never
summed). Since a field is a sum over series, a refused series leaves its whole field unknown for that
sample rather than a partial sum: its counter is stored as not exported, its histogram is not stored, and
any refused spec-decode series drops the spec-decode group (drafts, draft and accepted tokens, per
position) together, so acceptance is never computed from counters of different completeness.

Bounded in memory and time against pages the watch does not control: parsed series are cached in at most
:data:`SERIES_CACHE_BYTES`; a page's series text past :data:`MAX_PAGE_LABEL_BYTES`, and any series longer than
:data:`MAX_SERIES_BYTES`, is refused unparsed (counted in :attr:`Sample.capped`, its field unknown); and
:func:`parse` takes a deadline, past which it stops with :class:`ParseDeadline`.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

from ingest.watch.bounded import ByteLRU, text_bytes

SPEC = {
    "vllm:spec_decode_num_drafts": "drafts",
    "vllm:spec_decode_num_draft_tokens": "draft_tokens",
    "vllm:spec_decode_num_accepted_tokens": "accepted_tokens",
}
PER_POS = "vllm:spec_decode_num_accepted_tokens_per_pos"
COUNTERS = {
    "vllm:generation_tokens": "generation_tokens",
    "vllm:prompt_tokens": "prompt_tokens",
    "vllm:request_success": "requests_ok",
}
# vLLM's latency histograms (seconds). TPOT is vLLM's per-request time per output token; older servers
# only have the per-step series, read as TPOT when the per-request one is absent.
HISTOGRAMS = {
    "vllm:time_to_first_token_seconds": "ttft",
    "vllm:request_time_per_output_token_seconds": "tpot",
    "vllm:time_per_output_token_seconds": "tpot_step",
    "vllm:e2e_request_latency_seconds": "e2e",
}
NOT_OK = ("abort", "error")  # vllm:request_success_total counts these finish reasons too; they are not successes
PROCESS_START = "process_start_time_seconds"
VALUE_FIELDS = ("drafts", "draft_tokens", "accepted_tokens", "generation_tokens", "prompt_tokens", "requests_ok")
MAX_POSITIONS = 64
# Largest counter value stored: beyond 2**53 a float64 no longer holds every integer, so increases between
# scrapes are rounding noise (and no vLLM server counts 9e15 tokens). Larger values are refused as lies.
MAX_COUNTER = float(2**53)
SPEC_GROUP = frozenset({*SPEC.values(), "per_pos"})
# Only these series' lines reach the parser: a vLLM page has ~600 lines, of which ~100 are read here, and the
# pure-Python parser costs ~30 µs a line (100 targets every 15 s must stay under 5 % of a core).
_KEEP = ("vllm:spec_decode_num_", *(f"{n}{end}" for n in (
    *(f"{c}_total" for c in COUNTERS), *(f"{h}_bucket" for h in HISTOGRAMS), PROCESS_START) for end in ("{", " ")))


class BadExposition(ValueError):
    """The text cannot be a correct vLLM exposition; the message is one line saying why."""


@dataclass(slots=True)
class Sample:
    """Cumulative counters of one target at one instant (values as the server reports them)."""

    values: dict[str, float | None] = field(default_factory=dict)  # VALUE_FIELDS → value (None: not exported)
    per_pos: list[float] = field(default_factory=list)  # accepted at position 1..k (vLLM's position 0..k-1)
    histograms: dict[str, dict[float, float]] = field(default_factory=dict)  # ttft|tpot|e2e → {le: count}
    process_start_s: float | None = None
    refused: list[tuple[str, str]] = field(default_factory=list)  # (series, why) refused from this page
    capped: int = 0  # series refused by the label caps (counted, not listed: they may be fresh every page)

    @property
    def speculating(self) -> bool:
        return self.values.get("drafts") is not None


# The parsed-series cache is capped in bytes, not entries: a page can carry 100 kB labels, and a target that
# sends fresh series every scrape would otherwise grow the watcher by what it sends. 16 MiB holds ~20,000
# typical vLLM series (~150-byte keys plus their parsed labels and overhead): every distinct series of a
# 100-target fleet many times over, since a fleet's targets mostly repeat the same series keys.
SERIES_CACHE_BYTES = 16 << 20
# The series text (name and labels) of one page's kept lines is capped too. A real vLLM page's kept lines
# carry ~15 kB of it (a data-parallel server with a few model names ~0.5 MB); 4 MiB is ~8x that. Beyond it
# the extra series are refused without parsing their labels, so a hostile page costs neither memory nor time.
MAX_PAGE_LABEL_BYTES = 4 << 20
# One series' text is capped as well: prometheus_client's label parser is worse than linear in the number of
# labels (10,000 labels on one line parse in 0.16 s, 100,000 in 13 s), and a real vLLM series is < 1 kB.
MAX_SERIES_BYTES = 64 << 10
# Lines (or bytes of series text) between two looks at the clock while parsing against a deadline: ~15 ms of
# parsing at ~50 us a short line, ~0.1 s for 64 kB of labels.
DEADLINE_EVERY = 256
DEADLINE_EVERY_BYTES = 64 << 10


def _series_size(key: str, hit: tuple[str, dict[str, str]]) -> int:
    return text_bytes(key, hit[0], hit[1])


_SERIES: ByteLRU[str, tuple[str, dict[str, str]]] = ByteLRU(SERIES_CACHE_BYTES, _series_size)


def _series(key: str) -> tuple[str, dict[str, str]]:
    """A series' name and labels, parsed by prometheus_client's text parser the first time it is seen.

    A fleet's pages repeat the same series every scrape with new values: the label parser (pure Python, char
    by char) runs once per distinct series instead of once per line per scrape."""
    hit = _SERIES.get(key)
    if hit is None:
        (family,) = text_string_to_metric_families(key + " 0\n")
        (sample,) = family.samples
        hit = (sample.name, dict(sample.labels))
        _SERIES.put(key, hit)
    return hit


def _value(token: str) -> float:
    if "_" in token:  # Python's float() reads "1_0" as 10; the exposition format does not
        raise ValueError(f"bad value {token[:40]!r}")
    return float(token)


class ParseDeadline(BadExposition):
    """Parsing did not finish before the scrape's deadline (the page is refused, like a slow answer)."""


def _lines(text: str):
    """The lines of a series this module reads, found without splitting the whole page into a list."""
    i, n = 0, len(text)
    while i < n:
        j = text.find("\n", i)
        if j < 0:
            j = n
        if text.startswith(_KEEP, i):
            yield text[i:j]
        i = j + 1


def _samples(text: str, deadline: float | None = None):
    """(name, labels, value) of every line of a series this module reads (the rest are never parsed).

    Past :data:`MAX_PAGE_LABEL_BYTES` of series text, or for a series longer than :data:`MAX_SERIES_BYTES`, a
    line comes back with ``labels = None``: refused, its labels never parsed. With a ``deadline``
    (``time.monotonic()`` seconds) the clock is read every :data:`DEADLINE_EVERY` lines or
    :data:`DEADLINE_EVERY_BYTES` of series text, and :class:`ParseDeadline` raised once it has passed."""
    label_bytes = since_check = 0
    for n, line in enumerate(_lines(text), 1):
        if deadline is not None and (n % DEADLINE_EVERY == 0 or since_check > DEADLINE_EVERY_BYTES):
            since_check = 0
            if time.monotonic() > deadline:
                raise ParseDeadline(f"parsing stopped at line {n:,} of the kept series: the page took longer "
                                    "than the scrape's timeout")
        close = line.rfind("}")
        if close >= 0:
            key, rest = line[: close + 1], line[close + 1:].split()
        else:
            key, _, tail = line.partition(" ")
            rest = tail.split()
        if not 1 <= len(rest) <= 2:
            raise ValueError(f"line {line[:80]!r}: expected 'series value [timestamp]'")
        label_bytes += len(key)
        if label_bytes > MAX_PAGE_LABEL_BYTES or len(key) > MAX_SERIES_BYTES:
            yield key.partition("{")[0].strip(), None, _value(rest[0])
            continue
        since_check += len(key)
        name, labels = _series(key)
        yield name, labels, _value(rest[0])


def _base(name: str) -> str:
    return name[:-6] if name.endswith("_total") else name


def _field_of(name: str) -> str | None:
    """The sample field a series feeds (None for series that feed none), from its name alone."""
    if name.endswith("_bucket") and name[:-7] in HISTOGRAMS:
        return HISTOGRAMS[name[:-7]]
    base = _base(name)
    if base == PER_POS:
        return "per_pos"
    return SPEC.get(base) or COUNTERS.get(base)


def parse(text: str, *, strict_end: bool = True, deadline: float | None = None) -> Sample:
    """Parse a ``/metrics`` text; raises :class:`BadExposition` when it cannot be trusted.

    ``deadline`` (``time.monotonic()`` seconds): raise :class:`ParseDeadline` once parsing runs past it."""
    if strict_end and text and not text.endswith("\n"):
        raise BadExposition("exposition text is cut off (no final newline): refusing a possibly truncated value")
    if "vllm:" not in text:
        raise BadExposition("no vllm:* metrics in the exposition (is this a vLLM /metrics endpoint?)")
    totals: dict[str, float] = {}
    per_pos: dict[int, float] = {}
    hist: dict[str, dict[float, float]] = {}
    start = None
    refused: list[tuple[str, str]] = []
    bad_fields: set[str] = set()  # fields with a refused series: unknown for this sample, not a partial sum
    capped = 0

    def refuse(series: str, why: str, fld: str) -> None:
        refused.append((series, why))
        bad_fields.add(fld)

    try:
        lines = list(_samples(text, deadline))
        counts: dict[tuple[str, frozenset], int] = {}
        for name, labels, _v in lines:
            if labels is not None:
                k = (name, frozenset(labels.items()))
                counts[k] = counts.get(k, 0) + 1
        for name, labels, v in lines:
            if labels is None:  # past a label cap: refused unparsed, its field unknown (never a partial sum)
                capped += 1
                if (fld := _field_of(name)) is not None:
                    bad_fields.add(fld)
                continue
            if name.endswith("_created"):
                continue
            if name == PROCESS_START:
                if math.isfinite(v):
                    start = v
                continue
            series = _show(name, labels)
            dup = counts[(name, frozenset(labels.items()))] > 1
            if name.endswith("_bucket") and name[:-7] in HISTOGRAMS:
                key = HISTOGRAMS[name[:-7]]
                if dup:
                    refuse(series, "appears more than once in the page", key)
                    continue
                le = bucket_bound(labels.get("le"))
                if le is None:
                    refuse(series, f"bucket bound le={labels.get('le')!r} is not a number", key)
                    continue
                if (why := bad_count(v)) is not None:
                    refuse(series, why, key)
                    continue
                h = hist.setdefault(key, {})
                h[le] = h.get(le, 0.0) + v
                continue
            base = _base(name)
            if base == PER_POS:
                try:
                    pos = int(labels["position"])
                except (KeyError, ValueError):
                    raise BadExposition(f"{name}: position label missing or not an integer") from None
                if not 0 <= pos < MAX_POSITIONS:
                    raise BadExposition(f"{name}: position {pos} outside [0, {MAX_POSITIONS})")
                if dup:
                    refuse(series, "appears more than once in the page", "per_pos")
                elif (why := bad_count(v)) is not None:
                    refuse(series, why, "per_pos")
                else:
                    per_pos[pos] = per_pos.get(pos, 0.0) + v
            elif base in SPEC or base in COUNTERS:
                if labels.get("finished_reason") in NOT_OK:
                    continue
                key = SPEC.get(base) or COUNTERS[base]
                if dup:
                    refuse(series, "appears more than once in the page", key)
                elif (why := bad_count(v)) is not None:
                    refuse(series, why, key)
                else:
                    totals[key] = totals.get(key, 0.0) + v
    except BadExposition:
        raise
    except (ValueError, TypeError, KeyError, IndexError) as exc:
        raise BadExposition(f"exposition text does not parse ({' '.join(str(exc).split())[:160]})") from None
    if bad_fields & SPEC_GROUP:
        bad_fields |= SPEC_GROUP
    if "tpot" in bad_fields:  # never stand the per-step series in for a refused per-request TPOT
        bad_fields.add("tpot_step")
    for fld in bad_fields:
        totals.pop(fld, None)
        hist.pop(fld, None)
    if "per_pos" in bad_fields:
        per_pos.clear()
    if not lines or not (totals or per_pos or hist):
        if capped:
            raise BadExposition(f"every vLLM counter was refused: {capped:,} series past the label caps "
                                f"({MAX_PAGE_LABEL_BYTES >> 20} MiB a page, {MAX_SERIES_BYTES >> 10} kB a series)")
        if refused:
            series, why = refused[0]
            raise BadExposition(f"every vLLM counter was refused ({len(refused)} series; first: {series}: {why})")
        raise BadExposition("no vLLM spec-decode or token counters in the exposition")
    if "tpot" not in hist and "tpot_step" in hist:
        hist["tpot"] = hist.pop("tpot_step")
    hist.pop("tpot_step", None)
    positions = [per_pos.get(i, 0.0) for i in range(max(per_pos) + 1)] if per_pos else []
    sample = Sample(values={k: totals.get(k) for k in VALUE_FIELDS}, per_pos=positions, histograms=hist,
                    process_start_s=start, refused=refused, capped=capped)
    check_invariants(sample)
    return sample


def bad_count(v: float) -> str | None:
    """Why a counter or bucket count cannot be true (None when it can)."""
    if not math.isfinite(v) or v < 0:
        return f"value {v} is not a finite non-negative count"
    if v >= MAX_COUNTER:
        return f"value {v:g} is beyond {MAX_COUNTER:g} (2**53), where float counters lose whole counts"
    return None


def bucket_bound(text: str | None) -> float | None:
    """A bucket's upper bound, or None when it cannot order buckets (missing, not a number, NaN, −Inf)."""
    try:
        le = float(text) if text is not None and "_" not in text else None
    except ValueError:
        return None
    return None if le is None or math.isnan(le) or le == -math.inf else le


def _printable(text: str) -> str:
    return "".join(c if c.isprintable() else "?" for c in text)


def _show(name: str, labels: dict[str, str]) -> str:
    """A series as one short line for a warning (label values cut, so a hostile page cannot flood stderr)."""
    inner = ",".join(f'{k}="{_printable(v[:40])}"' for k, v in sorted(labels.items()))
    return (f"{name}{{{inner}}}" if labels else name)[:200]


def check_invariants(s: Sample) -> None:
    present = [s.values.get(k) is not None for k in SPEC.values()]
    if any(present) and not all(present):
        missing = [k for k in SPEC if s.values.get(SPEC[k]) is None]
        raise BadExposition(f"incomplete spec-decode counters (missing {', '.join(missing)}): text cut off?")
    if not all(present):
        return
    drafted, accepted = s.values["draft_tokens"] or 0.0, s.values["accepted_tokens"] or 0.0
    if accepted > drafted:
        raise BadExposition(f"accepted tokens ({accepted:g}) exceed drafted tokens ({drafted:g})")
    if s.per_pos:
        if abs(sum(s.per_pos) - accepted) > 0.5:
            raise BadExposition(f"accepted per position sums to {sum(s.per_pos):g}, not the accepted total "
                                f"{accepted:g}: text cut off or mixed from two servers?")
        if any(b > a + 0.5 for a, b in itertools.pairwise(s.per_pos)):
            raise BadExposition("accepted per position increases with position (impossible in vLLM)")
    for name, h in s.histograms.items():
        les = sorted(h)
        if les and not math.isinf(les[-1]):
            raise BadExposition(f"histogram {name} has no +Inf bucket: text cut off?")
        counts = [h[le] for le in les]
        if any(b < a - 0.5 for a, b in itertools.pairwise(counts)):
            raise BadExposition(f"histogram {name} buckets are not cumulative")
