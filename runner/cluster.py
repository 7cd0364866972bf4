"""Fan a matrix out over a Ray cluster: one task per server config, placed by GPU custom resources.

Hosts join with ``ray start --address=HEAD:6379 --resources='{"MI355X": 8}'``; a server config asks
for ``{"<its GPU>": tensor_parallel_size}``, so it runs only on a host with that many of that GPU free
(and several configs share a host when it has room). The task runs the config on the chosen backend
there (server logs stay on that host, under its runs dir) and returns the cells' outcomes; the driver
is the single writer to the store and lands each cell as its task returns. A task lost with its node is
retried once elsewhere (``max_retries=1``); after that, or on any other task error, its cells are
``failed`` with the reason and the run goes on. A config no node can ever host fails at once.

``<runs dir>/<run id>/placement.jsonl`` (on the driver) says which node and resources ran each config.
Workers import spectune from the ``ray_pythonpath`` setting (default: this checkout's path); a local cluster has the
``ray_resources`` setting's custom resources — see docs/cluster.md and docs/settings.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest import open_store, store
from ingest.errors import InputError, UsageError
from ingest.records import CellKey, RunInfo
from ingest.settings import Settings
from ingest.settings import load as load_settings
from runner.backends import get_backend
from runner.backends.base import Backend, CellOutcome
from runner.backends.vllm import slug
from runner.execute import (
    Progress,
    RunOptions,
    RunSummary,
    drafter,
    group_by_config,
    land,
    pending_cells,
    resolve_run_id,
    run_matrix_hash,
    runs_dir_for,
)
from runner.matrix import Matrix, ServerConfig

REPO_ROOT = Path(__file__).resolve().parent.parent
TASK_RETRIES = 1


@dataclass(slots=True)
class TaskResult:
    """What one server-config task sends back: its cells' outcomes and where it ran."""

    outcomes: list[CellOutcome]
    node_id: str = ""
    node_ip: str = ""
    hostname: str = ""
    resources: dict[str, float] = field(default_factory=dict)
    pid: int = 0


def run_config(matrix: Matrix, config: ServerConfig, cells: list[CellKey], backend_kind: str, run_id: str,
               runs_dir: str, factory: Callable[[], Backend] | None = None) -> TaskResult:
    """The body of a Ray task (also callable directly): run one server config, collect its outcomes."""
    import ray

    backend = factory() if factory is not None else get_backend(backend_kind)
    prepare = getattr(backend, "prepare", None)
    outcomes: list[CellOutcome] = []
    try:
        if prepare is not None:
            prepare(matrix, run_id, Path(runs_dir), None)
    except (InputError, UsageError) as exc:  # this node lacks what the config needs (a model path, vllm)
        outcomes = _failed(cells, f"on {socket.gethostname()}: {exc.one_line().removeprefix('error: ')}")
    else:
        backend.run_server_config(matrix, config, cells, outcomes.append)
    ctx = ray.get_runtime_context()
    return TaskResult(outcomes, node_id=ctx.get_node_id() or "", node_ip=ray.util.get_node_ip_address(),
                      hostname=socket.gethostname(), resources=dict(ctx.get_assigned_resources()), pid=os.getpid())


def _init(address: str, resources: dict[str, float]) -> tuple[bool, str | None]:
    """Connect (or start a local cluster for ``local``, with custom ``resources``): (started here?, temp dir to
    remove afterwards)."""
    import ray

    if ray.is_initialized():
        return False, None
    os.environ.setdefault("RAY_AUTH_MODE", "disabled")
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if address == "local":
        # Under $TMPDIR with a short name: Ray's unix socket paths must stay under 108 bytes.
        temp_dir = tempfile.mkdtemp(prefix="st-ray-")
        ray.init(resources=resources, _temp_dir=temp_dir, **kwargs)
        return True, temp_dir
    ray.init(address=address, **kwargs)
    return True, None


def _failed(cells: list[CellKey], reason: str) -> list[CellOutcome]:
    return [CellOutcome(key, status="failed", error=reason) for key in cells]


def _reason(exc: BaseException) -> str:
    import ray.exceptions as rx

    lost = (rx.NodeDiedError, rx.WorkerCrashedError, rx.ObjectLostError, rx.OwnerDiedError, rx.LocalRayletDiedError)
    kind = "ray task lost with its node/worker (retried once)" if isinstance(exc, lost) else "ray task failed"
    text = " ".join(str(exc).split())
    return f"{kind}: {type(exc).__name__}: {text[:300]}"


