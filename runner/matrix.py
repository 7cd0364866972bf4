"""The benchmark matrix file (TOML): what to run, expanded into cells and server configs.

A matrix names methods with their depths, families with their concrete models, workloads, GPUs and
loads, plus run settings (requests per cell, sampling, timeouts, launch template). Expansion is
deterministic: server configs in a stable order, each started once, its cells grouped under it.
See docs/matrix.md for every key.
"""

from __future__ import annotations

import difflib
import hashlib
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest.errors import InputError
from ingest.records import KNOWN_METHODS, CellKey
from runner.adaptive import AdaptiveSpec, parse_adaptive

DEFAULT_LAUNCH = "vllm serve {model} --host 127.0.0.1 --port {port} {args}"

# Every key a matrix table may hold (docs/matrix.md). Anything else is refused, so a typo such as
# ``request_per_cell`` can never silently fall back to a default.
TOP_KEYS = ("name", "gpus", "methods", "families", "workloads", "load", "run", "adaptive")
METHOD_KEYS = ("depths", "draft_model", "extra")
FAMILY_KEYS = ("model", "tensor_parallel_size", "vllm_args", "draft_models")
WORKLOAD_KEYS = ("source", "format", "max_tokens", "temperature", "request_rate", "ignore_eos")
LOAD_KEYS = ("concurrency",)
RUN_KEYS = ("requests_per_cell", "requests_per_slot", "warmup_requests", "endpoint", "launch", "env", "port",
            "startup_timeout_s", "request_timeout_s", "stall_timeout_s")


@dataclass(frozen=True, slots=True)
class MethodSpec:
    name: str
    depths: tuple[int, ...]
    draft_model: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # merged into --speculative-config


@dataclass(frozen=True, slots=True)
class FamilySpec:
    name: str
    model: str
    tensor_parallel_size: int = 1
    vllm_args: tuple[str, ...] = ()
    draft_models: dict[str, str] = field(default_factory=dict)  # method -> draft model path


@dataclass(frozen=True, slots=True)
class WorkloadSpec:
    name: str
    source: str = ""  # built-in prompt set name, or a file path (ShareGPT, JSONL, Spec-Bench, trace)
    format: str = "auto"
    max_tokens: int = 256
    temperature: float = 0.0
    request_rate: float | None = None  # Poisson arrivals (req/s), capped by the load's concurrency
    ignore_eos: bool = True  # generate exactly max_tokens (or the trace's output length)


@dataclass(frozen=True, slots=True)
class Matrix:
    path: Path
    name: str
    methods: tuple[MethodSpec, ...]
    families: tuple[FamilySpec, ...]
    workloads: tuple[WorkloadSpec, ...]
    gpus: tuple[str, ...]
    concurrency: tuple[int, ...]
    requests_per_cell: int
    warmup_requests: int = 2
    requests_per_slot: int = 0  # a cell at concurrency c runs max(requests_per_cell, requests_per_slot · c)
    endpoint: str = "completions"  # completions | chat
    launch: str = DEFAULT_LAUNCH
    env: dict[str, str] = field(default_factory=dict)
    startup_timeout_s: float = 600.0
    request_timeout_s: float = 300.0
    stall_timeout_s: float = 60.0
    port: int | None = None  # vllm: a fixed server port (default: a free one per server start)
    adaptive: AdaptiveSpec | None = None
    digest: str = ""

    def cells(self) -> list[CellKey]:
        """Every cell, grouped by server config (so a server starts once for all its cells)."""
        out = []
        for cfg in self.server_configs():
            for wl in self.workloads:
                for c in self.concurrency:
                    out.append(CellKey(cfg.method, cfg.depth, cfg.family, cfg.model, wl.name, cfg.gpu, c))
        return out

    def server_configs(self) -> list[ServerConfig]:
        out = []
        for gpu in self.gpus:
            for fam in self.families:
                for m in self.methods:
                    for d in (m.depths if m.name != "none" else (0,)):
                        out.append(ServerConfig(m.name, d, fam.name, fam.model, gpu, fam, m))
        return out

    def requests_for(self, concurrency: int) -> int:
        """Requests one cell at ``concurrency`` runs: enough that ramp-up and wind-down (about one request
        per slot each) are a small part of the load (docs/metrics.md, steady-state throughput)."""
        return max(self.requests_per_cell, self.requests_per_slot * int(concurrency))

    def family(self, name: str) -> FamilySpec:
        return next(f for f in self.families if f.name == name)

    def workload(self, name: str) -> WorkloadSpec:
        return next(w for w in self.workloads if w.name == name)


