"""Reader for ``vllm bench sweep serve`` output folders (vllm/benchmarks/sweep/serve.py).

The sweep runs ``vllm bench serve`` once per (serve-params × bench-params) combination and run number, and
writes ``EXPERIMENT_DIR/SERVE-<serve name>-BENCH-<bench name>/run=<N>.json`` (N = 0 … num_runs − 1): each a
``vllm bench serve --save-result`` result (``--percentile-metrics ttft,tpot,itl,e2el``) with the combination's
serve and bench overrides and ``run_number`` merged in at the top level. ``summary.json`` in the same folder is
the list of those runs, ``summary.csv`` in the experiment folder all of them (both derived: not read),
``warmup.json`` a warm-up (run_number −1) and ``*.failure.json`` a failed run (both skipped, with a warning).

Each run file is read by :mod:`ingest.results.vllm_bench`; the combination's parameters give the dimensions
the result itself lacks: ``speculative_config`` (a dict, or its JSON text, as the sweep passes it to
``vllm serve --speculative-config``) → method and depth (``num_speculative_tokens``); no ``speculative_config``
→ method ``none``; ``tensor_parallel_size`` → GPU count; ``max_concurrency`` → concurrency (vllm_bench). The
user's ``--set`` wins over both. One cell per combination; each run number is one spectune run (``run=0`` of
every combination together, then ``run=1`` …), so repeated runs are kept side by side rather than merged.
Pass the experiment folder (or an output folder holding exactly one experiment).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from ingest.errors import InputError
from ingest.results import vllm_bench
from ingest.results.jsonstream import keep_top
from ingest.results.model import ParsedFile, ReadOptions, import_run
from ingest.results.source import json_docs

FORMAT = "vllm_sweep"
RUN_FILE = re.compile(r"^run=(\d+)\.json$")
SPEC_KEYS = ("speculative_config", "speculative-config")


def _comb_dirs(folder: Path) -> list[Path]:
    return sorted(d for d in folder.iterdir() if d.is_dir() and any(RUN_FILE.match(f.name) for f in d.iterdir()))


def experiment_dir(path: Path) -> Path | None:
    """The experiment folder ``path`` is, or holds as its only experiment; None when it is neither."""
    if not path.is_dir():
        return None
    if _comb_dirs(path):
        return path
    subs = [d for d in path.iterdir() if d.is_dir() and _comb_dirs(d)]
    return subs[0] if len(subs) == 1 else None


def _spec_dims(path: Path, doc: dict[str, Any]) -> dict[str, str]:
    """method/depth from the combination's ``speculative_config`` (``none`` when the server had none)."""
    raw = next((doc[k] for k in SPEC_KEYS if k in doc), None)
    if raw is None:
        return {"method": "none", "depth": "0"}
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except json.JSONDecodeError:
            raise InputError(path, 0, "'speculative_config' is neither an object nor JSON text") from None
    if not isinstance(raw, dict):
        raise InputError(path, 0, f"'speculative_config' must be an object, got {type(raw).__name__}")
    out: dict[str, str] = {}
    if isinstance(raw.get("method"), str) and raw["method"].strip():
        out["method"] = raw["method"].strip().lower()
    k = raw.get("num_speculative_tokens")
    if k is not None:
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= 64:
            raise InputError(path, 0, f"speculative_config.num_speculative_tokens must be 0-64, got {k!r}")
        out["depth"] = str(k)
    return out


def read_runs(path: Path, opts: ReadOptions) -> list[ParsedFile]:
    """One ParsedFile per run number, each with one cell per combination."""
    exp = experiment_dir(path)
    if exp is None:
        raise InputError(path, 0, "not a vllm bench sweep folder: no SERVE-…/BENCH-… folder with run=N.json files")
    by_run: dict[int, list[tuple[Path, ParsedFile]]] = {}
    skipped: list[str] = []
    for comb in _comb_dirs(exp):
        for f in sorted(comb.iterdir()):
            m = RUN_FILE.match(f.name)
            if not m:
                if f.name == "warmup.json" or f.name.endswith(".failure.json"):
                    skipped.append(f"{comb.name}/{f.name}")
                continue
            _, docs = json_docs(f, keep_top(set(SPEC_KEYS)))  # the combination's parameters; the rest below
            if len(docs) != 1 or not isinstance(docs[0].value, dict):
                raise InputError(f, 1, "expected one JSON object (a vllm bench serve result with the sweep's "
                                 "parameters)")
            overrides = {**_spec_dims(f, docs[0].value), **opts.overrides}
            parsed = vllm_bench.read(f, ReadOptions(overrides=overrides, baseline=None))
            by_run.setdefault(int(m.group(1)), []).append((comb, parsed))
    out = []
    for run_number, items in sorted(by_run.items()):
        h = hashlib.sha256()
        for comb, p in items:
            h.update(f"{comb.name}\0{p.file_hash}\0".encode())
        file_hash = h.hexdigest()
        parsed = ParsedFile(path=exp, format=FORMAT, file_hash=file_hash, run=import_run(exp, FORMAT, file_hash))
        seen: dict[str, str] = {}
        for comb, p in items:
            for cell in p.cells:
                if cell.key.cell_id in seen:
                    raise InputError(exp / comb.name, 0, f"same cell as {seen[cell.key.cell_id]} (method "
                                     f"{cell.key.method}:{cell.key.depth}, concurrency {cell.key.concurrency}): "
                                     "the combinations differ only in parameters that are not spectune dimensions; "
                                     "import them separately with --set")
                seen[cell.key.cell_id] = comb.name
                parsed.cells.append(cell)
            parsed.warnings += [f"{comb.name}/run={run_number}: {w}" for w in p.warnings]
        if skipped and run_number == min(by_run):
            parsed.warnings.append(f"skipped {len(skipped)} warm-up/failure file(s): {', '.join(skipped[:5])}")
        parsed.summary = {"experiment": exp.name, "run_number": run_number, "combinations": [c.name for c, _ in items]}
        parsed.run.notes = (f"vllm bench sweep serve experiment={exp.name} run_number={run_number} "
                            f"combinations={len(items)}")
        gpus = {c.key.gpu for c in parsed.cells}
        parsed.run.gpu_model = next(iter(gpus)) if len(gpus) == 1 else ""
        parsed.run.gpu_count = parsed.cells[0].gpu_count if parsed.cells else 0
        out.append(parsed)
    return out


def read(path: Path, opts: ReadOptions) -> ParsedFile:
    """The first run (``run=0``) alone; :func:`read_runs` gives every run (what ``ingest results`` imports)."""
    return read_runs(path, opts)[0]
