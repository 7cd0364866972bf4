"""Reading vLLM's counters from a Prometheus server: ``/api/v1/query_range``, one stored target per instance.

For a ``kind = "prometheus"`` target every series is queried as ``sum by (instance[, position|le])`` over
the target's selector, so each vLLM instance behind it becomes one stored target named
``<target>@<instance>`` with the same counters a direct scrape of it would give (summed over
``model_name``/``engine`` like the direct path). Long ranges are split so no query asks for more than
:data:`MAX_POINTS` steps. A Prometheus that answers an error (HTTP or ``status: error``) fails that target
for the round with Prometheus' own message; the samples of a step that break vLLM's invariants are
dropped and counted, never stored.
"""

from __future__ import annotations

import asyncio
import math
from collections import defaultdict
from dataclasses import dataclass, field

import httpx

from ingest.watch.exposition import (
    COUNTERS,
    HISTOGRAMS,
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


class PrometheusError(RuntimeError):
    """Prometheus could not answer a query; the message is one line."""


@dataclass(slots=True)
class RangeResult:
    samples: dict[str, dict[float, Sample]] = field(default_factory=dict)  # instance → ts → sample
    dropped: int = 0
    reasons: list[str] = field(default_factory=list)


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
                 step: float) -> list[dict]:
    base = target.url.rstrip("/")
    req = client.build_request("GET", f"{base}/api/v1/query_range",
                               params={"query": promql, "start": f"{start:.3f}", "end": f"{end:.3f}",
                                       "step": f"{step:g}"})
    import json

    try:
        text = await asyncio.wait_for(_get(client, str(req.url), headers_for(target)), target.timeout_s)
    except TimeoutError:
        raise PrometheusError(f"no answer within {target.timeout_s:g} s") from None
    except httpx.HTTPStatusError as exc:
        body = exc.response.text if exc.response is not None else ""
        raise PrometheusError(f"{exc}: {_error_of(body)}") from None
    except (httpx.HTTPError, BadExposition) as exc:
        raise PrometheusError(f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}") from None
    try:
        doc = json.loads(text)
    except ValueError:
        raise PrometheusError("answer is not JSON: not a Prometheus HTTP API?") from None
    if not isinstance(doc, dict) or doc.get("status") != "success":
        raise PrometheusError(f"Prometheus error: {_error_of(text)}")
    data = doc.get("data") or {}
    if data.get("resultType") != "matrix" or not isinstance(data.get("result"), list):
        raise PrometheusError("Prometheus answered no matrix for a range query")
    return data["result"]


async def _get(client: httpx.AsyncClient, url: str, headers: dict[str, str]) -> str:
    async with client.stream("GET", url, headers=headers) as resp:
        body = b""
        async for chunk in resp.aiter_bytes():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                raise BadExposition(f"answer larger than {MAX_BODY_BYTES >> 20} MiB")
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


async def query_range(client: httpx.AsyncClient, target: Target, start: float, end: float,
                      step: float) -> RangeResult:
    """Samples per instance and step timestamp over [start, end]."""
    if end < start:
        return RangeResult()
    span = step * (MAX_POINTS - 1)
    res = RangeResult()
    raw: dict[str, dict[float, dict]] = defaultdict(dict)
    t = start
    while t <= end:
        chunk_end = min(end, t + span)
        qs = queries(target.selector)
        answers = await asyncio.gather(*(_query(client, target, q, t, chunk_end, step) for q in qs.values()))
        for qid, series_list in zip(qs, answers, strict=True):
            for series in series_list:
                labels = series.get("metric") or {}
                inst = str(labels.get("instance", ""))
                for pair in series.get("values") or []:
                    v = _value(pair)
                    if v is None:
                        continue
                    ts = round(float(pair[0]), 3)
                    slot = raw[inst].setdefault(ts, {"values": {}, "pos": {}, "hist": defaultdict(dict),
                                                     "bad_hist": set()})
                    if qid != "start" and bad_count(v) is not None:
                        # a lying counter is left out: a spec-decode one makes the step incomplete (dropped below)
                        if qid.startswith("hist:"):
                            slot["bad_hist"].add(qid[5:])
                        continue
                    if qid == "pos":
                        slot["pos"][int(labels.get("position", -1))] = v
                    elif qid == "start":
                        slot["start"] = v
                    elif qid.startswith("hist:"):
                        le = bucket_bound(labels.get("le"))
                        if le is None:  # NaN or no bound: the buckets cannot be ordered, the histogram is not stored
                            slot["bad_hist"].add(qid[5:])
                        else:
                            slot["hist"][qid[5:]][le] = v
                    else:
                        slot["values"][qid] = v
        t = chunk_end + step
    for inst, by_ts in raw.items():
        for ts, slot in sorted(by_ts.items()):
            values = slot["values"]
            if not values:
                continue
            pos = slot["pos"]
            hist = {k: h for k, h in slot["hist"].items() if k not in slot["bad_hist"]}
            if "tpot" in slot["bad_hist"]:
                hist.pop("tpot_step", None)
            if "tpot" not in hist and "tpot_step" in hist:
                hist["tpot"] = hist.pop("tpot_step")
            hist.pop("tpot_step", None)
            s = Sample(values={k: values.get(k) for k in (*SPEC.values(), *COUNTERS.values())},
                       per_pos=[pos.get(i, 0.0) for i in range(max(pos) + 1)] if pos and min(pos) >= 0 else [],
                       histograms=hist, process_start_s=slot.get("start"))
            try:
                check_invariants(s)
            except BadExposition as exc:
                res.dropped += 1
                if len(res.reasons) < 3:
                    res.reasons.append(str(exc))
                continue
            res.samples.setdefault(inst, {})[ts] = s
    return res
