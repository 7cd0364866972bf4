"""Reader for SGLang ``scripts/playground/bench_speculative.py`` output (JSONL, one config per line).

Each line: ``batch_size, steps, topk, num_draft_tokens, acc_length, step_time`` (s, the 20th-percentile
decode step time the server recorded), ``speed`` (= acc_length / step_time: tokens/s of one sequence) and
``completion_tokens`` (mean output tokens). ``steps = 0`` is the no-speculation baseline.

Mapping: method ``none`` when steps = 0, else ``--set method=`` (SGLang's EAGLE algorithm serves EAGLE,
EAGLE-3 and MTP/NextN heads alike, so the file cannot say which) or ``unknown``; depth = steps;
concurrency = batch_size. acceptance_length = acc_length; acceptance_rate = (acc_length − 1) / draft tokens
verified per step: ``steps`` for a chain (topk = 1: the server forces num_draft_tokens = steps + 1, so a
sweep's num_draft_tokens 2 or 4 at steps 5 runs as 6), else num_draft_tokens − 1; output_throughput = speed ×
batch_size (every sequence of the batch decodes at ``speed``); mean TPOT = 1000 / speed. No
per-request samples, so no confidence intervals. Several (topk, num_draft_tokens) at the same
(batch_size, steps) are one cell: the chain (topk = 1, vLLM's meaning of depth) is kept, else the
fastest tree; the others are listed in the report.
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

FORMAT = "sglang_spec"
INTS = ("batch_size", "steps", "topk", "num_draft_tokens")
FLOATS = ("acc_length", "step_time", "speed")
KEYS = (*INTS, *FLOATS)


def looks_like(doc: Any) -> bool:
    return isinstance(doc, dict) and {"batch_size", "steps", "acc_length", "step_time"} <= set(doc)


def _record(path: Path, line: int, rec: Any) -> dict[str, Any]:
    if not isinstance(rec, dict):
        raise InputError(path, line, f"expected a JSON object per line, got {type(rec).__name__}")
    missing = [k for k in KEYS if k not in rec]
    if missing:
        raise InputError(path, line, f"missing {', '.join(missing)}; expected a bench_speculative.py record "
                         f"({', '.join(KEYS)})")
    out: dict[str, Any] = {"line": line}
    for k in INTS:
        f = finite(rec[k])
        if f is None or f < 0 or not f.is_integer():
            raise InputError(path, line, f"{k!r} must be a whole non-negative number, got {rec[k]!r}"[:200])
        out[k] = int(f)
    if out["batch_size"] < 1:
        raise InputError(path, line, "'batch_size' must be at least 1")
    for k in FLOATS:
        f = finite(rec[k])
        if f is None or f <= 0:
            raise InputError(path, line, f"{k!r} must be a positive number, got {rec[k]!r}"[:200])
        out[k] = f
    if out["acc_length"] < 1:
        raise InputError(path, line, f"'acc_length' = {out['acc_length']} is below 1 (tokens per verify step)")
    ct = rec.get("completion_tokens")
    out["completion_tokens"] = finite(ct) if ct is not None else None
    return out


def _drafted_per_step(r: dict[str, Any]) -> int:
    """Draft tokens one verify step checks: ``steps`` for a chain — SGLang's server sets
    ``speculative_num_draft_tokens = speculative_num_steps + 1`` whenever ``topk == 1``, whatever the sweep
    passed (the record keeps the value passed) — else the tree's ``num_draft_tokens − 1`` (root excluded)."""
    if r["topk"] <= 1:
        return r["steps"]
    return max(r["num_draft_tokens"] - 1, 0)


def _preferred(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Of two configs at the same (batch_size, steps): the chain, else the faster."""
    if (a["topk"] <= 1) != (b["topk"] <= 1):
        return a if a["topk"] <= 1 else b
    return a if a["speed"] >= b["speed"] else b


def read(path: Path, opts: ReadOptions) -> ParsedFile:
    file_hash, docs = json_docs(path, keep_none)  # every field read is a scalar
    records = [_record(path, doc.line, doc.value) for doc in docs]
    if not records:
        raise InputError(path, 0, "no records")
    chosen: dict[tuple[int, int], dict[str, Any]] = {}
    for r in records:
        k = (r["batch_size"], r["steps"])
        chosen[k] = _preferred(chosen[k], r) if k in chosen else r
    parsed = ParsedFile(path=path, format=FORMAT, file_hash=file_hash, run=import_run(path, FORMAT, file_hash))
    kept = {id(r) for r in chosen.values()}
    for r in chosen.values():
        spec = r["steps"] > 0
        found = {"method": None if spec else "none", "depth": r["steps"], "concurrency": r["batch_size"]}
        overrides = dict(opts.overrides) if spec else {k: v for k, v in opts.overrides.items()
                                                        if k not in ("method", "depth")}
        key, gpu_count = dims.resolve(found, overrides, parsed.warnings)
        headline: dict[str, Any] = {
            "output_throughput": r["speed"] * r["batch_size"], "mean_tpot_ms": 1000.0 / r["speed"],
        }
        if spec:
            headline["acceptance_length"] = r["acc_length"]
            drafted = _drafted_per_step(r)
            if drafted:
                headline["acceptance_rate"] = (r["acc_length"] - 1.0) / drafted
        if gpu_count:
            headline["output_throughput_per_gpu"] = headline["output_throughput"] / gpu_count
        parsed.cells.append(ParsedCell(key=key, requests=pl.DataFrame(), window_s=None, gpu_count=gpu_count,
                                       headline=headline))
    parsed.warnings[:] = list(dict.fromkeys(parsed.warnings))
    parsed.summary = {
        "records": len(records),
        "configs": [{k: r[k] for k in ("line", *KEYS)} | {"cell": id(r) in kept} for r in records],
    }
    if len(kept) < len(records):
        parsed.warnings.append(f"{len(records) - len(kept)} (topk, num_draft_tokens) variants share a cell with "
                               "another config at the same (batch_size, steps); kept the chain or the fastest")
    parsed.run.notes = f"SGLang bench_speculative.py records={len(records)}"
    parsed.run.gpu_model, parsed.run.gpu_count = parsed.cells[0].key.gpu, parsed.cells[0].gpu_count
    return parsed
