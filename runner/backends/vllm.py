"""The real-vLLM backend (``--backend vllm``): one server per server config, its cells measured in turn.

Per server config: launch through the launch template (the matrix's ``run.launch``, else
``$SPECTUNE_VLLM_LAUNCH``, else ``vllm serve {model} --host 127.0.0.1 --port {port} {args}``; a ROCm
container command works the same way) with ``--speculative-config`` exactly as vLLM parses it, wait for
``/health`` (``run.startup_timeout_s``), warm up, then measure each cell (runner.vllm.cell). Or attach to
a running ``--endpoint`` (one server config only: the runner cannot change a server it did not start).

Faults never stop the run: a failed start fails the config's cells with the reason; a server that dies
or stops answering is restarted once for the remaining cells; the process group is always stopped
(``finally``) and a pidfile lets the next ``--resume`` reap a server whose runner was SIGKILLed.
Server logs: ``<runs dir>/<run id>/<server config>.log``. The runner never imports vLLM.
"""

from __future__ import annotations

import asyncio
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import httpx

from ingest.errors import UsageError
from ingest.records import CellKey
from runner import hostfacts
from runner.backends.base import CellOutcome, HostFacts, Sink
from runner.matrix import DEFAULT_LAUNCH, Matrix, ServerConfig
from runner.vllm import pidfile
from runner.vllm.cell import Target, auth_headers, measure_cell
from runner.vllm.client import run_load
from runner.vllm.server import ServerStartError, VllmServer, log_tail
from runner.workloads import WorkloadRequests, load_workload

if TYPE_CHECKING:
    from runner.execute import Progress

LAUNCH_ENV = "SPECTUNE_VLLM_LAUNCH"
MAX_RESTARTS = 1  # per server config: one flaky crash is survivable, a crash loop is not
WARMUP_MAX_TOKENS = 32


