"""Reader for ``vllm bench serve --save-result`` JSON (and the legacy ``benchmarks/benchmark_serving.py``).

Shapes (vLLM's own keys): ``date, backend, model_id, num_prompts, request_rate, max_concurrency, duration,
completed, failed, request_throughput, output_throughput, total_token_throughput``, ``mean/median/std/pNN_
{ttft,tpot,itl,e2el}_ms``; with ``--save-detailed`` (always, in older versions) the per-request arrays
``input_lens, output_lens, ttfts, itls, errors`` (+ ``latencies``/``e2els``, ``start_times`` in newer
ones), times in **seconds**; spec-decode keys ``spec_decode_acceptance_rate`` (a **percent**),
``spec_decode_acceptance_length``, ``spec_decode_num_drafts``, ``spec_decode_draft_tokens``,
``spec_decode_accepted_tokens``, ``spec_decode_per_position_acceptance_rates``. The legacy shape spells
goodput ``request_goodput:`` (with the colon). ``--metadata k=v`` pairs are top-level keys. A file may
hold several results (``--append-result``): each is one cell.

Mapping: the file's headline numbers are stored as given (median → p50); percentiles the file lacks are
recomputed from the arrays the way vLLM does (numpy linear interpolation; TPOT over requests with > 1
output token). Requests with a non-empty ``errors`` entry are stored with ok = false. Window = ``duration``.
vLLM computes every statistic over ``samples or 0``, so an empty sample (all requests failed, none longer
than one token) reads 0 ms: such zeros are not stored, and a result with ``completed = 0`` lands as a
failed cell carrying the first error. ``request_rate`` is "inf" or a number (``Infinity`` literals too;
``request_inthroughput`` is the pre-0.4 spelling of ``request_throughput``). Look-alikes are refused by
name: pooling-model results, SGLang ``bench_serving`` output, the ``.pytorch.json`` copy.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from ingest import labels
from ingest.errors import InputError
from ingest.results import dims
from ingest.results.jsonstream import keep_top
from ingest.results.model import ParsedCell, ParsedFile, ReadOptions, import_run
from ingest.results.source import Doc, finite, json_docs

FORMAT = "vllm_bench"
# Keys every vllm bench serve / benchmark_serving.py result has; three of them identify the format.
MARKERS = frozenset({"duration", "completed", "output_throughput", "request_throughput", "total_token_throughput",
                     "num_prompts", "max_concurrency", "request_rate", "total_output_tokens"})
REQUIRED = ("duration", "completed", "output_throughput")
SECONDS_KEYS = ("ttfts", "latencies", "e2els", "start_times")
MAX_SECONDS = 1e6  # ~11.6 days: larger per-request times are corrupt data (and overflow to inf in ms)
ARRAYS = ("input_lens", "output_lens", "ttfts", "itls", "latencies", "e2els", "start_times", "errors")
LATENCIES = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2el": "e2e_ms"}
SCALARS = {"output_throughput": "output_throughput", "request_throughput": "request_throughput",
           "total_output_tokens": "output_tokens", "mean_ttft_ms": "mean_ttft_ms",
           "mean_tpot_ms": "mean_tpot_ms", "mean_e2el_ms": "mean_e2e_ms",
           "spec_decode_acceptance_length": "acceptance_length", "spec_decode_num_drafts": "drafts",
           "spec_decode_draft_tokens": "draft_tokens", "spec_decode_accepted_tokens": "accepted_tokens"}
ALIASES = {"request_throughput": "request_inthroughput"}  # vLLM ≤ 0.3 benchmark_serving.py spelled it so
FINITE_KEYS = ("output_throughput", "request_throughput", "total_token_throughput")
MEAN_LATENCIES = {"mean_ttft_ms": "ttft", "mean_tpot_ms": "tpot", "mean_e2el_ms": "e2el"}
# --metadata keys (and common spellings) that name spectune dimensions.
META_KEYS = {"method": "method", "spec_method": "method", "speculative_method": "method",
             "depth": "depth", "num_speculative_tokens": "depth", "family": "family", "workload": "workload",
             "gpu": "gpu", "gpu_count": "gpu_count", "tp": "gpu_count", "tensor_parallel_size": "gpu_count",
             "concurrency": "concurrency"}


# Every top-level key this reader looks at: their arrays/objects are built; any other array or object
# (``generated_texts``, a tool's own extras) is streamed past unbuilt. Scalars are always kept (--metadata).
READ_KEYS = frozenset({
    *ARRAYS, *SCALARS, *ALIASES.values(), *META_KEYS, *FINITE_KEYS,
    *(f"{stat}_{short}_ms" for short in LATENCIES for stat in ("p50", "p90", "p99", "median", "mean")),
    "duration", "completed", "failed", "request_rate", "max_concurrency", "model_id", "date", "backend",
    "request_goodput", "request_goodput:", "spec_decode_acceptance_rate", "spec_decode_per_position_acceptance_rates",
})
KEEP = keep_top(READ_KEYS)


def looks_like(doc: Any) -> bool:
    return isinstance(doc, dict) and len(MARKERS & set(doc)) >= 3


class _Doc:
    """One result document plus where its keys are, for error lines."""

    def __init__(self, path: Path, doc: Doc) -> None:
        self.path, self.doc, self.d = path, doc, doc.value

    def fail(self, key: str | None, message: str) -> InputError:
        line = self.doc.key_line(key) if key else self.doc.line
        return InputError(self.path, line, message)

    def number(self, key: str, *, minimum: float | None = None, maximum: float | None = None) -> float | None:
        if key not in self.d or self.d[key] is None:
            return None
        raw = self.d[key]
        if isinstance(raw, str) and raw.lower() in ("nan", "inf", "infinity"):
            return None
        value = finite(raw)
        if value is None:
            if isinstance(raw, float):  # NaN/inf literal: vLLM writes these for empty statistics
                return None
            raise self.fail(key, f"{key!r} must be a number, got {raw!r}"[:200])
        if (minimum is not None and value < minimum) or (maximum is not None and value > maximum):
            raise self.fail(key, f"{key!r} = {value} is out of range (expected {minimum} … {maximum})")
        return value

    def number_list(self, key: str, n: int | None) -> np.ndarray | None:
        raw = self.d.get(key)
        if raw is None:
            return None
        if not isinstance(raw, list) or (n is not None and len(raw) != n):
            got = f"{len(raw)} items" if isinstance(raw, list) else type(raw).__name__
            raise self.fail(key, f"{key!r} must be a list of {n} numbers (one per request), got {got}")
        out = np.empty(len(raw))
        for i, v in enumerate(raw):
            f = finite(v)
            if f is None and not (v is None or isinstance(v, float)):
                raise self.fail(key, f"{key!r}[{i}] must be a number, got {v!r}"[:200])
            if f is not None and f < 0:
                raise self.fail(key, f"{key!r}[{i}] = {f} is negative")
            if f is not None and key in SECONDS_KEYS and f > MAX_SECONDS:
                raise self.fail(key, f"{key!r}[{i}] = {f:g} s is not a plausible request time (max {MAX_SECONDS:g} s)")
            out[i] = np.nan if f is None else f
        return out


def _request_count(d: _Doc) -> int | None:
    n = None
    for key in ARRAYS:
        raw = d.d.get(key)
        if raw is None:
            continue
        if not isinstance(raw, list):
            raise d.fail(key, f"{key!r} must be a list (one entry per request), got {type(raw).__name__}")
        if n is None:
            n = len(raw)
        elif len(raw) != n:
            raise d.fail(key, f"{key!r} has {len(raw)} entries but other per-request arrays have {n}")
    return n


def _itls(d: _Doc, n: int) -> list[np.ndarray] | None:
    raw = d.d.get("itls")
    if raw is None:
        return None
    out = []
    for i, row in enumerate(raw):
        if not isinstance(row, list):
            raise d.fail("itls", f"'itls'[{i}] must be a list of seconds, got {type(row).__name__}")
        vals = [finite(v) for v in row]
        if any(v is not None and v > MAX_SECONDS for v in vals):
            raise d.fail("itls", f"'itls'[{i}] holds a time over {MAX_SECONDS:g} s; not a plausible gap")
        if any(v is None or v < 0 for v in vals):
            raise d.fail("itls", f"'itls'[{i}] must hold non-negative numbers")
        out.append(np.asarray(vals, dtype=float))
    return out


ITL_SLACK = 16  # gaps beyond 2 × output tokens + this are no stream vLLM wrote (one gap per chunk, ≤ 1 per token)


def _check_possible(d: _Doc, ok: np.ndarray, ttft: np.ndarray | None, lat: np.ndarray | None,
                    outs: np.ndarray | None, itls: list[np.ndarray] | None) -> None:
    """Refuse what no measured request can be: a first token after the request ended, a successful request
    without a finite TTFT (``1e400``, ``Infinity``, ``NaN``), far more streamed gaps than output tokens."""
    for name, arr in (("ttfts", ttft), ("latencies" if "latencies" in d.d else "e2els", lat)):
        if arr is not None:
            bad = np.flatnonzero(ok & ~np.isfinite(arr))
            if bad.size:
                raise d.fail(name, f"{name!r}[{bad[0]}] is not a finite number on a successful request "
                                   "(expected seconds)")
    if ttft is not None and lat is not None:
        with np.errstate(invalid="ignore"):
            late = np.flatnonzero(ok & (ttft > lat * (1 + 1e-9) + 1e-9))
        if late.size:
            i = late[0]
            raise d.fail("ttfts", f"'ttfts'[{i}] = {ttft[i]:g} s is longer than the request's latency "
                                  f"{lat[i]:g} s; the first token cannot come after the request ended")
    if itls is not None and outs is not None:
        for i, (row, out, good) in enumerate(zip(itls, outs, ok, strict=False)):
            if good and np.isfinite(out) and len(row) > 2 * out + ITL_SLACK:
                raise d.fail("itls", f"'itls'[{i}] holds {len(row):,} gaps for {int(out):,} output tokens; "
                                     "expected at most one gap per token")


def _requests(d: _Doc, n: int) -> tuple[pl.DataFrame, np.ndarray | None]:
    ins = d.number_list("input_lens", n)
    outs = d.number_list("output_lens", n)
    ttft = d.number_list("ttfts", n)
    lat = d.number_list("latencies", n)
    if lat is None:
        lat = d.number_list("e2els", n)
    starts = d.number_list("start_times", n)
    itls = _itls(d, n)
    errors_raw = d.d.get("errors")
    errors: list[str | None] = [None] * n
    if errors_raw is not None:
        for i, e in enumerate(errors_raw):
            if e is not None and not isinstance(e, str):
                raise d.fail("errors", f"'errors'[{i}] must be text or null, got {type(e).__name__}")
            errors[i] = e.strip() if e and e.strip() else None
    if errors_raw is None and lat is not None:  # no errors array: vLLM leaves latency 0.0 on a failed request
        errors = [None if v > 0 else "failed (no latency recorded)" for v in np.nan_to_num(lat)]
    ok = np.array([e is None for e in errors])
    for name, arr in (("input_lens", ins), ("output_lens", outs)):
        if arr is not None and np.any(np.isfinite(arr) & (arr != np.round(arr))):
            raise d.fail(name, f"{name!r} must hold whole token counts")
    _check_possible(d, ok, ttft, lat, outs, itls)
    if lat is None and ttft is not None and itls is not None:  # legacy: e2e = TTFT + Σ ITL (same clock)
        lat = ttft + np.array([row.sum() for row in itls])
    ttft_ms = np.where(ok, ttft * 1e3, np.nan) if ttft is not None else np.full(n, np.nan)
    e2e_ms = np.where(ok, lat * 1e3, np.nan) if lat is not None else np.full(n, np.nan)
    out_f = outs if outs is not None else np.full(n, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(ok & (out_f > 1), (e2e_ms - ttft_ms) / (out_f - 1), np.nan)
    nan = np.full(n, np.nan)
    numeric = {"input_tokens": ins if ins is not None else nan, "output_tokens": out_f, "ttft_ms": ttft_ms,
               "tpot_ms": tpot, "e2e_ms": e2e_ms}
    if starts is not None and np.isfinite(starts).any():
        numeric["start_s"] = starts - np.nanmin(starts)
    frame = pl.DataFrame({"request_index": np.arange(n, dtype=np.int32), **numeric, "ok": ok, "error": errors},
                         strict=False).with_columns(pl.col(c).fill_nan(None) for c in numeric)
    kept = [row for row, good in zip(itls or [], ok, strict=False) if good]
    itl_ms = np.concatenate(kept) * 1e3 if kept else None  # no successful request: no gaps at all
    return frame, itl_ms


def _check_throughputs(d: _Doc) -> None:
    """vLLM divides by the run's duration, so these are always finite; NaN/inf means the file was edited
    or broken, and must not be silently recomputed from the arrays."""
    for key in FINITE_KEYS:
        raw = d.d.get(key)
        if isinstance(raw, float) and finite(raw) is None:
            raise d.fail(key, f"{key!r} = {raw!r}: expected a finite number (vLLM always writes one)")


def _headline(d: _Doc, empty: set[str]) -> dict[str, Any]:
    """The file's own figures. Latency statistics of exactly 0 ms are vLLM's value for an empty sample (it
    takes ``np.percentile([] or 0, q)``: every request failed, none produced > 1 token, no streamed gaps):
    not measurements, so they are left out (and named in ``empty``) rather than stored as 0 ms."""
    h: dict[str, Any] = {}
    for key, col in SCALARS.items():
        v = d.number(key, minimum=0)
        if v is None and key in ALIASES:
            v = d.number(ALIASES[key], minimum=0)
        if v == 0 and key in MEAN_LATENCIES:
            empty.add(MEAN_LATENCIES[key])
            continue
        if v is not None:
            h[col] = v
    for short, col in LATENCIES.items():
        for q in (50, 90, 99):
            v = d.number(f"p{q}_{short}_ms", minimum=0)
            if v is None and q == 50:
                v = d.number(f"median_{short}_ms", minimum=0)
            if v == 0:
                empty.add(short)
            elif v is not None:
                h[f"p{q}_{col}"] = v
    rate = d.number("spec_decode_acceptance_rate", minimum=0, maximum=100)
    if rate is not None:
        h["acceptance_rate"] = rate / 100.0  # vLLM saves a percent; the store keeps a fraction
    pos = d.d.get("spec_decode_per_position_acceptance_rates")
    if pos:
        vals = [finite(v) for v in pos] if isinstance(pos, list) else [None]
        if any(v is None or not 0 <= v <= 1 for v in vals):
            raise d.fail("spec_decode_per_position_acceptance_rates", "expected a list of fractions in [0, 1]")
        h["positions"] = vals
    return h


def _found_dims(d: _Doc, headline: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = {"model": d.d.get("model_id")}
    mc = d.d.get("max_concurrency")
    if mc is not None:
        if isinstance(mc, bool) or not isinstance(mc, int) or mc < 1:
            raise d.fail("max_concurrency", f"'max_concurrency' must be a positive whole number, got {mc!r}")
        found["concurrency"] = mc
    drafts, tokens = headline.get("drafts"), headline.get("draft_tokens")
    if drafts and tokens and float(tokens / drafts).is_integer():  # fixed-k methods draft k tokens per draft
        found["depth"] = int(tokens / drafts)
    elif headline.get("positions"):
        found["depth"] = len(headline["positions"])
    for key, dim in META_KEYS.items():
        if key in d.d and d.d[key] not in (None, ""):
            value = d.d[key]
            why = dims.problem(dim, value)  # the check --set applies: "99" is no more a depth here than there
            if why is not None:
                raise d.fail(key, f"metadata {key!r} = {labels.shown(str(value))}: {why}")
            found[dim] = int(str(value).strip()) if dim in dims.INT_KEYS else value
    return found


def _rate(raw: Any) -> float | str | None:
    """``request_rate`` as vLLM means it: a number, or "inf" (also when json.dump wrote a float inf as
    ``Infinity``, which strict JSON readers of our report would reject). Anything else is refused by
    :func:`_check_rate` first."""
    if isinstance(raw, str):
        return "inf" if raw.strip().lower() in ("inf", "infinity") else raw
    if isinstance(raw, bool) or not isinstance(raw, int | float):
        return None
    return "inf" if raw == float("inf") else finite(raw)


def _check_rate(d: _Doc) -> None:
    raw = d.d.get("request_rate")
    if raw is None:
        return
    rate = _rate(raw)
    if rate == "inf" or (isinstance(rate, float | int) and not isinstance(rate, bool) and rate > 0):
        return
    raise d.fail("request_rate", f"'request_rate' must be a positive number of requests/s or \"inf\", got "
                                 f"{labels.shown(str(raw))}")


def _failure(d: dict[str, Any], n: int | None) -> str:
    """'all N requests failed: <the first error's last line>' for a result with no successful request."""
    total = n if n else int((finite(d.get("failed")) or 0) + (finite(d.get("completed")) or 0))
    errors = d.get("errors") if isinstance(d.get("errors"), list) else []
    first = next((e for e in errors if isinstance(e, str) and e.strip()), "")
    last = first.strip().splitlines()[-1].strip()[:200] if first else ""
    return f"all {total} requests failed" + (f": {last}" if last else "")


