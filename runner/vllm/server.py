"""Lifecycle of one vLLM OpenAI-compatible server: launch or attach, health, and a clean stop.

Owns how a server config becomes a command line (``--speculative-config`` JSON exactly as vLLM
parses it, ``--tensor-parallel-size``, extra flags), how the process is started (its own session, so
its whole process tree is one process group) and how it is stopped (SIGTERM to the group, then
SIGKILL) so no vLLM process outlives a cell. In attach mode there is no process: only health checks
against a given endpoint.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import time
import weakref
from collections import deque
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import httpx

DEFAULT_COMMAND = "vllm serve {model} --host 127.0.0.1 --port {port} {args}"
# ngram needs a lookup window; these are vLLM's own example values and keep drafts cheap.
NGRAM_DEFAULTS: dict[str, int] = {"prompt_lookup_max": 4, "prompt_lookup_min": 2}
LOG_TAIL_LINES = 20
LOG_TAIL_CHARS = 1500


class ServerStartError(RuntimeError):
    """The server could not be started or never became healthy; the message says why (one line)."""


def speculative_config(
    method: str,
    num_speculative_tokens: int,
    extra: dict[str, Any] | None = None,
    draft_model: str | None = None,
    schedule: tuple[tuple[int, int, int], ...] = (),
    synthetic_rates: tuple[float, ...] = (),
    adaptive: bool = False,
) -> dict[str, Any] | None:
    """The ``--speculative-config`` dict for a method and depth; ``None`` for the ``none`` baseline.

    ``schedule`` becomes vLLM's ``num_speculative_tokens_per_batch_size`` (``num_speculative_tokens`` is then its
    largest K); ``synthetic_rates`` switch on ``rejection_sample_method: "synthetic"`` with those
    ``synthetic_acceptance_rates`` (vllm/config/speculative.py); ``adaptive`` sets ``enable_adaptive_verification``
    (DSpark: the verifier trims each step's drafts, ``num_speculative_tokens`` is the most it drafts)."""
    if method == "none":
        return None
    if num_speculative_tokens < 1:
        raise ValueError(f"num_speculative_tokens must be >= 1 for method {method!r}")
    extra = dict(extra or {})
    config: dict[str, Any] = {"method": method, "num_speculative_tokens": num_speculative_tokens}
    if method == "ngram":
        lo = extra.get("prompt_lookup_min")
        hi = extra.get("prompt_lookup_max")
        # vLLM rejects min > max: a default must never contradict the half the caller did give.
        if hi is None:
            hi = max(NGRAM_DEFAULTS["prompt_lookup_max"], lo or 0)
        if lo is None:
            lo = min(NGRAM_DEFAULTS["prompt_lookup_min"], hi)
        config["prompt_lookup_max"] = hi
        config["prompt_lookup_min"] = lo
    if draft_model is not None:
        config["model"] = draft_model
    if schedule:
        config["num_speculative_tokens_per_batch_size"] = [list(r) for r in schedule]
    if adaptive:
        config["enable_adaptive_verification"] = True
    if synthetic_rates:
        config["rejection_sample_method"] = "synthetic"
        config["synthetic_acceptance_rates"] = list(synthetic_rates)
    config.update(extra)
    return config


PER_REQUEST_FLAG = "--per-request-spec-decode-metrics"


def uses_synthetic(config: dict[str, Any] | None) -> bool:
    return bool(config) and config.get("rejection_sample_method") == "synthetic"  # type: ignore[union-attr]


def build_server_args(
    method: str = "none",
    num_speculative_tokens: int = 0,
    *,
    speculative_extra: dict[str, Any] | None = None,
    draft_model: str | None = None,
    tensor_parallel_size: int = 1,
    extra_flags: list[str] | tuple[str, ...] = (),
    schedule: tuple[tuple[int, int, int], ...] = (),
    synthetic_rates: tuple[float, ...] = (),
    per_request: str = "off",
    adaptive: bool = False,
) -> list[str]:
    """The server's argv tail (one list element per argv word, so the JSON needs no shell quoting).

    ``per_request`` (summary | detailed | off) adds ``--per-request-spec-decode-metrics`` to a speculating
    server only: vLLM 0.32 refuses the flag without ``--speculative-config`` (vllm/config/vllm.py)."""
    args: list[str] = []
    spec = speculative_config(method, num_speculative_tokens, speculative_extra, draft_model, schedule,
                              synthetic_rates, adaptive)
    if spec is not None:
        args += ["--speculative-config", json.dumps(spec, separators=(",", ":"))]
        if per_request != "off" and PER_REQUEST_FLAG not in extra_flags:
            args += [PER_REQUEST_FLAG, per_request]
    if tensor_parallel_size > 1:
        args += ["--tensor-parallel-size", str(tensor_parallel_size)]
    args += list(extra_flags)
    return args


def render_command(template: str, model: str, port: int, args: list[str]) -> list[str]:
    """Split the template like a shell would, then fill ``{model}``, ``{port}`` and ``{args}``.

    Splitting before filling keeps paths with spaces and the JSON config intact as single words.
    A template without an ``{args}`` word gets the args appended.
    """
    argv: list[str] = []
    placed = False
    for word in shlex.split(template):
        if word == "{args}":
            argv += args
            placed = True
        else:
            argv.append(word.replace("{model}", model).replace("{port}", str(port)))
    if not placed:
        argv += args
    return argv


def port_in_use(port: int, host: str = "127.0.0.1") -> bool:
    # SO_REUSEADDR like uvicorn: a TIME_WAIT leftover must not count as taken, a listener must.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return True
    return False


def free_port(host: str = "127.0.0.1") -> int:
    """A port that was free a moment ago (the OS picks it; a race with other binders is possible)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def log_tail(path: Path | None, lines: int = LOG_TAIL_LINES, limit: int = LOG_TAIL_CHARS) -> str:
    """The last lines of a log as one trimmed line (for error messages)."""
    if path is None or not path.exists():
        return "(no log)"
    with path.open("rb") as fh:
        fh.seek(max(0, path.stat().st_size - 64_000))
        text = fh.read().decode("utf-8", errors="replace")
    kept = deque((ln.strip() for ln in text.splitlines() if ln.strip()), maxlen=lines)
    joined = " | ".join(kept)
    return joined if len(joined) <= limit else "..." + joined[-limit:]


# vLLM prefixes its log lines ("(APIServer pid=7) ERROR 11-29 22:18:10 [core.py:12] ..."); the reason a
# server died is usually the last "SomeError: message" line of a traceback.
_LOG_PREFIX = re.compile(r"^(?:\((?:\w+) pid=\d+\)\s*)?(?:(?:ERROR|WARNING|INFO|CRITICAL)\s+\d\d-\d\d "
                         r"\d\d:\d\d:\d\d(?:\.\d+)?\s+\[[^\]]*\]\s*)?")
_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Exit|Interrupt)(?::\s*\S.*|$)")
_NEW_RECORD = re.compile(r"^(?:\(\w+ pid=\d+\)|Traceback |During handling |The above exception |"
                         r"(?:ERROR|WARNING|INFO|DEBUG|CRITICAL)[ :]|\s*File \")")
REASON_CHARS = 400


def log_reason(path: Path | None) -> str | None:
    """The last exception line of a log (``ValueError: ...``, vLLM's line prefix removed), if any."""
    if path is None or not path.exists():
        return None
    with path.open("rb") as fh:
        fh.seek(max(0, path.stat().st_size - 64_000))
        text = fh.read().decode("utf-8", errors="replace")
    lines = text.splitlines()
    for i in range(len(lines) - 1, -1, -1):
        line = _LOG_PREFIX.sub("", lines[i].strip())
        if not _EXCEPTION_LINE.match(line):
            continue
        # A message may go on over several lines (pydantic's do): keep them until the next log record.
        parts = [line]
        for more in lines[i + 1: i + 8]:
            if not more.strip() or _NEW_RECORD.match(more):
                break
            parts.append(more.strip())
        reason = " ".join(parts)
        return reason if len(reason) <= REASON_CHARS else reason[:REASON_CHARS] + "..."
    return None


def failure_detail(path: Path | None) -> str:
    """Why a server failed, as one line: its last exception line and where the log is, else the log's tail."""
    reason = log_reason(path)
    if reason is not None:
        return f"{reason} (log: {path})"
    return log_tail(path)


def group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def env_from_setup(env_dir: str | Path) -> dict[str, str]:
    """The variables ``scripts/setup_vllm_cpu.sh DIR`` wrote to ``DIR/env.sh`` (launch template,
    model path, vLLM's cache/temp dirs), without sourcing a shell."""
    path = Path(env_dir) / "env.sh"
    if not path.is_file():
        raise FileNotFoundError(f"{path} not found: run scripts/setup_vllm_cpu.sh {env_dir}")
    env: dict[str, str] = {}
    for line in path.read_text().splitlines():
        words = shlex.split(line, comments=True)
        if len(words) == 2 and words[0] == "export" and "=" in words[1]:
            key, _, value = words[1].partition("=")
            env[key] = value
    return env


_LIVE: weakref.WeakSet[VllmServer] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:
    # Last line of defence: an interpreter exiting with a server still up must not orphan it.
    for server in list(_LIVE):
        with contextlib.suppress(Exception):
            server.stop(grace_s=5.0)


class VllmServer:
    """One vLLM server: launched from a command template, or attached to an existing endpoint.

    Use as a context manager (``with VllmServer(...) as srv: srv.wait_healthy(120)``) or call
    :meth:`start` / :meth:`stop`. ``stop`` is idempotent and always takes the process group down.
    """

    def __init__(
        self,
        model: str,
        *,
        log_path: str | Path | None = None,
        port: int | None = None,
        host: str = "127.0.0.1",
        method: str = "none",
        num_speculative_tokens: int = 0,
        speculative_extra: dict[str, Any] | None = None,
        draft_model: str | None = None,
        tensor_parallel_size: int = 1,
        extra_flags: list[str] | tuple[str, ...] = (),
        schedule: tuple[tuple[int, int, int], ...] = (),
        synthetic_rates: tuple[float, ...] = (),
        per_request: str = "off",
        adaptive: bool = False,
        command_template: str = DEFAULT_COMMAND,
        env: dict[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> None:
        self.model = model
        self.host = host
        self.port = port if port is not None else free_port(host)
        self.args = build_server_args(
            method,
            num_speculative_tokens,
            speculative_extra=speculative_extra,
            draft_model=draft_model,
            tensor_parallel_size=tensor_parallel_size,
            extra_flags=extra_flags,
            schedule=schedule,
            synthetic_rates=synthetic_rates,
            per_request=per_request,
            adaptive=adaptive,
        )
        self.command_template = command_template
        self.log_path = Path(log_path) if log_path is not None else None
        self.env = dict(env or {})
        self.cwd = Path(cwd) if cwd is not None else None
        self.base_url = f"http://{host}:{self.port}"
        self.attached = False
        self.proc: subprocess.Popen[bytes] | None = None
        self.pgid: int | None = None

    @classmethod
    def attach(cls, endpoint_url: str) -> VllmServer:
        """A handle on a server someone else runs: health checks only, ``stop`` does nothing."""
        url = httpx.URL(endpoint_url.rstrip("/"))
        server = cls.__new__(cls)
        server.model = ""
        server.host = url.host
        server.port = url.port or (443 if url.scheme == "https" else 80)
        server.args = []
        server.command_template = ""
        server.log_path = None
        server.env = {}
        server.cwd = None
        server.base_url = str(url).rstrip("/")
        server.attached = True
        server.proc = None
        server.pgid = None
        return server

    def command(self) -> list[str]:
        return render_command(self.command_template, self.model, self.port, self.args)

    def start(self) -> None:
        """Launch the process (no wait). Raises :class:`ServerStartError` if it cannot even start."""
        if self.attached or self.proc is not None:
            return
        if self.log_path is None:
            raise ValueError("log_path is required to launch a server")
        if port_in_use(self.port, self.host):
            raise ServerStartError(f"port {self.port} in use")
        argv = self.command()
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, **self.env}
        with self.log_path.open("ab") as log:
            log.write(f"$ {shlex.join(argv)}\n".encode())
            log.flush()
            try:
                # Own session => own process group: stop() can signal every worker vLLM forks.
                self.proc = subprocess.Popen(
                    argv,
                    stdin=subprocess.DEVNULL,
                    stdout=log,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=self.cwd,
                    start_new_session=True,
                )
            except OSError as exc:
                raise ServerStartError(f"cannot launch {argv[0]!r}: {exc}") from exc
        self.pgid = self.proc.pid
        _LIVE.add(self)

    def health(self, timeout_s: float = 2.0) -> bool:
        try:
            resp = httpx.get(f"{self.base_url}/health", timeout=timeout_s, trust_env=False)
        except httpx.HTTPError:
            return False
        return resp.status_code == 200

    def wait_healthy(self, timeout_s: float) -> float:
        """Poll ``/health`` until 200; returns seconds waited.

        On failure (the process exits first, or the timeout passes) the process group is stopped and
        :class:`ServerStartError` carries the reason and the log's tail.
        """
        t0 = time.monotonic()
        deadline = t0 + timeout_s
        while True:
            if self.proc is not None and (rc := self.proc.poll()) is not None:
                self.stop()
                raise ServerStartError(
                    f"server exited with code {rc} before becoming healthy: {failure_detail(self.log_path)}"
                )
            if self.health(timeout_s=min(2.0, max(0.1, deadline - time.monotonic()))):
                return time.monotonic() - t0
            if time.monotonic() >= deadline:
                tail = failure_detail(self.log_path) if self.proc is not None else self.base_url
                self.stop()
                raise ServerStartError(f"server not healthy after {timeout_s:g} s: {tail}")
            time.sleep(0.5)

    def stop(self, grace_s: float = 10.0) -> None:
        """SIGTERM the whole process group, wait up to ``grace_s``, then SIGKILL what is left."""
        if self.proc is None or self.pgid is None:
            return
        pgid = self.pgid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        deadline = time.monotonic() + grace_s
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=grace_s)
        # Workers may outlive the leader briefly; wait for the group itself, not just our child.
        while group_alive(pgid) and time.monotonic() < deadline:
            time.sleep(0.1)
        if group_alive(pgid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=5.0)
        # Orphaned workers are reaped by init, which takes a moment after SIGKILL.
        reap_deadline = time.monotonic() + 10.0
        while group_alive(pgid) and time.monotonic() < reap_deadline:
            time.sleep(0.1)
        self.proc = None
        _LIVE.discard(self)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
