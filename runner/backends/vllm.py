"""The real-vLLM backend (``--backend vllm``): one server per server config, its cells measured in turn.

Per server config: launch through the launch template (the matrix's ``run.launch``, else the ``vllm_launch``
setting (docs/settings.md), else ``vllm serve {model} --host 127.0.0.1 --port {port} {args}``; a ROCm
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
import shlex
import shutil
from pathlib import Path

import httpx

from ingest import settings as settings_mod
from ingest.errors import InputError, UsageError
from ingest.records import CellKey
from ingest.settings import Settings
from runner import hostfacts
from runner.backends.base import CellOutcome, HostFacts, Progress, Sink
from runner.matrix import DEFAULT_LAUNCH, Matrix, ServerConfig, key_line
from runner.vllm import pidfile
from runner.vllm.cell import Target, auth_headers, measure_cell
from runner.vllm.client import run_load
from runner.vllm.server import (
    PER_REQUEST_FLAG,
    ServerStartError,
    VllmServer,
    failure_detail,
    port_in_use,
    speculative_config,
    uses_synthetic,
)
from runner.workloads import WorkloadRequests, filler_words, load_workload, synth_prompt

LAUNCH_ENV = settings_mod.VLLM_LAUNCH.env
MAX_RESTARTS = 1  # per server config: one flaky crash is survivable, a crash loop is not
WARMUP_MAX_TOKENS = 32


def slug(text: str) -> str:
    """A file-name-safe form of a label or run id (never a path: no separators, no dots at the start)."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text).strip("_") or "x"


def launch_template(matrix: Matrix, settings: Settings | None = None) -> str:
    """The matrix's run.launch, else the ``vllm_launch`` setting (default: this process's settings), else
    :data:`DEFAULT_LAUNCH`."""
    if matrix.launch != DEFAULT_LAUNCH:
        return matrix.launch
    return (settings if settings is not None else settings_mod.load()).vllm_launch or DEFAULT_LAUNCH


