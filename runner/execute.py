"""Executing a matrix: plan → skip what the store already has → run each server config once → land cells.

The store is written one cell at a time (each cell atomic); slow backends open a connection only to land
each cell, so several runner processes (and the dashboard) can share a store file; a killed run resumes
with no duplicates. ``--resume`` continues the newest run of the same matrix and backend.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from ingest import open_store, sql, store
from ingest.records import CellKey, RunInfo
from runner.backends import get_backend
from runner.backends.base import Backend, CellOutcome, Progress
from runner.matrix import Matrix, ServerConfig, server_method_label
from runner.vllm.server import speculative_config


@dataclass(slots=True)
class RunOptions:
    backend: str = "sim"
    db: Path | None = None
    resume: bool = False
    retry_failed: bool = False
    run_id: str | None = None
    runs_dir: Path | None = None  # server logs + pidfiles: <runs_dir>/<run_id>/ (default: <db folder>/runs)
    only: frozenset[str] | None = None  # run just these cell ids of the matrix (a factorized plan's phases)
    origin: str = "measured"  # cells.origin of what lands (confirmed: a factorized plan's check of a prediction)
    world: int | None = None  # sim: measure world N (one fixed draw of the model's parameters; docs/tune.md)


def runs_dir_for(opts: RunOptions) -> Path:
    if opts.runs_dir is not None:
        return Path(opts.runs_dir)
    return (Path(opts.db) if opts.db else store.default_db_path()).resolve().parent / "runs"


@dataclass(slots=True)
class RunSummary:
    run_id: str
    cells_ok: int = 0
    cells_failed: int = 0
    cells_skipped: int = 0
    failures: list[dict[str, str]] = field(default_factory=list)
    skipped_failed: int = 0  # of cells_skipped, those that had failed earlier (--retry-failed reruns them)

    def as_dict(self) -> dict[str, object]:
        return {"run_id": self.run_id, "cells_ok": self.cells_ok, "cells_failed": self.cells_failed,
                "cells_skipped": self.cells_skipped, "failures": self.failures}


Notify = Callable[[str], None]  # a message the user must see (stderr), e.g. "--resume found nothing"


def run_matrix_hash(matrix: Matrix, opts: RunOptions) -> str:
    """What a run records as its matrix (and ``--resume`` looks up): the matrix file's hash, and the world a
    simulated run measured, so a run of world 1 never resumes into world 2 or the plain simulator."""
    return matrix.digest if opts.world is None else f"{matrix.digest}:world{opts.world}"


def resolve_run_id(matrix: Matrix, opts: RunOptions, notify: Notify | None = None) -> tuple[str, bool]:
    """(run id, resuming?) — the newest run of this matrix+backend when resuming, else a new id.

    ``--resume`` that finds no run of this exact matrix file (its content hash) starts a new run and says
    so through ``notify``, naming an earlier run of the same file when the file was edited since.
    """
    if opts.run_id:
        return opts.run_id, opts.resume
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    kind = opts.backend if opts.world is None else f"{opts.backend}-w{opts.world}"
    new_id = f"{matrix.name}-{kind}-{stamp}-{secrets.token_hex(3)}"
    if opts.resume:
        with open_store.session(opts.db) as con:
            row = sql.one(con,
                "SELECT run_id FROM runs WHERE matrix_hash = ? AND backend = ? ORDER BY started_at DESC LIMIT 1",
                [run_matrix_hash(matrix, opts), opts.backend],
            )
            edited = None if row else sql.one(con,
                "SELECT run_id FROM runs WHERE backend = ? AND (source = ? OR starts_with(run_id, ?)) "
                "ORDER BY started_at DESC LIMIT 1",
                [opts.backend, str(matrix.path), f"{matrix.name}-{opts.backend}-"],
            )
        if row:
            return row[0], True
        if notify is not None:
            db = Path(opts.db) if opts.db else store.default_db_path()
            if edited:
                notify(f"note: --resume: {matrix.path} changed since run {edited[0]} (runs resume only an identical "
                       f"matrix file), so this is a new run {new_id}; to add to {edited[0]} anyway, pass "
                       f"--run-id {edited[0]} --resume")
            else:
                notify(f"note: --resume: no earlier {opts.backend} run of {matrix.path} in {db}; "
                       f"starting a new run {new_id}")
    return new_id, False


def pending_cells(matrix: Matrix, run_id: str, opts: RunOptions) -> tuple[list[CellKey], int]:
    todo, skipped, _ = pending_cells_detail(matrix, run_id, opts)
    return todo, skipped


def pending_cells_detail(matrix: Matrix, run_id: str, opts: RunOptions) -> tuple[list[CellKey], int, int]:
    """(cells to run, cells skipped, of those skipped the ones that failed before)."""
    with open_store.session(opts.db) as con:
        done = store.cell_status(con, run_id)
    todo, skipped, skipped_failed = [], 0, 0
    for key in matrix.cells():
        if opts.only is not None and key.cell_id not in opts.only:
            continue
        status = done.get(key.cell_id)
        if status == "ok" or (status == "failed" and not opts.retry_failed):
            skipped += 1
            skipped_failed += status == "failed"
        else:
            todo.append(key)
    return todo, skipped, skipped_failed


def cell_label(key: CellKey) -> str:
    """A cell as a person reads it: server config, workload and load."""
    m = server_method_label(key.method, key.depth, key.schedule, key.adaptive)
    if key.synthetic_rates:
        m += "~synthetic(" + ",".join(f"{r:g}" for r in key.synthetic_rates) + ")"
    return f"{key.family}/{m}@{key.gpu} {key.workload} c={key.concurrency}"


def group_by_config(matrix: Matrix, cells: list[CellKey]) -> list[tuple[ServerConfig, list[CellKey]]]:
    wanted: dict[tuple, list[CellKey]] = {}
    for key in cells:
        wanted.setdefault(key.server_config, []).append(key)
    return [(cfg, wanted[cfg.key]) for cfg in matrix.server_configs() if cfg.key in wanted]


def drafter(cfg: ServerConfig) -> str | None:
    """The drafter checkpoint a server config runs with (the family's per-method one, else the method's)."""
    return cfg.family_spec.draft_models.get(cfg.method) or cfg.method_spec.draft_model or None


# --speculative-config keys a cell states in its own columns (method, depth, draft_model, schedule, synthetic rates)
_STATED_KEYS = frozenset({"method", "num_speculative_tokens", "model", "num_speculative_tokens_per_batch_size",
                          "enable_adaptive_verification",
                          "rejection_sample_method", "synthetic_acceptance_rates"})


def speculative_extra(cfg: ServerConfig) -> str | None:
    """The other keys of the ``--speculative-config`` this server config runs with (n-gram's lookup window as
    launched, the matrix's ``methods.X.extra``) as JSON, stored with its cells so the deploy command recommends
    what was measured; None for the baseline or when there are none."""
    if cfg.method == "none" or cfg.depth < 1:
        return None
    config = speculative_config(cfg.method, cfg.depth, cfg.method_spec.extra)
    extra = {k: v for k, v in (config or {}).items() if k not in _STATED_KEYS}
    return json.dumps(extra, sort_keys=True, separators=(",", ":")) if extra else None


def land(con, run_id: str, outcome: CellOutcome, summary: RunSummary, replace: bool,
         labels: dict[str, str | None] | None = None) -> None:
    if outcome.status == "ok":
        store.write_cell(con, run_id, outcome.key, outcome.requests, window_s=outcome.window_s,
                         gpu_count=outcome.gpu_count, counters=outcome.counters, itl_ms=outcome.itl_ms,
                         replace=replace, labels=labels,
                         model_factors=outcome.model_factors)
        summary.cells_ok += 1
    else:
        store.write_failed_cell(con, run_id, outcome.key, outcome.error or "failed", replace=replace)
        summary.cells_failed += 1
        summary.failures.append({"cell_id": outcome.key.cell_id, "cell": cell_label(outcome.key),
                                 "error": outcome.error or "failed"})


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C (or SIGTERM/SIGHUP, see ``python -m runner``) during a run, after every server was stopped;
    carries what the user needs to continue."""

    def __init__(self, run_id: str, cells_done: int, signum: int | None = None) -> None:
        super().__init__(run_id)
        self.run_id = run_id
        self.cells_done = cells_done
        self.signum = signum


def run_matrix(matrix: Matrix, opts: RunOptions, progress: Progress | None = None,
               backend: Backend | None = None, notify: Notify | None = None) -> RunSummary:
    backend = backend or get_backend(opts.backend, world=opts.world)
    run_id, _resuming = resolve_run_id(matrix, opts, notify)
    summary = RunSummary(run_id=run_id)
    try:
        return _run(matrix, opts, backend, run_id, summary, progress)
    except KeyboardInterrupt as exc:  # the backends' finally blocks have stopped their servers by now
        raise RunInterrupted(run_id, summary.cells_ok + summary.cells_failed,
                             getattr(exc, "signum", None)) from None


def _run(matrix: Matrix, opts: RunOptions, backend: Backend, run_id: str, summary: RunSummary,
         progress: Progress | None) -> RunSummary:
    prepare = getattr(backend, "prepare", None)
    if prepare is not None:  # e.g. vllm: run folder, orphan servers of a killed run, workload files
        prepare(matrix, run_id, runs_dir_for(opts), progress)
    facts = backend.host_facts(matrix)
    with open_store.session(opts.db) as con:
        store.write_run(con, RunInfo(
            run_id=run_id, backend=backend.kind, source=str(matrix.path), host=facts.host,
            gpu_model=facts.gpu_model, gpu_count=facts.gpu_count, engine_version=facts.engine_version,
            matrix_hash=run_matrix_hash(matrix, opts), notes=facts.notes,
        ))
    todo, skipped, skipped_failed = pending_cells_detail(matrix, run_id, opts)
    summary.cells_skipped, summary.skipped_failed = skipped, skipped_failed
    total = len(todo)
    done = 0
    # A slow backend (a real server config can run for an hour) lands each cell through its own short
    # connection so other processes — a second runner, the dashboard — can take the store in between; the
    # simulator produces cells in milliseconds and keeps one connection per server config.
    per_cell = not getattr(backend, "fast_cells", False)
    for cfg, cells in group_by_config(matrix, todo):
        if progress:
            progress(cfg.label(), done, total)
        with contextlib.ExitStack() as stack:
            shared = None if per_cell else stack.enter_context(open_store.session(opts.db))

            labels = {"draft_model": drafter(cfg), "origin": opts.origin, "speculative_extra": speculative_extra(cfg)}

            def sink(outcome: CellOutcome, label: str = cfg.label(), shared=shared, labels=labels) -> None:
                nonlocal done
                if shared is not None:
                    land(shared, run_id, outcome, summary, replace=opts.retry_failed, labels=labels)
                else:
                    with open_store.session(opts.db) as con:
                        land(con, run_id, outcome, summary, replace=opts.retry_failed, labels=labels)
                done += 1
                if progress:
                    progress(label, done, total)

            backend.run_server_config(matrix, cfg, cells, sink)
    with open_store.session(opts.db) as con:
        store.finish_run(con, run_id)
    return summary