@contextlib.contextmanager
def session(address: str, settings: Settings | None = None) -> Iterator[None]:
    """A Ray connection (or a throwaway local cluster for ``local``) held across several runs — ``spectune tune``'s
    rounds — and closed at the end; a no-op when Ray is already initialised."""
    import ray

    settings = settings if settings is not None else load_settings()
    started, temp_dir = _init(address, settings.ray_resources)
    try:
        yield
    finally:
        if started:
            ray.shutdown()
        if temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)


def run_matrix_ray(matrix: Matrix, opts: RunOptions, address: str = "auto", progress: Progress | None = None,
                   factory: Callable[[], Backend] | None = None, settings: Settings | None = None) -> RunSummary:
    """Run ``matrix`` with one Ray task per pending server config; land results on the driver. ``settings``
    (default: this process's) give a local cluster's resources and the workers' PYTHONPATH."""
    import ray

    settings = settings if settings is not None else load_settings()
    runs_dir = runs_dir_for(opts)
    started, temp_dir = _init(address, settings.ray_resources)
    try:
        return _drive(matrix, opts, runs_dir, address, progress, factory,
                      settings.ray_pythonpath or str(REPO_ROOT))
    finally:
        if started:
            ray.shutdown()
        if temp_dir:
            shutil.rmtree(temp_dir, ignore_errors=True)


def _drive(matrix: Matrix, opts: RunOptions, runs_dir: Path, address: str, progress: Progress | None,
           factory: Callable[[], Backend] | None, pythonpath: str) -> RunSummary:
    import ray

    local = factory() if factory is not None else get_backend(opts.backend)
    run_id, _ = resolve_run_id(matrix, opts)
    if hasattr(local, "host_checks"):  # vLLM and the models live on the GPU nodes, not necessarily here
        local.host_checks = False
    prepare = getattr(local, "prepare", None)
    if prepare is not None:  # validates workload files etc. on the driver before anything is written
        prepare(matrix, run_id, runs_dir, None)
    facts = local.host_facts(matrix)
    cluster = ray.cluster_resources()
    with open_store.session(opts.db) as con:
        store.write_run(con, RunInfo(
            run_id=run_id, backend=local.kind, source=str(matrix.path), host=f"ray:{address}",
            gpu_model=",".join(matrix.gpus), gpu_count=int(sum(cluster.get(g, 0) for g in matrix.gpus)),
            engine_version=facts.engine_version, matrix_hash=run_matrix_hash(matrix, opts),
            notes="; ".join(x for x in (facts.notes, f"ray nodes: {len(ray.nodes())}") if x),
        ))
    todo, skipped = pending_cells(matrix, run_id, opts)
    summary = RunSummary(run_id=run_id, cells_skipped=skipped)
    total, done = len(todo), 0
    run_dir = runs_dir / slug(run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    task = ray.remote(max_retries=TASK_RETRIES, retry_exceptions=False, num_cpus=0)(run_config)
    env = {"env_vars": {"PYTHONPATH": pythonpath}}

    def finish(config: ServerConfig, outcomes: list[CellOutcome]) -> None:
        nonlocal done
        with open_store.session(opts.db) as con:
            for outcome in outcomes:
                land(con, run_id, outcome, summary, replace=opts.retry_failed,
                     labels={"draft_model": drafter(config), "origin": opts.origin})
        done += len(outcomes)
        if progress:
            progress(config.label(), done, total)

    pending: dict[Any, tuple[ServerConfig, list[CellKey]]] = {}
    for config, cells in group_by_config(matrix, todo):
        tp = float(config.family_spec.tensor_parallel_size)
        if cluster.get(config.gpu, 0.0) < tp:
            finish(config, _failed(cells, f"no Ray node offers {tp:g} x {config.gpu} (custom resource "
                                          f"{config.gpu!r}; start hosts with --resources)"))
            continue
        ref = task.options(resources={config.gpu: tp}, runtime_env=env, name=config.label()).remote(
            matrix, config, cells, opts.backend, run_id, str(runs_dir), factory)
        pending[ref] = (config, cells)
    if progress and pending:
        progress(f"{len(pending)} server configs on the cluster", done, total)
    with (run_dir / "placement.jsonl").open("a") as placement:
        while pending:
            ready, _ = ray.wait(list(pending), num_returns=1)
            config, cells = pending.pop(ready[0])
            try:
                result: TaskResult = ray.get(ready[0])
                outcomes = result.outcomes
                placement.write(json.dumps({"label": config.label(), "gpu": config.gpu, "node_id": result.node_id,
                                            "node_ip": result.node_ip, "hostname": result.hostname,
                                            "resources": result.resources, "pid": result.pid}) + "\n")
                placement.flush()
            except ray.exceptions.RayError as exc:
                outcomes = _failed(cells, _reason(exc))
            finish(config, outcomes)
    with open_store.session(opts.db) as con:
        store.finish_run(con, run_id)
    return summary

