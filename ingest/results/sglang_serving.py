"""Reader for SGLang ``python -m sglang.bench_serving`` results (python/sglang/bench_serving.py), JSONL.

bench_serving appends one JSON object per benchmark to its ``--output-file``: the arguments (``backend``,
``dataset_name``, ``request_rate``, ``max_concurrency``, ``random_input_len`` …), the results (``duration``
in s, ``completed``, token totals, ``request_throughput``, ``output_throughput`` in tok/s, and
``mean/median/std/p99_{e2e_latency,ttft,tpot}_ms``, ``mean/median/std/p95/p99_itl_ms``; medians are stored as
p50) and ``accept_length``: the server's ``avg_spec_accept_length`` (``/get_server_info``
internal_states), i.e. tokens emitted per verify step including the bonus token — spectune's
acceptance_length; null when the server does not speculate (or is not SGLang). With ``--output-details`` the
object also carries per-request ``ttfts``/``itls`` (s) and ``output_lens``; they are not read (headline numbers
only, so no confidence intervals).

Dimensions: concurrency = ``max_concurrency`` (null: no client-side limit → ``--set concurrency=``); the file
names neither model, method, depth nor GPU → ``--set``. acceptance_rate = (accept_length − 1) / depth when the
depth is known (a chain of ``depth`` draft tokens per step). ``accept_length`` null → no acceptance stored,
and with no ``--set method`` the cell is ``none``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from ingest.errors import InputError
from ingest.results import dims
from ingest.results.jsonstream import keep_none
from ingest.results.model import ParsedCell, ParsedFile, ReadOptions, import_run
from ingest.results.source import finite, json_docs

FORMAT = "sglang_serving"
REQUIRED = ("duration", "completed", "output_throughput", "mean_e2e_latency_ms")
LATENCIES = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2e_latency": "e2e_ms"}


def looks_like(doc: Any) -> bool:
    return isinstance(doc, dict) and {"duration", "completed", "mean_e2e_latency_ms"} <= set(doc)


def _number(path: Path, line: int, d: dict[str, Any], key: str, *, required: bool = False) -> float | None:
    if key not in d or d[key] is None:
        if required:
            raise InputError(path, line, f"missing {key!r}")
        return None
    v = finite(d[key])
    if v is None or v < 0:
        raise InputError(path, line, f"{key!r} must be a non-negative number, got {d[key]!r}"[:200])
    return v


def _cell(path: Path, line: int, d: dict[str, Any], opts: ReadOptions, warnings: list[str]) -> ParsedCell:
    missing = [k for k in REQUIRED if k not in d]
    if missing:
        raise InputError(path, line, f"not a sglang.bench_serving result: missing {', '.join(missing)}")
    duration = _number(path, line, d, "duration", required=True)
    completed = _number(path, line, d, "completed", required=True)
    if not duration:
        raise InputError(path, line, "'duration' must be a positive number of seconds")
    if completed is None or not completed.is_integer():
        raise InputError(path, line, "'completed' must be a whole number of requests")
    accept = _number(path, line, d, "accept_length")
    if accept is not None and accept < 1:
        raise InputError(path, line, f"'accept_length' = {accept} is below 1 (tokens per verify step)")
    headline: dict[str, Any] = {"n_requests": int(completed), "n_failed": 0}
    for src, dst in (("output_throughput", "output_throughput"), ("request_throughput", "request_throughput"),
                     ("total_output_tokens", "output_tokens")):
        v = _number(path, line, d, src)
        if v is not None:
            headline[dst] = v
    for short, col in LATENCIES.items():
        for stat, out in (("mean", "mean"), ("median", "p50"), ("p99", "p99")):
            v = _number(path, line, d, f"{stat}_{short}_ms")
            if v is not None and not (out == "mean" and col == "itl_ms"):
                headline[f"{out}_{col}"] = v
    found: dict[str, Any] = {"method": None if accept is not None else "none"}
    mc = d.get("max_concurrency")
    if mc is not None:
        if isinstance(mc, bool) or not isinstance(mc, int) or mc < 1:
            raise InputError(path, line, f"'max_concurrency' must be a positive whole number, got {mc!r}")
        found["concurrency"] = mc
    hints = {} if mc is not None else {"concurrency": "'max_concurrency' is null (no client-side limit; "
                                                      f"request_rate {str(d.get('request_rate'))[:20]!r})"}
    overrides = dict(opts.overrides) if accept is not None else {
        k: v for k, v in opts.overrides.items() if k not in ("method", "depth")}
    where = f"line {line}"
    key, gpu_count = dims.resolve(found, overrides, warnings, where, hints)
    if accept is not None:
        headline["acceptance_length"] = accept
        if key.depth:
            headline["acceptance_rate"] = min(max((accept - 1.0) / key.depth, 0.0), 1.0)
    if gpu_count and "output_throughput" in headline:
        headline["output_throughput_per_gpu"] = headline["output_throughput"] / gpu_count
    status, error = ("ok", None) if completed else ("failed", "no request completed")
    return ParsedCell(key=key, requests=pl.DataFrame(), window_s=duration, gpu_count=gpu_count, headline=headline,
                      status=status, error=error)


def read(path: Path, opts: ReadOptions) -> ParsedFile:
    file_hash, docs = json_docs(path, keep_none)  # headline scalars only: per-request arrays are streamed past
    if not docs:
        raise InputError(path, 0, "empty file")
    parsed = ParsedFile(path=path, format=FORMAT, file_hash=file_hash, run=import_run(path, FORMAT, file_hash))
    seen: dict[str, int] = {}
    for doc in docs:
        if not isinstance(doc.value, dict):
            raise InputError(path, doc.line, f"expected a JSON object per line, got {type(doc.value).__name__}")
        cell = _cell(path, doc.line, doc.value, opts, parsed.warnings)
        if cell.key.cell_id in seen:
            raise InputError(path, doc.line, f"same cell as the result on line {seen[cell.key.cell_id]} "
                             f"({cell.key.method}:{cell.key.depth}, concurrency {cell.key.concurrency}); import "
                             "them separately with --set")
        seen[cell.key.cell_id] = doc.line
        parsed.cells.append(cell)
    parsed.warnings.append("headline numbers only (bench_serving keeps no per-request latencies): no confidence "
                           "intervals")
    parsed.warnings[:] = list(dict.fromkeys(parsed.warnings))
    first = docs[0].value
    parsed.run.notes = (f"sglang.bench_serving backend={first.get('backend')} dataset={first.get('dataset_name')} "
                        f"results={len(docs)}")
    parsed.run.gpu_model, parsed.run.gpu_count = parsed.cells[0].key.gpu, parsed.cells[0].gpu_count
    parsed.summary = {"results": [{"line": d.line, "accept_length": d.value.get("accept_length"),
                                   "max_concurrency": d.value.get("max_concurrency")} for d in docs]}
    return parsed