@dataclass(frozen=True, slots=True)
class ServerConfig:
    method: str
    depth: int
    family: str
    model: str
    gpu: str
    family_spec: FamilySpec
    method_spec: MethodSpec

    @property
    def key(self) -> tuple[str, int, str, str, str]:
        return (self.method, self.depth, self.family, self.model, self.gpu)

    def label(self) -> str:
        m = self.method if self.method == "none" else f"{self.method}:{self.depth}"
        return f"{self.family}/{m}@{self.gpu}"


def _need(table: dict, key: str, kind: type | tuple[type, ...], path: Path, where: str) -> Any:
    if key not in table:
        raise InputError(path, 0, f"{where}: missing required key {key!r}")
    value = table[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise InputError(path, 0, f"{where}.{key}: expected {getattr(kind, '__name__', kind)}, got {value!r}")
    return value


def _ints(values: Any, path: Path, where: str, lo: int, hi: int) -> tuple[int, ...]:
    if not isinstance(values, list) or not values:
        raise InputError(path, 0, f"{where}: expected a non-empty list of integers")
    for v in values:
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            raise InputError(path, 0, f"{where}: expected integers in [{lo}, {hi}], got {v!r}")
    return tuple(values)


# Optional scalar keys are type- and range-checked here: a string where a number belongs, or a TOML
# nan/inf timeout, must be a one-line InputError, never a ValueError traceback or an unbounded wait.
def _opt_int(table: dict, key: str, default: int, lo: int, hi: int, path: Path, where: str) -> int:
    v = table.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise InputError(path, 0, f"{where}.{key}: expected an integer in [{lo}, {hi}], got {v!r}")
    return v


def _opt_float(table: dict, key: str, default: float, lo: float, hi: float, path: Path, where: str) -> float:
    v = table.get(key, default)
    if isinstance(v, bool) or not isinstance(v, int | float) or not lo <= v <= hi:  # nan fails both bounds
        raise InputError(path, 0, f"{where}.{key}: expected a number in [{lo:g}, {hi:g}], got {v!r}")
    return float(v)


def _opt_table(table: dict, key: str, path: Path, where: str) -> dict:
    v = table.get(key, {})
    if not isinstance(v, dict):
        raise InputError(path, 0, f"{where}.{key}: expected a table, got {v!r}")
    return v


def _opt_list(table: dict, key: str, path: Path, where: str) -> list:
    v = table.get(key, [])
    if not isinstance(v, list):
        raise InputError(path, 0, f"{where}.{key}: expected a list, got {v!r}")
    return v


def _dotted(text: str) -> list[str]:
    return [p.strip().strip('"\'') for p in text.split(".")]


def key_line(text: str, parts: list[str]) -> int:
    """Best-effort 1-based line where the dotted key ``parts`` is written (a ``[table]`` header or a
    ``key =`` line, dotted keys included); 0 when it cannot be found (e.g. inside an inline table)."""
    table: list[str] = []
    for no, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if s.startswith("["):
            m = re.match(r"\[\[?\s*([^\]]+?)\s*\]", s)
            if m:
                table = _dotted(m.group(1))
                if table[: len(parts)] == parts:
                    return no
            continue
        m = re.match(r"""([A-Za-z0-9_\-"'. ]+?)\s*=""", s)
        if m and (table + _dotted(m.group(1)))[: len(parts)] == parts:
            return no
    return 0


def _check_keys(table: dict, allowed: tuple[str, ...], path: Path, text: str, where: list[str]) -> None:
    for key in table:
        if key in allowed:
            continue
        name = ".".join([*where, str(key)])
        close = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else f"expected one of {', '.join(allowed)}"
        raise InputError(path, key_line(text, [*where, str(key)]), f"{name}: unknown key ({hint})")


_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_env(value: Any, path: Path, where: str = "matrix") -> Any:
    """Replace ``${NAME}`` in every string value with the environment variable NAME (recursively).

    Only the braced form is expanded, so ``$HOME`` or a shell's ``$1`` in a launch template stays as
    written. An unset variable is an error naming the key: a matrix must never run with a silently
    empty model path or launch command.
    """
    if isinstance(value, str):
        def sub(m: re.Match[str]) -> str:
            name = m.group(1)
            if name not in os.environ:
                raise InputError(path, 0, f"{where}: environment variable {name} is not set")
            return os.environ[name]

        return _ENV_REF.sub(sub, value)
    if isinstance(value, dict):
        return {k: expand_env(v, path, f"{where}.{k}" if where != "matrix" else str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [expand_env(v, path, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


def _workload(name: str, w: Any, path: Path) -> WorkloadSpec:
    if not isinstance(w, dict):
        raise InputError(path, 0, f"workloads.{name}: expected a table")
    rate = w.get("request_rate")
    if rate is not None and (isinstance(rate, bool) or not isinstance(rate, int | float) or not rate > 0):
        raise InputError(path, 0, f"workloads.{name}.request_rate: expected a positive number, got {rate!r}")
    ignore_eos = w.get("ignore_eos", True)
    if not isinstance(ignore_eos, bool):
        raise InputError(path, 0, f"workloads.{name}.ignore_eos: expected true or false, got {ignore_eos!r}")
    return WorkloadSpec(name, str(w.get("source", name)), str(w.get("format", "auto")),
                        _opt_int(w, "max_tokens", 256, 1, 1_000_000, path, f"workloads.{name}"),
                        _opt_float(w, "temperature", 0.0, 0.0, 100.0, path, f"workloads.{name}"),
                        float(rate) if rate is not None else None, ignore_eos)


def _port(value: Any, path: Path) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise InputError(path, 0, f"run.port: expected an integer in [1, 65535], got {value!r}")
    return value


def load_matrix(path: str | Path) -> Matrix:
    """Read and validate a matrix file; any problem is an :class:`InputError` naming the key."""
    path = Path(path)
    try:
        raw_bytes = path.read_bytes()
    except OSError as exc:
        raise InputError(path, 0, f"cannot read matrix file: {exc.strerror}") from None
    try:
        raw = tomllib.loads(raw_bytes.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError(path, 0, "expected a UTF-8 TOML matrix file") from None
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"\(at line (\d+)", str(exc))
        line = getattr(exc, "lineno", 0) or (int(at.group(1)) if at else 0)
        raise InputError(path, line, f"expected valid TOML ({str(exc).split(' (at')[0]})") from None
    except RecursionError:  # tomllib recurses per nesting level: thousands of '[' are bad input, not a crash
        raise InputError(path, 0, "expected valid TOML (nested too deeply)") from None
    raw = expand_env(raw, path)
    text = raw_bytes.decode("utf-8")
    _check_keys(raw, TOP_KEYS, path, text, [])
    methods = []
    for name, m in _need(raw, "methods", dict, path, "matrix").items():
        if name not in KNOWN_METHODS:
            close = difflib.get_close_matches(name, KNOWN_METHODS, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise InputError(path, key_line(text, ["methods", name]),
                             f"methods.{name}: unknown method ({hint}expected one of {', '.join(KNOWN_METHODS)})")
        if not isinstance(m, dict):
            raise InputError(path, 0, f"methods.{name}: expected a table")
        _check_keys(m, METHOD_KEYS, path, text, ["methods", name])
        depths = (0,) if name == "none" else _ints(m.get("depths", [2, 3, 4, 5]), path, f"methods.{name}.depths", 1, 16)
        methods.append(MethodSpec(name, depths, m.get("draft_model"),
                                  dict(_opt_table(m, "extra", path, f"methods.{name}"))))
    families = []
    for name, f in _need(raw, "families", dict, path, "matrix").items():
        if not isinstance(f, dict):
            raise InputError(path, 0, f"families.{name}: expected a table")
        _check_keys(f, FAMILY_KEYS, path, text, ["families", name])
        families.append(FamilySpec(
            name, str(_need(f, "model", str, path, f"families.{name}")),
            _opt_int(f, "tensor_parallel_size", 1, 1, 1024, path, f"families.{name}"),
            tuple(str(a) for a in _opt_list(f, "vllm_args", path, f"families.{name}")),
            {str(k): str(v) for k, v in _opt_table(f, "draft_models", path, f"families.{name}").items()},
        ))
    workloads = []
    for name, w in _need(raw, "workloads", dict, path, "matrix").items():
        if isinstance(w, dict):
            _check_keys(w, WORKLOAD_KEYS, path, text, ["workloads", name])
        workloads.append(_workload(name, w, path))
    run = raw.get("run", {})
    if not isinstance(run, dict):
        raise InputError(path, 0, "run: expected a table")
    _check_keys(run, RUN_KEYS, path, text, ["run"])
    gpus = _need(raw, "gpus", list, path, "matrix")
    if not gpus or not all(isinstance(g, str) and g for g in gpus):
        raise InputError(path, 0, "gpus: expected a non-empty list of GPU names")
    loads = _opt_table(raw, "load", path, "matrix")
    _check_keys(loads, LOAD_KEYS, path, text, ["load"])
    concurrency = _ints(loads.get("concurrency", [1]), path, "load.concurrency", 1, 100000)
    requests = run.get("requests_per_cell", 200)
    if not isinstance(requests, int) or isinstance(requests, bool) or not 1 <= requests <= 1_000_000:
        raise InputError(path, 0, f"run.requests_per_cell: expected an integer in [1, 1000000], got {requests!r}")
    if not methods or not families or not workloads:
        raise InputError(path, 0, "matrix: methods, families and workloads must each name at least one entry")
    if run.get("endpoint", "completions") not in ("completions", "chat"):
        raise InputError(path, 0, f"run.endpoint: expected 'completions' or 'chat', got {run.get('endpoint')!r}")
    return Matrix(
        path=path, name=str(raw.get("name", path.stem)), methods=tuple(methods), families=tuple(families),
        workloads=tuple(workloads), gpus=tuple(gpus), concurrency=concurrency, requests_per_cell=requests,
        warmup_requests=_opt_int(run, "warmup_requests", 2, 0, 1_000_000, path, "run"),
        requests_per_slot=_opt_int(run, "requests_per_slot", 0, 0, 100_000, path, "run"),
        endpoint=str(run.get("endpoint", "completions")),
        launch=str(run.get("launch", DEFAULT_LAUNCH)),
        env={str(k): str(v) for k, v in _opt_table(run, "env", path, "run").items()},
        startup_timeout_s=_opt_float(run, "startup_timeout_s", 600, 0.001, 86_400, path, "run"),
        request_timeout_s=_opt_float(run, "request_timeout_s", 300, 0.001, 86_400, path, "run"),
        stall_timeout_s=_opt_float(run, "stall_timeout_s", 60, 0.001, 86_400, path, "run"),
        port=_port(run.get("port"), path),
        adaptive=parse_adaptive(raw.get("adaptive"), path), digest=hashlib.sha256(raw_bytes).hexdigest()[:16],
    )
