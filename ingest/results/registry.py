"""The result-format registry (selected by ``kind``) and :func:`read_files`, which parses a whole invocation.

``FORMATS`` (an :class:`ingest.formats.FormatRegistry`, the mechanism the trace registry shares) maps a
kind (what ``--format`` takes) to its reader; ``auto`` detects it
(:mod:`ingest.results.detect`). :func:`read_files` parses every file first — plus the Spec-Bench
``--baseline`` file, imported as the ``none`` method — and raises on the first bad one, so nothing is
written unless all of them are good.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ingest.errors import InputError, UsageError
from ingest.formats import FormatRegistry
from ingest.results import (
    guidellm,
    published,
    published_cells,
    sglang_serving,
    sglang_spec,
    specbench,
    spectune_parquet,
    vllm_bench,
    vllm_sweep,
)
from ingest.results.detect import detect
from ingest.results.model import ParsedFile, ReadOptions

Reader = Callable[[Path, ReadOptions], ParsedFile]


@dataclass(frozen=True, slots=True)
class ResultFormat:
    name: str
    reader: Reader
    description: str


FORMATS: FormatRegistry[ResultFormat] = FormatRegistry("result", (
    ResultFormat(vllm_bench.FORMAT, vllm_bench.read, "vllm bench serve --save-result JSON (current and legacy)"),
    ResultFormat(vllm_sweep.FORMAT, vllm_sweep.read, "vllm bench sweep serve output folder (one cell per combination)"),
    ResultFormat(guidellm.FORMAT, guidellm.read, "GuideLLM benchmarks report (.json/.yaml; no acceptance)"),
    ResultFormat(sglang_serving.FORMAT, sglang_serving.read, "SGLang bench_serving JSONL (with accept_length)"),
    ResultFormat(specbench.FORMAT, specbench.read, "Spec-Bench output JSONL (evaluation/inference_*.py)"),
    ResultFormat(sglang_spec.FORMAT, sglang_spec.read, "SGLang scripts/playground/bench_speculative.py JSONL"),
    ResultFormat(spectune_parquet.FORMAT, spectune_parquet.read, "spectune export folder / host shard (Parquet)"),
    ResultFormat(published.FORMAT, published.read, "published-results CSV (data/published_results.csv shape)"),
    ResultFormat(published_cells.FORMAT, published_cells.read,
                 "published cells table, one row per cell (data/published/vllm-amd-2026-08/cells.csv shape)"),
    ResultFormat(published_cells.POSITIONS_FORMAT, published_cells.read_positions,
                 "published per-position acceptance, imported with its cells table (…/positions.csv shape)"),
))
FORMAT_CHOICES: tuple[str, ...] = FORMATS.choices


def read_file(path: Path, kind: str = "auto", opts: ReadOptions | None = None) -> ParsedFile:
    return read_path(path, kind, opts)[0]


def read_path(path: Path, kind: str = "auto", opts: ReadOptions | None = None) -> list[ParsedFile]:
    """What one path holds: one ParsedFile, or one per run of a ``vllm bench sweep`` folder."""
    opts = opts or ReadOptions()
    if kind not in FORMAT_CHOICES:
        raise UsageError(f"unknown format {kind!r} (expected one of {FORMATS.expected()})")
    name = detect(path) if kind == "auto" else kind
    if path.is_dir() and name in (published_cells.FORMAT, published_cells.POSITIONS_FORMAT):
        files = published_cells.folder_files(path)  # the folder's cells table(s), then its per-position table(s)
        if not files:
            raise InputError(path, 0, "a folder without a published cells table (CSV with source_url, model, method, "
                             "depth, output_tok_s)")
        return [_checked(FORMATS[detect(p)].reader(p, opts)) for p in files]
    if name == vllm_sweep.FORMAT:
        return [_checked(p) for p in vllm_sweep.read_runs(path, opts)]
    return [_checked(FORMATS[name].reader(path, opts))]


def _checked(parsed: ParsedFile) -> ParsedFile:
    path = parsed.path
    seen: dict[str, str] = {}
    for cell in parsed.cells:
        k = cell.key
        if k.cell_id in seen:
            load = "load not stated" if k.concurrency is None else f"c={k.concurrency}"
            raise InputError(path, 0, f"two results map to the same cell ({k.method}:{k.depth} {k.model} "
                             f"{k.workload}{' ' + k.dataset if k.dataset else ''} {k.gpu} {load}); check --set")
        seen[k.cell_id] = k.method
    return parsed


def read_files(paths: list[Path], kind: str = "auto", opts: ReadOptions | None = None) -> list[ParsedFile]:
    """Parse every file (and the baseline); the first bad one raises and nothing has been written."""
    opts = opts or ReadOptions()
    out = [parsed for p in paths for parsed in read_path(p, kind, opts)]
    published_cells.attach(out)  # per-position rows find their cells among this invocation's cells tables
    if opts.baseline is not None:
        if not any(p.format == specbench.FORMAT for p in out):
            raise UsageError("--baseline applies to Spec-Bench output files only")
        if detect(opts.baseline) != specbench.FORMAT:
            raise InputError(opts.baseline, 0, "the baseline must be a Spec-Bench output JSONL (a vanilla run)")
        # the vanilla run serves the same target: it takes the speculative file's model (Spec-Bench's model_id is
        # a run label, e.g. qwen3-8b-vanilla-…), so its `none` cells share that model's winner groups
        spec = next(p for p in out if p.format == specbench.FORMAT and p.cells)
        model = opts.overrides.get("model") or spec.cells[0].key.model
        base_opts = replace(opts, baseline=None,
                            overrides={**opts.overrides, "method": "none", "depth": "0", "model": model})
        out.append(read_file(opts.baseline, specbench.FORMAT, base_opts))
    return out
