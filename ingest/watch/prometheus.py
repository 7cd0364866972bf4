"""Reading vLLM's counters from a Prometheus server: ``/api/v1/query_range``, one stored target per instance.

For a ``kind = "prometheus"`` target every series is queried as ``sum by (instance[, position|le])`` over
the target's selector, so each vLLM instance behind it becomes one stored target named
``<target>@<instance>`` with the same counters a direct scrape of it would give (summed over
``model_name``/``engine`` like the direct path). Long ranges are split so no query asks for more than
:data:`MAX_POINTS` steps. A Prometheus that answers an error (HTTP or ``status: error``) fails that target
for the round with Prometheus' own message; the samples of a step that break vLLM's invariants are
dropped and counted, never stored.

Steps lie on the step grid (:func:`grid`), so a step read again has the same timestamp and is stored once.
A step is stored only when complete (every series the instance exports present at it); an incomplete one
is dropped whole. ``timeout_s`` covers a chunk's queries, decoding and reading; instances are capped
(:data:`MAX_INSTANCES`, :data:`MAX_INSTANCE_CHARS`).
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import httpx

from ingest.watch.bounded import ByteLRU
from ingest.watch.exposition import (
    COUNTERS,
    HISTOGRAMS,
    MAX_POSITIONS,
    PER_POS,
    SPEC,
    BadExposition,
    Sample,
    bad_count,
    bucket_bound,
    check_invariants,
)
from ingest.watch.scrape import MAX_BODY_BYTES, headers_for
from ingest.watch.targets import Target

MAX_POINTS = 10_000
# Instances kept per Prometheus target and answer, and the longest instance label: each instance becomes a
# stored target with state in the watcher (labels, completeness), so a Prometheus that answers fresh or
# huge instance labels every poll must not grow the watcher. 1,000 instances is a large fleet behind one
# selector; an instance label is host:port (a DNS name is at most 253 characters).
MAX_INSTANCES = 1_000
DEADLINE_EVERY = 4096  # values read between two looks at the clock (~5 ms)
# Answers longer than this are decoded off the event loop: json.loads takes ~1.3 s for 8 MB of small
# [ts, "v"] pairs (~5 s at the 32 MiB body cap) and cannot be interrupted, so a target past its timeout
# leaves its decode running in this pool, bounded by the body cap, while the round goes on without it. A pool
# of its own: the round neither waits for such a decode at exit nor queues other targets' work behind it.
INLINE_JSON_CHARS = 256 << 10
_DECODER = ThreadPoolExecutor(max_workers=8, thread_name_prefix="watch-prom-json")
MAX_INSTANCE_CHARS = 260


class PrometheusError(RuntimeError):
    """Prometheus could not answer a query; the message is one line."""


@dataclass(slots=True)
class RangeResult:
    samples: dict[str, dict[float, Sample]] = field(default_factory=dict)  # instance → ts → sample
    dropped: int = 0
    reasons: list[str] = field(default_factory=list)
    refused_instances: int = 0  # instances past MAX_INSTANCES, or with a label too long or not printable


def queries(selector: str) -> dict[str, str]:
    """Query id → PromQL. Ids: a value field, ``pos``, ``start`` or ``hist:<name>``."""
    out = {key: f"sum by (instance) ({name}_total{selector})" for name, key in {**SPEC, **COUNTERS}.items()}
    inner = selector.strip()[1:-1].strip().rstrip(",")
    ok_only = "{" + (inner + ", " if inner else "") + 'finished_reason!~"abort|error"}'
    out["requests_ok"] = f"sum by (instance) (vllm:request_success_total{ok_only})"
    out["pos"] = f"sum by (instance, position) ({PER_POS}_total{selector})"
    out["start"] = f"max by (instance) (process_start_time_seconds{selector})"
    for name, key in HISTOGRAMS.items():
        out[f"hist:{key}"] = f"sum by (instance, le) ({name}_bucket{selector})"
    return out


async def _query(client: httpx.AsyncClient, target: Target, promql: str, start: float, end: float,
                 step: float, deadline: float) -> list[dict]:
    base = target.url.rstrip("/")
    req = client.build_request("GET", f"{base}/api/v1/query_range",
                               params={"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}",
                                       "step": f"{step:g}"})
    try:
        text = await asyncio.wait_for(_get(client, str(req.url), headers_for(target)),
                                      max(0.0, deadline - time.monotonic()))
        if len(text) <= INLINE_JSON_CHARS:
            doc = _json(text)
        else:  # decoding cannot be interrupted: a thread of its own, waited for only until the deadline
            doc = await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(_DECODER, _json, text),
                                         max(0.0, deadline - time.monotonic()))
    except TimeoutError:
        raise PrometheusError(f"no answer within {target.timeout_s:g} s") from None
    except httpx.HTTPStatusError as exc:
        body = exc.response.text if exc.response is not None else ""
        raise PrometheusError(f"{exc}: {_error_of(body)}") from None
    except (httpx.HTTPError, BadExposition) as exc:
        raise PrometheusError(f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}") from None
    if doc is None:
        raise PrometheusError("answer is not JSON: not a Prometheus HTTP API?")
    if not isinstance(doc, dict) or doc.get("status") != "success":
        raise PrometheusError(f"Prometheus error: {_error_of(text)}")
    data = doc.get("data") or {}
    if data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise PrometheusError("Prometheus answered no matrix for a range query")
    return data["result"]


def _json(text: str) -> object | None:
    import json

    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


async def _get(client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> str:
    async with client.stream("GET", url, headers=headers) as resp:
        chunks, size = [], 0
        async for chunk in resp.aiter_bytes():  # joined once at the end: += on bytes copies the body every chunk
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_BODY_BYTES:
                raise BadExposition(f"answer larger than {MAX_BODY_BYTES >> 20} MiB")
        body = b"".join(chunks)
        if resp.status_code != 200:
            resp._content = body  # so the error path can quote Prometheus' message
            raise httpx.HTTPStatusError(f"HTTP {resp.status_code}", request=resp.request, response=resp)
    return body.decode("utf-8", errors="replace")


def _error_of(body: str) -> str:
    import json

    try:
        doc = json.loads(body)
        return " ".join(f"{doc.get('errorType', '')}: {doc.get('error', '')}".split())[:200]
    except (ValueError, AttributeError):
        return " ".join(body.split())[:200] or "(empty answer)"


def _value(v: object) -> float | None:
    try:
        x = float(v[1])  # type: ignore[index]
    except (TypeError, ValueError, IndexError):
        return None
    return x if math.isfinite(x) else None


def grid(start: float, end: float, step: float) -> tuple[int, int, int]:
    """(first, last, step) in whole milliseconds on the step grid (multiples of the step since the epoch).

    Prometheus evaluates a range query at ``start + i * step``: an unaligned start gives every round its own
    timestamps, a step polled again a few milliseconds off is a new (target, ts) and stored again. On the
    grid the same step always has the same timestamp, so a re-poll or an overlapping backfill lands nothing
    twice (the store keeps the first (target, ts))."""
    step_ms = max(1, round(step * 1000))
    first = math.ceil(round(start * 1000, 3) / step_ms) * step_ms
    last = math.floor(round(end * 1000, 3) / step_ms) * step_ms
    return first, last, step_ms


def _position(labels: dict) -> int | None:
    try:
        pos = int(str(labels.get("position")))
    except ValueError:
        return None
    return pos if 0 <= pos < MAX_POSITIONS else None


def _present_key(qid: str, labels: dict) -> tuple:
    if qid == "pos":
        return ("pos", str(labels.get("position")))
    if qid.startswith("hist:"):
        return (qid, str(labels.get("le")))
    return (qid,)


def _new_slot() -> dict:
    return {"values": {}, "pos": {}, "hist": defaultdict(dict), "bad_hist": set(), "present": set()}


def _incomplete(slot: dict, required: set) -> str | None:
    missing = required - slot["present"]
    if not missing:
        return None
    show = ", ".join(sorted(":".join(k) for k in missing)[:3])
    return f"incomplete step: {len(missing)} of the instance's {len(required)} series missing ({show})"


async def query_range(client: httpx.AsyncClient, target: Target, start: float, end: float,
                      step: float, *, known: ByteLRU | None = None) -> RangeResult:
    """Samples per instance and step timestamp over [start, end], on the step grid (see :func:`grid`).

    A step is stored only when it is complete: every series the instance has (in this answer at the same
    process start, and in ``known`` — what earlier rounds saw of the same process) must be present at that
    step. A step with some missing (a scrape Prometheus was still writing, a series that went stale) is
    dropped whole, never stored with a field unknown or a depth that cannot be read."""
    first, last, step_ms = grid(start, end, step)
    res = RangeResult()
    if last < first:
        return res
    span = step_ms * (MAX_POINTS - 1)
    raw: dict[str, dict[float, dict]] = defaultdict(dict)
    refused_inst: set[str] = set()
    t = first
    while t <= last:
        chunk_end = min(last, t + span)
        qs = queries(target.selector)
        # timeout_s covers a chunk's queries, their decoding and the reading below (a look at the clock every
        # DEADLINE_EVERY values): an answer too large to read in time fails the target like a slow one
        deadline = time.monotonic() + target.timeout_s
        answers = await asyncio.gather(*(_query(client, target, q, t / 1000, chunk_end / 1000, step_ms / 1000,
                                                deadline) for q in qs.values()))
        n_values = 0
        for qid, series_list in zip(qs, answers, strict=True):
            for series in series_list:
                labels = series.get("metric") if isinstance(series, dict) else None
                values = series.get("values") if isinstance(series, dict) else None
                if not isinstance(labels, dict) or not isinstance(values, list):
                    continue  # not a Prometheus matrix series: nothing to read from it
                inst = str(labels.get("instance", ""))
                if inst not in raw and (len(inst) > MAX_INSTANCE_CHARS or not inst.isprintable()
                                        or len(raw) >= MAX_INSTANCES):
                    refused_inst.add(inst[:MAX_INSTANCE_CHARS])
                    continue
                key = _present_key(qid, labels)
                position = _position(labels) if qid == "pos" else 0
                if position is None:
                    continue  # a position that is no integer in [0, MAX_POSITIONS) cannot be a vLLM position
                for pair in values:
                    n_values += 1
                    if n_values % DEADLINE_EVERY == 0 and time.monotonic() > deadline:
                        raise PrometheusError(f"no complete answer within {target.timeout_s:g} s (reading "
                                              f"{n_values:,}+ values took longer)")
                    try:
                        ts = round(float(pair[0]), 3)
                    except (TypeError, ValueError, IndexError):
                        continue
                    slot = raw[inst].get(ts)
                    if slot is None:
                        slot = raw[inst][ts] = _new_slot()
                    slot["present"].add(key)
                    v = _value(pair)
                    if qid == "start":
                        if v is not None:
                            slot["start"] = v
                        continue
                    if v is None or bad_count(v) is not None:
                        # a lying counter is left out: a spec-decode one makes the step incomplete (dropped below)
                        if qid.startswith("hist:"):
                            slot["bad_hist"].add(qid[5:])
                        continue
                    if qid == "pos":
                        slot["pos"][position] = v
                    elif qid.startswith("hist:"):
                        le = bucket_bound(labels.get("le"))
                        if le is None:  # NaN or no bound: the buckets cannot be ordered, the histogram is not stored
                            slot["bad_hist"].add(qid[5:])
                        else:
                            slot["hist"][qid[5:]][le] = v
                    else:
                        slot["values"][qid] = v
        t = chunk_end + step_ms
    res.refused_instances = len(refused_inst)
    for inst, by_ts in raw.items():
        # what a complete step of this instance holds: every series seen at a step of the same process
        by_start: dict[float | None, set] = defaultdict(set)
        for slot in by_ts.values():
            by_start[slot.get("start")] |= slot["present"]
        any_start = any(k is not None for k in by_start)
        newest = max(by_ts, key=lambda ts: ts)
        newest_start = by_ts[newest].get("start")
        if known is not None:
            prev = known.get(inst)
            if prev is not None and prev[0] in by_start:
                by_start[prev[0]] |= prev[1]
            if newest_start is not None or not any_start:
                known.put(inst, (newest_start, frozenset(by_start[newest_start])))
        for ts, slot in sorted(by_ts.items()):
            required = set(by_start[slot.get("start")])
            if any_start:
                required.add(("start",))
            why = _incomplete(slot, required)
            if why is None and not slot["values"]:
                continue
            if why is None:
                try:
                    s = _sample(slot)
                    check_invariants(s)
                except BadExposition as exc:
                    why = str(exc)
            if why is not None:
                res.dropped += 1
                if len(res.reasons) < 3 and why not in res.reasons:
                    res.reasons.append(why)
                continue
            res.samples.setdefault(inst, {})[ts] = s
    return res


def _sample(slot: dict) -> Sample:
    values, pos = slot["values"], slot["pos"]
    hist = {k: h for k, h in slot["hist"].items() if k not in slot["bad_hist"]}
    if "tpot" in slot["bad_hist"]:
        hist.pop("tpot_step", None)
    if "tpot" not in hist and "tpot_step" in hist:
        hist["tpot"] = hist.pop("tpot_step")
    hist.pop("tpot_step", None)
    return Sample(values={k: values.get(k) for k in (*SPEC.values(), *COUNTERS.values())},
                  per_pos=[pos.get(i, 0.0) for i in range(max(pos) + 1)] if pos and min(pos) >= 0 else [],
                  histograms=hist, process_start_s=slot.get("start"))