def _foreign_shape(d: dict[str, Any]) -> str | None:
    """A clear refusal for results of other tools and modes that share vLLM's throughput keys."""
    if "output_throughput" not in d and ("input_sequence_throughput" in d or "total_input_sequences" in d):
        return ("a vllm bench serve result of a pooling (embedding/score) model: no output tokens, so nothing "
                "to compare for speculative decoding")
    if "mean_e2e_latency_ms" in d or "total_output_tokens_retokenized" in d:
        return ("SGLang bench_serving output (python -m sglang.bench_serving), not vllm bench serve; import it as "
                "--format sglang_serving (or let the format be detected)")
    return None


def read(path: Path, opts: ReadOptions) -> ParsedFile:
    file_hash, docs = json_docs(path, KEEP)
    if not docs:
        raise InputError(path, 0, "empty file")
    parsed = ParsedFile(path=path, format=FORMAT, file_hash=file_hash, run=import_run(path, FORMAT, file_hash))
    seen: dict[str, int] = {}
    shapes, gpus = set(), set()
    for doc in docs:
        d = _Doc(path, doc)
        if not isinstance(d.d, dict):
            raise InputError(path, doc.line,
                             f"expected a JSON object (a vllm bench serve result), got {type(d.d).__name__}")
        foreign = _foreign_shape(d.d)
        if foreign:
            raise InputError(path, doc.line, foreign)
        missing = [k for k in REQUIRED if k not in d.d]
        if missing:
            raise InputError(path, doc.line, f"not a vllm bench serve result: missing {', '.join(missing)}")
        duration = d.number("duration", minimum=0)
        if not duration:
            raise d.fail("duration", "'duration' must be a positive number of seconds")
        completed = d.number("completed", minimum=0)
        if completed is None or not float(completed).is_integer():
            raise d.fail("completed", "'completed' must be a whole number of requests")
        _check_throughputs(d)
        _check_rate(d)
        legacy = "request_goodput:" in d.d or "request_goodput" not in d.d
        shapes.add("legacy" if legacy else "current")
        empty: set[str] = set()
        headline = _headline(d, empty)
        n = _request_count(d)
        where = f"line {doc.line}" if len(docs) > 1 else ""
        if empty and completed:
            names = ", ".join(k.upper() for k in LATENCIES if k in empty)
            parsed.warnings.append(f"{where or 'file'}: {names} statistics are 0 ms, vLLM's value for an empty "
                                   "sample (e.g. no request longer than one token); not stored")
        if n:
            requests, itl_ms = _requests(d, n)
            if d.d.get("ttfts") is None:
                parsed.warnings.append(f"{where or 'file'}: only latencies per request (saved without "
                                       "--save-detailed): TTFT/TPOT/ITL figures as given, intervals from e2e only")
            n_ok = int(requests["ok"].sum())
            if n_ok != int(completed):
                parsed.warnings.append(f"{where or 'file'}: {n_ok} successful requests in the arrays but "
                                       f"'completed' = {int(completed)}")
        else:
            requests, itl_ms = pl.DataFrame(), None
            failed = d.number("failed", minimum=0) or 0
            headline.update(n_requests=int(completed + failed), n_failed=int(failed))
            parsed.warnings.append(f"{where or 'file'}: no per-request arrays (saved without --save-detailed): "
                                   "headline numbers stored as given, no confidence intervals")
        hints: dict[str, str] = {}
        if "concurrency" not in opts.overrides and d.d.get("max_concurrency", 0) is None:
            hints["concurrency"] = ("'max_concurrency' is null (no client-side limit; request_rate "
                                    f"{_rate(d.d.get('request_rate'))})")
        try:
            key, gpu_count = dims.resolve(_found_dims(d, headline), opts.overrides, parsed.warnings, where, hints)
        except dims.BadDimension as exc:
            raise d.fail("model_id" if exc.key == "model" else None, str(exc)) from None
        if gpu_count and headline.get("output_throughput") is not None:
            headline["output_throughput_per_gpu"] = headline["output_throughput"] / gpu_count
        status, error = "ok", None
        if not completed:  # vLLM still writes the file when every request failed ("All requests failed")
            status, error = "failed", _failure(d.d, n)
            parsed.warnings.append(f"{where or 'file'}: {error}; stored as a failed cell")
        if key.cell_id in seen:
            raise InputError(path, doc.line, f"same cell as the result on line {seen[key.cell_id]} "
                             f"({key.method}:{key.depth}, concurrency {key.concurrency}); tell them apart "
                             "with --metadata when benchmarking or import them separately")
        seen[key.cell_id] = doc.line
        gpus.add(key.gpu)
        parsed.cells.append(ParsedCell(key=key, requests=requests, window_s=duration, gpu_count=gpu_count,
                                       itl_ms=itl_ms, headline=headline, status=status, error=error))
        goodput = d.d.get("request_goodput", d.d.get("request_goodput:"))
        parsed.summary.setdefault("results", []).append({
            "line": doc.line, "cell_id": key.cell_id, "method": key.method, "depth": key.depth,
            "concurrency": key.concurrency, "requests": n or 0, "request_goodput": finite(goodput),
            "request_rate": _rate(d.d.get("request_rate")), "date": d.d.get("date"), "status": status,
        })
    parsed.summary["shape"] = "+".join(sorted(shapes))
    first = docs[0].value
    notes = (f"vllm bench serve ({parsed.summary['shape']} shape) date={first.get('date')} "
             f"backend={first.get('backend')} model_id={first.get('model_id')} results={len(docs)}")
    parsed.run.notes, parsed.run.gpu_count = notes, parsed.cells[0].gpu_count
    parsed.run.gpu_model = next(iter(gpus)) if len(gpus) == 1 else ""
    return parsed