def slug(text: str) -> str:
    """A file-name-safe form of a label or run id (never a path: no separators, no dots at the start)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_") or "x"


def launch_template(matrix: Matrix) -> str:
    if matrix.launch != DEFAULT_LAUNCH:
        return matrix.launch
    return os.environ.get(LAUNCH_ENV) or DEFAULT_LAUNCH


class VllmBackend:
    kind = "vllm"
    long_running = True  # cells take minutes: execute opens the store per landed cell

    def __init__(self, endpoint: str | None = None) -> None:
        self.endpoint = endpoint.rstrip("/") if endpoint else None
        self.run_dir: Path | None = None
        self.progress: Progress | None = None
        self.requests: dict[str, WorkloadRequests] = {}
        self.reaped: list[int] = []

    # ---- run setup ----------------------------------------------------------------------------------

    def prepare(self, matrix: Matrix, run_id: str, runs_dir: Path, progress: Progress | None = None) -> None:
        """Run folder, reaping servers a killed runner left, and every workload read (bad file → exit 2)."""
        if self.endpoint and len(matrix.server_configs()) > 1:
            raise UsageError(f"--endpoint attaches to one running server, but the matrix has "
                             f"{len(matrix.server_configs())} server configs")
        self.run_dir = Path(runs_dir) / slug(run_id)
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.reaped = pidfile.reap(self.run_dir)
        self.progress = progress
        n = max(matrix.requests_per_cell, matrix.adaptive.max_requests if matrix.adaptive else 0)
        self.requests = {wl.name: load_workload(wl, n, matrix.path.parent) for wl in matrix.workloads}

    def host_facts(self, matrix: Matrix) -> HostFacts:
        gpus = hostfacts.detect_gpus()
        if self.endpoint:
            version = hostfacts.vllm_version_from_endpoint(self.endpoint)
        else:
            version = hostfacts.vllm_version_from_launch(launch_template(matrix), matrix.env)
        notes = [gpus.notes()]
        if self.endpoint:
            notes.append(f"attached to {self.endpoint}")
        if set(matrix.gpus) != {gpus.model}:
            notes.append(f"matrix gpus {','.join(matrix.gpus)} but this host has {gpus.model}")
        if self.reaped:
            notes.append(f"reaped {len(self.reaped)} server(s) left by a killed runner")
        notes += [f"workload {w.name}: {w.source}" for w in self.requests.values()]
        return HostFacts(host=hostfacts.hostname(), gpu_model=gpus.model, gpu_count=gpus.count,
                         engine_version=f"vllm {version}" if version else "vllm (version unknown)",
                         notes="; ".join(n for n in notes if n))

    def _note(self, text: str) -> None:
        if self.progress:
            self.progress(text, None, None)

    # ---- one server config --------------------------------------------------------------------------

    def run_server_config(self, matrix: Matrix, config: ServerConfig, cells: list[CellKey], sink: Sink) -> None:
        if self.run_dir is None:
            raise RuntimeError("VllmBackend.prepare() must run before run_server_config()")
        if self.endpoint:
            self._run_attached(matrix, config, cells, sink)
            return
        label = config.label()
        log = self.run_dir / f"{slug(label)}.log"
        pid_path = log.with_suffix(".pid")
        server: VllmServer | None = None
        restarts = -1
        try:
            for i, key in enumerate(cells):
                if server is None or not server.running or not server.health(timeout_s=5.0):
                    if server is not None:
                        server.stop()
                        pidfile.remove(pid_path)
                    restarts += 1
                    if restarts > MAX_RESTARTS:
                        self._fail(cells[i:], sink, f"server died again after {MAX_RESTARTS} restart(s); "
                                                     f"log: {log_tail(log)}")
                        return
                    self._note(f"{label}: starting server" + (" (restart)" if restarts else ""))
                    try:
                        server = self._start(matrix, config, log, pid_path, key)
                    except ServerStartError as exc:
                        server = None
                        self._fail(cells[i:], sink, f"server start failed: {exc}")
                        return
                self._note(f"{label}: {key.workload} @ concurrency {key.concurrency}")
                srv = server
                target = Target(srv.base_url, config.model, died=lambda srv=srv: _died(srv))
                sink(measure_cell(matrix, key, target, self.requests[key.workload],
                                  config.family_spec.tensor_parallel_size))
        finally:
            if server is not None:
                server.stop()
            pidfile.remove(pid_path)

    def _start(self, matrix: Matrix, config: ServerConfig, log: Path, pid_path: Path, first: CellKey) -> VllmServer:
        fam, meth = config.family_spec, config.method_spec
        server = VllmServer(
            config.model, log_path=log, port=matrix.port, method=config.method,
            num_speculative_tokens=config.depth, speculative_extra=meth.extra,
            draft_model=fam.draft_models.get(config.method) or meth.draft_model,
            tensor_parallel_size=fam.tensor_parallel_size, extra_flags=fam.vllm_args,
            command_template=launch_template(matrix), env=matrix.env, cwd=self.run_dir,
        )
        try:
            server.start()
            if server.pgid is not None:
                pidfile.write(pid_path, server.pgid, server.port, config.label())
            server.wait_healthy(matrix.startup_timeout_s)
            self._warm_up(matrix, server.base_url, config.model, first)
        except BaseException:
            server.stop()
            pidfile.remove(pid_path)
            raise
        if (why := _died(server)) is not None:
            server.stop()
            pidfile.remove(pid_path)
            raise ServerStartError(f"server died during warm-up: {why}")
        return server

    def _warm_up(self, matrix: Matrix, base_url: str, model: str, first: CellKey) -> None:
        """A few requests before any measured window: the first requests after a start are slow."""
        if matrix.warmup_requests <= 0:
            return
        wl = matrix.workload(first.workload)
        prompts = self.requests[first.workload].prompts[: matrix.warmup_requests]
        asyncio.run(run_load(base_url, model, prompts, min(2, len(prompts)), endpoint=matrix.endpoint,  # type: ignore[arg-type]
                             max_tokens=min(wl.max_tokens, WARMUP_MAX_TOKENS), temperature=wl.temperature,
                             timeout_s=matrix.request_timeout_s, stall_timeout_s=matrix.stall_timeout_s,
                             headers=auth_headers()))

    @staticmethod
    def _fail(cells: list[CellKey], sink: Sink, reason: str) -> None:
        for key in cells:
            sink(CellOutcome(key, status="failed", error=reason))

    # ---- attach mode --------------------------------------------------------------------------------

    def _run_attached(self, matrix: Matrix, config: ServerConfig, cells: list[CellKey], sink: Sink) -> None:
        assert self.endpoint is not None
        server = VllmServer.attach(self.endpoint)
        try:
            server.wait_healthy(matrix.startup_timeout_s)
        except ServerStartError as exc:
            self._fail(cells, sink, f"endpoint not healthy: {exc}")
            return
        model = served_model(self.endpoint, config.model)
        self._warm_up(matrix, self.endpoint, model, cells[0])

        def died() -> str | None:
            return None if server.health(timeout_s=5.0) else f"endpoint {self.endpoint} stopped answering /health"

        for key in cells:
            self._note(f"{config.label()}: {key.workload} @ concurrency {key.concurrency}")
            sink(measure_cell(matrix, key, Target(self.endpoint, model, died), self.requests[key.workload],
                              config.family_spec.tensor_parallel_size))


def _died(server: VllmServer) -> str | None:
    proc = server.proc
    if proc is None:
        return "server was stopped"
    rc = proc.poll()
    return None if rc is None else f"exit code {rc}: {log_tail(server.log_path)}"


def served_model(base_url: str, wanted: str) -> str:
    """The model name to send: the matrix's if the server serves it, else the server's only model."""
    try:
        resp = httpx.get(f"{base_url}/v1/models", timeout=10.0, trust_env=False, headers=auth_headers())
        ids = [m.get("id") for m in resp.json().get("data", [])] if resp.status_code == 200 else []
    except (httpx.HTTPError, ValueError, AttributeError):
        ids = []
    if wanted in ids or len(ids) != 1:
        return wanted
    return str(ids[0])
