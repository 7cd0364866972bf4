"""Reader for GuideLLM benchmark reports (``guidellm benchmark … --output-path benchmarks.json`` or ``.yaml``).

The report (guidellm/benchmark/schemas: ``GenerativeBenchmarksReport``) is ``{"benchmarks": [...]}``, one
entry per strategy the run executed (a sweep: synchronous, throughput, then constant rates; or one per
``--rate`` of a concurrent profile). Each benchmark's ``metrics`` hold ``StatusDistributionSummary`` objects —
``{"successful": {mean, median, percentiles: {p50, p90, p99 …}, count …}, "errored": …, "incomplete": …,
"total": …}`` — of which the successful requests' are read:

* ``output_tokens_per_second`` mean → output_throughput (tok/s over the measured window);
  ``requests_per_second`` mean → request_throughput;
* ``time_to_first_token_ms``, ``time_per_output_token_ms``, ``inter_token_latency_ms`` (ms) and
  ``request_latency`` (s, stored as e2e ms) → mean / p50 / p90 / p99 (older reports lack ``p50``: the median);
* ``request_totals`` (in ``metrics``, or at the benchmark level in older reports) → requests and failures.

Concurrency is the strategy's: ``concurrent`` → its ``streams``; ``synchronous`` → 1; a rate or throughput
strategy has no fixed concurrency, so the measured mean ``request_concurrency`` is used (rounded, with a
warning) unless ``--set concurrency=``. The model comes from the benchmark's backend/worker description when
present. **GuideLLM measures from the client only: a report carries no speculative-decoding acceptance**, so
acceptance columns stay empty (stated as a warning), and method/depth/GPU/workload come from ``--set``.
Headline numbers only (the report's per-request samples are not read): no confidence intervals.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from ingest.errors import InputError
from ingest.results import dims
from ingest.results.model import ParsedCell, ParsedFile, ReadOptions, import_run
from ingest.results.source import finite, json_docs, scan_text

FORMAT = "guidellm"
YAML_SUFFIXES = (".yaml", ".yml")
LATENCIES = {"time_to_first_token_ms": ("ttft_ms", 1.0), "time_per_output_token_ms": ("tpot_ms", 1.0),
             "inter_token_latency_ms": ("itl_ms", 1.0), "request_latency": ("e2e_ms", 1000.0)}
MODEL_KEYS = ("backend_model", "model")


def looks_like(doc: Any) -> bool:
    if not isinstance(doc, dict) or not isinstance(doc.get("benchmarks"), list) or not doc["benchmarks"]:
        return False
    first = doc["benchmarks"][0]
    return isinstance(first, dict) and isinstance(first.get("metrics"), dict) and \
        any(k in first["metrics"] for k in ("output_tokens_per_second", "time_to_first_token_ms"))


def keep(path: tuple[str | int, ...], is_array: bool) -> bool:
    """Objects are built (metrics, strategies, config); of arrays only the ``benchmarks`` list: per-request
    samples (``requests``), distributions' CDFs and the like are streamed past unbuilt."""
    return not is_array or path == ("benchmarks",)


def load(path: Path) -> tuple[str, Any]:
    """(sha256, the report as Python objects: JSON, or YAML for .yaml/.yml)."""
    if path.suffix.lower() in YAML_SUFFIXES:
        import yaml

        digest = scan_text(path)
        try:
            with open(path, encoding="utf-8-sig") as fh:  # PyYAML builds the whole report (see reliability.md)
                return digest, yaml.safe_load(fh)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise InputError(path, (mark.line + 1) if mark else 0, f"invalid YAML: {getattr(exc, 'problem', exc)}"
                             ) from None
        except RecursionError:
            raise InputError(path, 0, "invalid YAML: nesting too deep") from None
        except (ValueError, OverflowError) as exc:  # a value YAML's constructors refuse (e.g. 2026-02-30)
            raise InputError(path, 0, f"invalid YAML value: {' '.join(str(exc).split())[:120]}") from None
    digest, docs = json_docs(path, keep)
    if len(docs) != 1:
        raise InputError(path, docs[1].line if len(docs) > 1 else 0, "expected one JSON document (a GuideLLM report)")
    return digest, docs[0].value


def _successful(path: Path, where: str, metrics: dict[str, Any], name: str) -> dict[str, Any] | None:
    summary = metrics.get(name)
    if summary is None:
        return None
    ok = summary.get("successful") if isinstance(summary, dict) else None
    if not isinstance(ok, dict):
        raise InputError(path, 0, f"{where}: metrics.{name} is not a status distribution summary "
                         "(expected an object with 'successful')")
    return ok


def _stat(path: Path, where: str, dist: dict[str, Any], name: str, key: str) -> float | None:
    raw = dist.get(key)
    if key in ("p50", "p90", "p99"):
        pct = dist.get("percentiles") if isinstance(dist.get("percentiles"), dict) else {}
        raw = pct.get(key, dist.get("median") if key == "p50" else None)
    if raw is None:
        return None
    v = finite(raw)
    if v is None or v < 0:
        raise InputError(path, 0, f"{where}: metrics.{name}.successful.{key} must be a non-negative number, "
                         f"got {raw!r}"[:200])
    return v


def _find(obj: Any, keys: tuple[str, ...], depth: int = 0) -> str | None:
    """The first string value under one of ``keys`` in nested config objects (model names live there)."""
    if depth > 4 or not isinstance(obj, dict):
        return None
    for k in keys:
        if isinstance(obj.get(k), str) and obj[k].strip():
            return obj[k].strip()
    for v in obj.values():
        found = _find(v, keys, depth + 1)
        if found:
            return found
    return None