class VllmBackend:
    kind = "vllm"

    def __init__(self, endpoint: str | None = None, host_checks: bool = True,
                 settings: Settings | None = None) -> None:
        self.endpoint = normalize_endpoint(endpoint) if endpoint else None
        self.settings = settings if settings is not None else settings_mod.load()
        # Launch command, model paths and run.port are checked on the host that launches: not on a Ray
        # driver, whose GPU nodes hold vLLM and the models (each node's task checks its own).
        self.host_checks = host_checks
        self.run_dir: Path | None = None
        self.progress: Progress | None = None
        self.requests: dict[str, WorkloadRequests] = {}
        self.reaped: list[int] = []
        self.tokens_per_estimate: dict[str, float | None] = {}  # model -> its tokenizer vs the estimate
        # Set when a server refused --per-request-spec-decode-metrics (an older vLLM): later starts leave it out
        # and their cells fall back to the /metrics counters (cells.acceptance_source = counters).
        self.per_request_refused = False

    # ---- run setup ----------------------------------------------------------------------------------

    def prepare(self, matrix: Matrix, run_id: str, runs_dir: Path, progress: Progress | None = None) -> None:
        """Checks that would otherwise fail every cell (exit 2 instead), the run folder, reaping servers a
        killed runner left, and every workload read (bad file → exit 2)."""
        if self.endpoint:
            if len(matrix.server_configs()) > 1:
                raise UsageError(f"--endpoint attaches to one running server, but the matrix has "
                                 f"{len(matrix.server_configs())} server configs")
            check_endpoint(self.endpoint, matrix.server_configs()[0])
        elif self.host_checks:
            check_synthetic(matrix, settings=self.settings)
            check_launch(matrix, self.settings)
        self.run_dir = Path(runs_dir) / slug(run_id)
        self.reaped = pidfile.reap(self.run_dir) if self.run_dir.is_dir() else []
        if self.host_checks and not self.endpoint and matrix.port is not None and port_in_use(matrix.port):
            raise InputError(matrix.path, key_line_of(matrix, ["run", "port"]),
                             f"run.port: port {matrix.port} is already in use on this host (another server? stop "
                             f"it, or leave run.port out and the runner picks a free port per server start)")
        self.run_dir.mkdir(parents=True, exist_ok=True)
        self.progress = progress
        n = max(*(matrix.requests_for(c) for c in matrix.concurrency),
                matrix.adaptive.max_requests if matrix.adaptive else 0)
        self.requests = {wl.name: load_workload(wl, n, matrix.path.parent) for wl in matrix.workloads}

    def host_facts(self, matrix: Matrix) -> HostFacts:
        gpus = hostfacts.detect_gpus()
        if self.endpoint:
            version = hostfacts.vllm_version_from_endpoint(self.endpoint)
        else:
            version = hostfacts.vllm_version_from_launch(launch_template(matrix, self.settings), matrix.env)
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
                                                     f"{failure_detail(log)}")
                        return
                    self._note(f"{label}: starting server" + (" (restart)" if restarts else ""))
                    try:
                        server = self._start(matrix, config, log, pid_path, key)
                    except ServerStartError as exc:
                        server = None
                        self._fail(cells[i:], sink, f"server start failed: {exc}")
                        return
                srv = server
                reqs = self._requests_for(srv.base_url, config.model, key.workload)
                self._note(f"{label}: {key.workload} @ concurrency {key.concurrency}")
                target = Target(srv.base_url, config.model, died=lambda srv=srv: _died(srv))
                sink(measure_cell(matrix, key, target, reqs, config.family_spec.tensor_parallel_size))
        finally:
            if server is not None:
                server.stop()
            pidfile.remove(pid_path)

    def _start(self, matrix: Matrix, config: ServerConfig, log: Path, pid_path: Path, first: CellKey) -> VllmServer:
        per_request = "off" if self.per_request_refused else matrix.per_request_spec_decode
        try:
            return self._start_with(matrix, config, log, pid_path, first, per_request)
        except ServerStartError as exc:
            if per_request == "off" or not refused_per_request(str(exc)):
                raise
        # An older vLLM without per-request metrics: measure with the counters alone, and say so.
        self.per_request_refused = True
        self._note(f"{config.label()}: the server does not know {PER_REQUEST_FLAG}; acceptance from /metrics "
                   f"counters only (no per-request intervals)")
        return self._start_with(matrix, config, log, pid_path, first, "off")

    def _start_with(self, matrix: Matrix, config: ServerConfig, log: Path, pid_path: Path, first: CellKey,
                    per_request: str) -> VllmServer:
        fam, meth = config.family_spec, config.method_spec
        server = VllmServer(
            config.model, log_path=log, port=matrix.port, method=config.method,
            num_speculative_tokens=config.depth, speculative_extra=meth.extra,
            draft_model=fam.draft_models.get(config.method) or meth.draft_model,
            tensor_parallel_size=fam.tensor_parallel_size, extra_flags=fam.vllm_args,
            schedule=config.schedule, synthetic_rates=config.synthetic_rates, per_request=per_request,
            adaptive=config.adaptive, command_template=launch_template(matrix, self.settings), env=matrix.env,
            cwd=self.run_dir,
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
        prompts = self._requests_for(base_url, model, first.workload).prompts[: matrix.warmup_requests]
        asyncio.run(run_load(base_url, model, prompts, min(2, len(prompts)), endpoint=matrix.endpoint,  # type: ignore[arg-type]
                             max_tokens=min(wl.max_tokens, WARMUP_MAX_TOKENS), temperature=wl.temperature,
                             timeout_s=matrix.request_timeout_s, stall_timeout_s=matrix.stall_timeout_s,
                             headers=auth_headers(self.settings)))

    def _requests_for(self, base_url: str, model: str, workload: str) -> WorkloadRequests:
        """A workload's requests for this server: a trace's synthesized prompts re-made to the trace's input
        lengths in *this* model's tokens (the reader could only estimate them), measured once per model."""
        reqs = self.requests[workload]
        if not reqs.synth or not any(reqs.synth):
            return reqs
        if model not in self.tokens_per_estimate:
            ratio = self.tokens_per_estimate[model] = tokens_per_estimate(base_url, model)
            self._note(f"{model}: synthesized prompts fitted to its tokenizer ({ratio:.2f} tokens per estimated "
                       f"token)" if ratio else f"{model}: no /tokenize: synthesized prompts keep estimated lengths")
        ratio = self.tokens_per_estimate[model]
        return reqs.resynthesized(ratio) if ratio else reqs

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
            reqs = self._requests_for(self.endpoint, model, key.workload)
            self._note(f"{config.label()}: {key.workload} @ concurrency {key.concurrency}")
            sink(measure_cell(matrix, key, Target(self.endpoint, model, died), reqs,
                              config.family_spec.tensor_parallel_size))


# ---- checks before anything starts --------------------------------------------------------------------

# Launchers that run the server somewhere else (a container, another node): a model path is theirs to check.
REMOTE_LAUNCHERS = {"docker", "podman", "nerdctl", "singularity", "apptainer", "enroot", "srun", "ssh", "kubectl"}


def key_line_of(matrix: Matrix, parts: list[str]) -> int:
    try:
        return key_line(matrix.path.read_text(encoding="utf-8"), parts)
    except (OSError, UnicodeDecodeError):
        return 0


def _launch_source(matrix: Matrix, settings: Settings) -> str:
    if matrix.launch != DEFAULT_LAUNCH:
        return "run.launch"
    if settings.vllm_launch:
        return f"${LAUNCH_ENV}"
    return f"the default launch template {DEFAULT_LAUNCH!r}"


def check_launch(matrix: Matrix, settings: Settings | None = None) -> None:
    """The launch command can be split and found, and local model paths exist — else every server start of
    the run would fail, one by one, after the run had begun. ``settings``: default this process's."""
    settings = settings if settings is not None else settings_mod.load()
    template, source = launch_template(matrix, settings), _launch_source(matrix, settings)

    def bad(message: str, parts: list[str] | None = None) -> Exception:
        if parts is not None:
            return InputError(matrix.path, key_line_of(matrix, parts), message)
        if source == "run.launch":
            return InputError(matrix.path, key_line_of(matrix, ["run", "launch"]), f"run.launch: {message}")
        return UsageError(f"{source}: {message}" + ("" if source.startswith("$") else
                                                    f"; set run.launch or ${LAUNCH_ENV} (docs/hosts.md)"))

    try:
        argv = shlex.split(template)
    except ValueError as exc:
        raise bad(f"cannot split the launch command like a shell does ({exc})") from None
    if not argv:
        raise bad("the launch command is empty")
    exe = argv[0]
    path_env = matrix.env.get("PATH", os.environ.get("PATH", os.defpath))
    if "/" in exe:
        if not (os.path.isfile(exe) and os.access(exe, os.X_OK)):
            raise bad(f"{exe}: no such executable")
    elif "{" not in exe and shutil.which(exe, path=path_env) is None:
        raise bad(f"{exe!r} is not found on PATH (is vLLM installed on this host?)")
    if Path(exe).name in REMOTE_LAUNCHERS:
        return
    for fam in matrix.families:
        checks = [(fam.model, ["families", fam.name, "model"])]
        for method, draft in fam.draft_models.items():
            checks.append((draft, ["families", fam.name, "draft_models", method]))
        for m in matrix.methods:
            if m.draft_model and m.name not in fam.draft_models:
                checks.append((m.draft_model, ["methods", m.name, "draft_model"]))
        for model, parts in checks:
            if (why := _local_model_problem(model)) is not None:
                raise bad(f"{'.'.join(parts)}: {why}", parts)


# vLLM 0.32's CPU rejection sampler (vllm/utils/cpu_triton_utils.py) asserts this at the first request, after a
# server start of a minute or more: the runner says it before starting anything.
SYNTHETIC_CPU_REASON = "Synthetic acceptance not supported with CPU sampling"


def check_synthetic(matrix: Matrix, gpu_model: str | None = None, settings: Settings | None = None) -> None:
    """Refuse synthetic-acceptance server configs on a host without GPUs (a remote launcher's host is not this
    one, so it is not checked)."""
    configs = [c for c in matrix.server_configs()
               if uses_synthetic(speculative_config(c.method, c.depth, c.method_spec.extra, None, c.schedule,
                                                    c.synthetic_rates) if c.method != "none" else None)]
    if not configs:
        return
    try:
        exe = Path(shlex.split(launch_template(matrix, settings))[0]).name
    except (ValueError, IndexError):
        exe = ""
    if exe in REMOTE_LAUNCHERS:
        return
    model = gpu_model if gpu_model is not None else hostfacts.detect_gpus().model
    if model != "cpu":
        return
    meth = configs[0].method_spec
    parts = ["methods", meth.name, "synthetic_acceptance_rates" if meth.synthetic_rates else "extra"]
    raise InputError(matrix.path, key_line_of(matrix, parts),
                     f"{'.'.join(parts)}: synthetic acceptance (rejection_sample_method = \"synthetic\") needs a GPU "
                     f"host; this host has none and vLLM refuses it on CPU: \"{SYNTHETIC_CPU_REASON}\" "
                     f"({configs[0].label()}; docs/hosts.md)")


def refused_per_request(message: str) -> bool:
    """A start failure that is an older vLLM not knowing the per-request metrics flag (argparse's message)."""
    return PER_REQUEST_FLAG in message and "unrecognized arguments" in message


def _local_model_problem(model: str) -> str | None:
    """Why a model that is a local path cannot load on this host (None for a hub name or a real path)."""
    if model.startswith("~"):
        return f"{model!r}: '~' is not expanded (the server starts without a shell); use an absolute path"
    if model.startswith(("./", "../")):
        return (f"{model!r}: a relative path would resolve against the server's working directory (the run "
                f"folder); use an absolute path (or ${{VAR}})")
    if os.path.isabs(model) and not os.path.exists(model):
        return f"no such file or directory {model!r} on this host"
    return None


PER_POS_LINE = re.compile(r'^vllm:spec_decode_num_accepted_tokens_per_pos_total\{[^}]*position="(\d+)"', re.M)


def normalize_endpoint(url: str) -> str:
    """The server root of an ``--endpoint`` (``host:port`` gets ``http://``; a pasted OpenAI base URL's
    ``/v1`` is dropped); a malformed URL is a one-line usage error."""
    text = url.strip()
    if "://" not in text:
        if re.match(r"^https?[:/]", text, re.I):
            raise UsageError(f"--endpoint {url}: not a URL (expected e.g. http://gpu-host:8000)")
        text = "http://" + text
    try:
        parsed = httpx.URL(text)
    except (httpx.InvalidURL, ValueError) as exc:
        raise UsageError(f"--endpoint {url}: not a URL ({exc})") from None
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise UsageError(f"--endpoint {url}: not a URL (expected e.g. http://gpu-host:8000)")
    path = parsed.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[:-3]
    return str(parsed.copy_with(path=path or "/", query=None, fragment=None)).rstrip("/")


def check_endpoint(endpoint: str, config: ServerConfig, timeout_s: float = 10.0) -> None:
    """An attached server answers and runs what the matrix says (speculation on or off, and the depth
    when its counters show it). A server that is still loading (/health 503) is waited for later."""
    try:
        resp = httpx.get(f"{endpoint}/health", timeout=timeout_s, trust_env=False, headers=auth_headers())
    except httpx.HTTPError as exc:
        why = str(exc) or type(exc).__name__
        raise UsageError(f"--endpoint {endpoint}: cannot connect ({why}); is the server running? --endpoint "
                         f"attaches to a running server, it never starts one") from None
    if resp.status_code == 404:
        raise UsageError(f"--endpoint {endpoint}: no /health there (404): give the root of a vLLM OpenAI-compatible "
                         f"server, e.g. http://gpu-host:8000")
    if resp.status_code != 200:
        return  # loading, or behind an auth proxy: the run's own health wait decides
    try:
        text = httpx.get(f"{endpoint}/metrics", timeout=timeout_s, trust_env=False, headers=auth_headers()).text
        positions = set(PER_POS_LINE.findall(text))
        speculating = "vllm:spec_decode_num_draft" in text
    except httpx.HTTPError:
        return  # no metrics: nothing to check against
    label = config.label()
    if config.method == "none" and speculating:
        raise UsageError(f"--endpoint {endpoint}: the server runs speculative decoding, but the matrix's server "
                         f"config is {label} (no speculation); its cells would be mislabelled")
    if config.method != "none" and not speculating:
        raise UsageError(f"--endpoint {endpoint}: the server runs without speculative decoding (no "
                         f"vllm:spec_decode_* metrics), but the matrix's server config is {label}")
    if config.method != "none" and positions and len(positions) != config.depth:
        raise UsageError(f"--endpoint {endpoint}: the server drafts {len(positions)} tokens per step, but the "
                         f"matrix's server config is {label}")


CALIBRATION_TOKENS = 1000


def tokens_per_estimate(base_url: str, model: str, timeout_s: float = 30.0) -> float | None:
    """Real tokens per estimated token of synthesized text on the server's tokenizer (vLLM's /tokenize),
    or None when the server cannot say."""
    text = synth_prompt(CALIBRATION_TOKENS, filler_words(), offset=0)
    try:
        resp = httpx.post(f"{base_url}/tokenize", json={"model": model, "prompt": text}, timeout=timeout_s,
                          trust_env=False, headers=auth_headers())
        count = resp.json().get("count") if resp.status_code == 200 else None
    except (httpx.HTTPError, ValueError, AttributeError):
        return None
    if isinstance(count, bool) or not isinstance(count, int) or count <= 0:
        return None
    return count / CALIBRATION_TOKENS


def _died(server: VllmServer) -> str | None:
    proc = server.proc
    if proc is None:
        return "server was stopped"
    rc = proc.poll()
    return None if rc is None else f"exit code {rc}: {failure_detail(server.log_path)}"


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