def _strategy(b: dict[str, Any]) -> dict[str, Any]:
    for holder in (b.get("config"), b.get("args"), b.get("scheduler"), b):
        if isinstance(holder, dict) and isinstance(holder.get("strategy"), dict):
            return holder["strategy"]
    return {}


def _window(b: dict[str, Any]) -> float | None:
    for holder in (b.get("scheduler_metrics"), b.get("run_stats"), b):
        if not isinstance(holder, dict):
            continue
        for start, end in (("measure_start_time", "measure_end_time"), ("start_time", "end_time")):
            s, e = finite(holder.get(start)), finite(holder.get(end))
            if s is not None and e is not None and e > s:
                return e - s
    return finite(b.get("duration"))


def _totals(b: dict[str, Any], metrics: dict[str, Any]) -> tuple[int | None, int]:
    t = metrics.get("request_totals") or b.get("request_totals")
    if not isinstance(t, dict):
        return None, 0
    ok = finite(t.get("successful"))
    bad = (finite(t.get("errored")) or 0) + (finite(t.get("incomplete")) or 0)
    return (int(ok) if ok is not None else None), int(bad)


def _cell(path: Path, i: int, b: Any, opts: ReadOptions, warnings: list[str]) -> ParsedCell:
    where = f"benchmarks[{i}]"
    if not isinstance(b, dict) or not isinstance(b.get("metrics"), dict):
        raise InputError(path, 0, f"{where}: expected a benchmark object with 'metrics'")
    metrics = b["metrics"]
    headline: dict[str, Any] = {}
    for name, col in (("output_tokens_per_second", "output_throughput"), ("requests_per_second",
                                                                            "request_throughput")):
        dist = _successful(path, where, metrics, name)
        v = _stat(path, where, dist, name, "mean") if dist else None
        if v is not None:
            headline[col] = v
    if "output_throughput" not in headline:
        raise InputError(path, 0, f"{where}: no metrics.output_tokens_per_second.successful.mean (output "
                         "throughput); not a generative GuideLLM benchmark")
    for name, (col, scale) in LATENCIES.items():
        dist = _successful(path, where, metrics, name)
        if not dist:
            continue
        for stat, out in (("mean", "mean"), ("p50", "p50"), ("p90", "p90"), ("p99", "p99")):
            v = _stat(path, where, dist, name, stat)
            if v is not None and not (out == "mean" and col == "itl_ms"):
                headline[f"{out}_{col}"] = v * scale
    ok, bad = _totals(b, metrics)
    if ok is not None:
        headline.update(n_requests=ok + bad, n_failed=bad)
    found: dict[str, Any] = {"model": _find(b, MODEL_KEYS)}
    strategy = _strategy(b)
    kind = str(strategy.get("type_") or strategy.get("type") or "")[:40]
    kind = kind if kind.isprintable() else repr(kind)
    if kind == "concurrent" and isinstance(strategy.get("streams"), int) and strategy["streams"] > 0:
        found["concurrency"] = strategy["streams"]
    elif kind == "synchronous":
        found["concurrency"] = 1
    elif "concurrency" not in opts.overrides:
        dist = _successful(path, where, metrics, "request_concurrency")
        mean = _stat(path, where, dist, "request_concurrency", "mean") if dist else None
        if mean:
            found["concurrency"] = max(1, round(mean))
            warnings.append(f"{where}: {kind or 'unknown'} strategy has no fixed concurrency; stored at the measured "
                            f"mean request concurrency {mean:.1f} → {found['concurrency']}")
    key, gpu_count = dims.resolve(found, opts.overrides, warnings, where)
    if gpu_count:
        headline["output_throughput_per_gpu"] = headline["output_throughput"] / gpu_count
    status, error = ("ok", None) if ok is None or ok > 0 else ("failed", "no successful request")
    return ParsedCell(key=key, requests=pl.DataFrame(), window_s=_window(b), gpu_count=gpu_count,
                      headline=headline, status=status, error=error)


def read(path: Path, opts: ReadOptions) -> ParsedFile:
    file_hash, report = load(path)
    if not looks_like(report):
        shown = ", ".join(repr(k) for k in list(report)[:8]) if isinstance(report, dict) else type(report).__name__
        raise InputError(path, 1, f"not a GuideLLM benchmarks report (expected 'benchmarks' with 'metrics'); "
                         f"found {shown}")
    parsed = ParsedFile(path=path, format=FORMAT, file_hash=file_hash, run=import_run(path, FORMAT, file_hash))
    seen: dict[str, int] = {}
    for i, b in enumerate(report["benchmarks"]):
        cell = _cell(path, i, b, opts, parsed.warnings)
        if cell.key.cell_id in seen:
            raise InputError(path, 0, f"benchmarks[{i}] maps to the same cell as benchmarks[{seen[cell.key.cell_id]}] "
                             f"(concurrency {cell.key.concurrency}); import them separately with --set")
        seen[cell.key.cell_id] = i
        parsed.cells.append(cell)
    parsed.warnings.append("GuideLLM measures from the client: no speculative-decoding acceptance in the report "
                           "(acceptance not stored); headline numbers only, no confidence intervals")
    parsed.warnings[:] = list(dict.fromkeys(parsed.warnings))
    parsed.run.notes = f"GuideLLM report benchmarks={len(report['benchmarks'])}"
    parsed.run.gpu_model, parsed.run.gpu_count = parsed.cells[0].key.gpu, parsed.cells[0].gpu_count
    parsed.summary = {"benchmarks": len(report["benchmarks"]),
                      "strategies": [str(_strategy(b).get("type_", "")) for b in report["benchmarks"]]}
    return parsed

