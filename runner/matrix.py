"""The benchmark matrix file (TOML): what to run, expanded into cells and server configs.

A matrix names methods with their depths, families with their concrete models, workloads, GPUs and
loads, plus run settings (requests per cell, sampling, timeouts, launch template). Expansion is
deterministic: server configs in a stable order, each started once, its cells grouped under it.
See docs/matrix.md for every key.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import os
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ingest import labels
from ingest.errors import InputError
from ingest.filechecks import regular_file_size
from ingest.records import ADAPTIVE_METHODS, KNOWN_METHODS, CellKey

MAX_MATRIX_BYTES = 4 * 1024 * 1024  # a matrix is a few KB; more is not a matrix
MAX_NAME = 120
BOM = b"\xef\xbb\xbf"
DEFAULT_LAUNCH = "vllm serve {model} --host 127.0.0.1 --port {port} {args}"

# Every key a matrix table may hold (docs/matrix.md). Anything else is refused, so a typo such as
# ``request_per_cell`` can never silently fall back to a default.
TOP_KEYS = ("name", "gpus", "methods", "families", "workloads", "load", "run", "adaptive")
METHOD_KEYS = ("depths", "draft_model", "extra", "schedule", "adaptive", "synthetic_acceptance_rates")
ADAPTIVE_KEYS = ("max_depth",)
# --speculative-config keys that are a mode of their own: given through `extra` they would run a mode the cells
# would not record, so the matrix names them with its own keys.
MODE_EXTRA_KEYS = {"num_speculative_tokens_per_batch_size": "schedule",
                   "enable_adaptive_verification": "adaptive = { max_depth = K }"}
FAMILY_KEYS = ("model", "tensor_parallel_size", "vllm_args", "draft_models")
WORKLOAD_KEYS = ("source", "format", "max_tokens", "temperature", "request_rate", "ignore_eos")
LOAD_KEYS = ("concurrency",)
RUN_KEYS = ("requests_per_cell", "requests_per_slot", "warmup_requests", "endpoint", "launch", "env", "port",
            "startup_timeout_s", "request_timeout_s", "stall_timeout_s", "per_request_spec_decode")
PER_REQUEST_LEVELS = ("summary", "detailed", "off")  # vLLM's --per-request-spec-decode-metrics (off: not passed)
MAX_DEPTH = 16


# The matrix's [adaptive] table; the stopping rule it drives and its simulated saving are runner/adaptive.py's.
@dataclass(frozen=True, slots=True)
class AdaptiveSpec:
    target_rel_width: float  # full 95 % interval width / point estimate (0.1 = ±5 %)
    min_requests: int = 40
    max_requests: int = 400
    batch: int = 20  # requests added between checks

    def grid(self) -> list[int]:
        """The request counts at which a cell checks its intervals."""
        out = list(range(self.min_requests, self.max_requests, self.batch))
        return [*out, self.max_requests]

    def as_dict(self) -> dict[str, float | int]:
        return {"target_rel_width": self.target_rel_width, "min_requests": self.min_requests,
                "max_requests": self.max_requests, "batch": self.batch}


def parse_adaptive(raw: Any, path: Path) -> AdaptiveSpec | None:
    """Validate the matrix's ``[adaptive]`` table (absent → None)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise InputError(path, 0, "adaptive: expected a table")
    unknown = set(raw) - {"target_rel_width", "min_requests", "max_requests", "batch"}
    if unknown:
        raise InputError(path, 0, f"adaptive: unknown key(s) {', '.join(sorted(unknown))}")
    target = raw.get("target_rel_width")
    if isinstance(target, bool) or not isinstance(target, int | float) or not 0 < target <= 2:
        raise InputError(path, 0, f"adaptive.target_rel_width: expected a number in (0, 2], got {target!r}")
    ints = {}
    for key, default in (("min_requests", 40), ("max_requests", 400)):
        v = raw.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or not 2 <= v <= 1_000_000:
            raise InputError(path, 0, f"adaptive.{key}: expected an integer in [2, 1000000], got {v!r}")
        ints[key] = v
    if ints["min_requests"] > ints["max_requests"]:
        raise InputError(path, 0, "adaptive: min_requests must not exceed max_requests")
    batch = raw.get("batch", max(1, ints["min_requests"] // 2))
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise InputError(path, 0, f"adaptive.batch: expected a positive integer, got {batch!r}")
    return AdaptiveSpec(float(target), ints["min_requests"], ints["max_requests"], batch)


@dataclass(frozen=True, slots=True)
class MethodSpec:
    name: str
    depths: tuple[int, ...]
    draft_model: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # merged into --speculative-config
    # One more server config: vLLM's num_speculative_tokens_per_batch_size, inclusive [start, end, K] ranges.
    schedule: tuple[tuple[int, int, int], ...] = ()
    # Synthetic-acceptance cost mode (GPU hosts): depth k runs with the first k of these per-position rates.
    synthetic_rates: tuple[float, ...] = ()
    # One more server config: vLLM's adaptive verification (enable_adaptive_verification, DSpark) drafting up to
    # this depth; 0: none.
    adaptive_depth: int = 0

    def server_variants(self) -> list[tuple[int, tuple[tuple[int, int, int], ...], bool]]:
        """(depth, schedule, adaptive) of each server config — its mode: every fixed depth, then the schedule
        (depth = its largest K, the num_speculative_tokens vLLM needs), then adaptive verification (depth = its
        maximum depth)."""
        if self.name == "none":
            return [(0, (), False)]
        out: list[tuple[int, tuple[tuple[int, int, int], ...], bool]] = [(d, (), False) for d in self.depths]
        if self.schedule:
            out.append((max(k for _, _, k in self.schedule), self.schedule, False))
        if self.adaptive_depth:
            out.append((self.adaptive_depth, (), True))
        return out

    def rates_for(self, depth: int) -> tuple[float, ...]:
        return self.synthetic_rates[:depth] if self.synthetic_rates else ()


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
    per_request_spec_decode: str = "summary"  # summary | detailed | off

    def cells(self) -> list[CellKey]:
        """Every cell, grouped by server config (so a server starts once for all its cells)."""
        out = []
        for cfg in self.server_configs():
            for wl in self.workloads:
                for c in self.concurrency:
                    out.append(CellKey(cfg.method, cfg.depth, cfg.family, cfg.model, wl.name, cfg.gpu, c,
                                       cfg.schedule, cfg.synthetic_rates, cfg.adaptive))
        return out

    def server_configs(self) -> list[ServerConfig]:
        out = []
        for gpu in self.gpus:
            for fam in self.families:
                for m in self.methods:
                    for d, sched, adaptive in m.server_variants():
                        out.append(ServerConfig(m.name, d, fam.name, fam.model, gpu, fam, m, sched, m.rates_for(d),
                                                adaptive))
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
    schedule: tuple[tuple[int, int, int], ...] = ()
    synthetic_rates: tuple[float, ...] = ()
    adaptive: bool = False

    @property
    def key(self) -> tuple:
        return (self.method, self.depth, self.family, self.model, self.gpu, self.schedule, self.synthetic_rates,
                self.adaptive)

    @property
    def mode(self) -> str:
        return "schedule" if self.schedule else "adaptive" if self.adaptive else "fixed"

    def label(self) -> str:
        m = server_method_label(self.method, self.depth, self.schedule, self.adaptive)
        if self.synthetic_rates:
            m += "~synthetic(" + ",".join(f"{r:g}" for r in self.synthetic_rates) + ")"
        return f"{self.family}/{m}@{self.gpu}"


def with_schedule(m: Matrix, method: str, schedule: Any) -> Matrix:
    """``m`` with ``schedule`` (inclusive [start, end, K] ranges, checked as a matrix file's) as ``method``'s schedule
    arm: one more server config whose cells have their own ids, the method's fixed depths unchanged (a schedule it
    already had is replaced). For a tuner that predicted a schedule from fixed cells and now measures it
    (analysis.schedule: ``derive`` predicts, ``checks`` compares the measured arm with the prediction)."""
    names = [x.name for x in m.methods]
    if method not in names or method == "none":
        raise InputError(m.path, 0, f"methods.{method}: not a speculative method of this matrix "
                                    f"(expected one of {', '.join(n for n in names if n != 'none')})")
    sched = parse_schedule([list(r) for r in schedule], m.path, f"methods.{method}.schedule")
    methods = tuple(dataclasses.replace(x, schedule=sched) if x.name == method else x for x in m.methods)
    return dataclasses.replace(m, methods=methods)


def server_method_label(method: str, depth: int, schedule: tuple[tuple[int, int, int], ...] = (),
                        adaptive: bool = False) -> str:
    """A server config's method part in server logs and progress: ``ngram:3``, ``ngram:schedule(1-8:5,9-64:3)``,
    ``dspark:adaptive(≤8)``."""
    if method == "none":
        return method
    if schedule:
        return f"{method}:schedule(" + ",".join(f"{a}-{b}:{k}" for a, b, k in schedule) + ")"
    if adaptive:
        return f"{method}:adaptive(≤{depth})"
    return f"{method}:{depth}"


def parse_method_adaptive(name: str, value: Any, path: Path, text: str) -> int:
    """``methods.<name>.adaptive = { max_depth = K }``: vLLM's adaptive verification up to K drafted tokens, for
    the methods vLLM supports it for (:data:`ADAPTIVE_METHODS`). Returns K."""
    where = ["methods", name, "adaptive"]
    line = key_line(text, where)
    label = ".".join(where)
    if name not in ADAPTIVE_METHODS:
        raise InputError(path, line, f"{label}: vLLM 0.32 supports adaptive verification "
                                     f"(enable_adaptive_verification) only for {', '.join(ADAPTIVE_METHODS)}, "
                                     f"not {name}")
    if not isinstance(value, dict):
        raise InputError(path, line, f"{label}: expected a table such as {{ max_depth = 8 }}, got {value!r}")
    unknown = sorted(set(value) - set(ADAPTIVE_KEYS))
    if unknown:
        raise InputError(path, line, f"{label}: unknown key(s) {', '.join(unknown)} (expected max_depth)")
    depth = value.get("max_depth")
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise InputError(path, line, f"{label}.max_depth: expected an integer in [1, {MAX_DEPTH}] (the most tokens "
                                     f"the drafter proposes and the verifier may trim), got {depth!r}")
    return depth


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


def _unique(values: Any, path: Path, text: str, key: list[str]) -> None:
    """A list entry given twice would run (and count) its cells twice: refuse it on the list's line."""
    seen: set[Any] = set()
    for v in values:
        if v in seen:
            raise InputError(path, key_line(text, key), f"{'.'.join(key)}: {v!r} is listed twice; expected each "
                                                        "entry once")
        seen.add(v)


def _unique_servers(families: list[FamilySpec], path: Path, text: str) -> None:
    """Two families naming the same server (model, tensor parallel size, arguments, drafts) run it twice."""
    seen: dict[tuple, str] = {}
    for f in families:
        server = (f.model, f.tensor_parallel_size, f.vllm_args, tuple(sorted(f.draft_models.items())))
        if server in seen:
            raise InputError(path, key_line(text, ["families", f.name]),
                             f"families.{f.name}: the same server as families.{seen[server]} (model {f.model!r}, "
                             "same settings); expected each server config once")
        seen[server] = f.name


def _name(raw: dict, path: Path, text: str) -> str:
    """The matrix name: it starts every run id, shown on Runs & drift and Data, so it must be a clean label."""
    name = raw.get("name", path.stem)
    if not isinstance(name, str) or not name.strip():
        raise InputError(path, key_line(text, ["name"]), f"name: expected a non-empty text, got {name!r}")
    if labels.unsafe(name) or len(name) > MAX_NAME:
        raise InputError(path, key_line(text, ["name"]),
                         f"name: {labels.shown(name)} holds a control or bidi-override character or is longer than "
                         f"{MAX_NAME} characters; expected a short printable name (it starts every run id)")
    return name


def parse_schedule(value: Any, path: Path, where: str, line: int = 0) -> tuple[tuple[int, int, int], ...]:
    """A depth schedule per batch size as vLLM 0.32 validates it (vllm/v1/spec_decode/dynamic/utils.py:
    positive inclusive ranges, start <= end, K >= 0, no overlaps, the first range starting at 1), and stricter:
    no gaps and ranges in order, so every batch size's K is written where a reader sees it (vLLM would carry
    the previous K through a gap)."""
    def bad(why: str) -> InputError:
        return InputError(path, line, f"{where}: {why} (expected e.g. [[1, 8, 5], [9, 64, 3]]: inclusive "
                                      f"[first batch size, last batch size, K] ranges from 1 on)")

    if not isinstance(value, list) or not value:
        raise bad(f"expected a non-empty list of [start, end, K] ranges, got {value!r}")
    out: list[tuple[int, int, int]] = []
    for entry in value:
        if (not isinstance(entry, list) or len(entry) != 3
                or not all(isinstance(x, int) and not isinstance(x, bool) for x in entry)):
            raise bad(f"each range must be 3 integers [start, end, K], got {entry!r}")
        start, end, k = entry
        if start < 1 or end < 1:
            raise bad(f"batch sizes must be positive, got {entry!r}")
        if start > end:
            raise bad(f"range start must be <= end, got {entry!r}")
        if not 0 <= k <= MAX_DEPTH:
            raise bad(f"K must be in [0, {MAX_DEPTH}], got {entry!r}")
        if out and start <= out[-1][1]:
            raise bad(f"ranges overlap or are out of order: {list(out[-1])} then {entry!r}")
        if out and start != out[-1][1] + 1:
            raise bad(f"gap between {list(out[-1])} and {entry!r}: batch sizes {out[-1][1] + 1}..{start - 1} "
                      f"have no K")
        if not out and start != 1:
            raise bad(f"the first range must start at batch size 1, got {entry!r}")
        out.append((start, end, k))
    if max(k for _, _, k in out) < 1:
        raise bad("every K is 0: that is the none baseline, not a schedule")
    return tuple(out)


def parse_synthetic_rates(value: Any, path: Path, where: str, need: int, line: int = 0) -> tuple[float, ...]:
    """Per-position unconditional acceptance rates as vLLM 0.32's SpeculativeConfig checks them
    (_resolve_synthetic_acceptance_rates: each in [0, 1], non-increasing), at least one per drafted position."""
    if (not isinstance(value, list) or not value
            or not all(isinstance(r, int | float) and not isinstance(r, bool) for r in value)):
        raise InputError(path, line, f"{where}: expected a non-empty list of rates in [0, 1], got {value!r}")
    rates = tuple(float(r) for r in value)
    if not all(0.0 <= r <= 1.0 for r in rates):  # nan fails too
        raise InputError(path, line, f"{where}: every rate must be in [0, 1], got {value!r}")
    if any(rates[i] > rates[i - 1] for i in range(1, len(rates))):
        raise InputError(path, line, f"{where}: rates must be non-increasing (position i's rate is the chance that "
                                     f"the first i drafts are all accepted), got {value!r}")
    if len(rates) < need:
        raise InputError(path, line, f"{where}: {len(rates)} rate(s) but the method drafts up to {need} tokens; "
                                     f"give one rate per position")
    return rates


def _port(value: Any, path: Path) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
        raise InputError(path, 0, f"run.port: expected an integer in [1, 65535], got {value!r}")
    return value


def load_matrix(path: str | Path) -> Matrix:
    """Read and validate a matrix file; any problem is an :class:`InputError` naming the key."""
    path = Path(path)
    regular_file_size(path, MAX_MATRIX_BYTES)  # a FIFO would block the read forever, /dev/zero never end
    try:
        raw_bytes = path.read_bytes()
    except OSError as exc:
        raise InputError(path, 0, f"cannot read matrix file: {exc.strerror}") from None
    if raw_bytes.startswith(BOM):  # Windows editors save one; TOML itself does not allow it
        raw_bytes = raw_bytes[len(BOM):]
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
        schedule: tuple[tuple[int, int, int], ...] = ()
        if "schedule" in m:
            where = ["methods", name, "schedule"]
            if name == "none":
                raise InputError(path, key_line(text, where), f"methods.{name}.schedule: the none baseline drafts "
                                                              f"nothing; a schedule belongs under a speculative method")
            schedule = parse_schedule(m["schedule"], path, ".".join(where), key_line(text, where))
        adaptive_depth = parse_method_adaptive(name, m["adaptive"], path, text) if "adaptive" in m else 0
        for key, use in MODE_EXTRA_KEYS.items():
            if isinstance(m.get("extra"), dict) and key in m["extra"]:
                raise InputError(path, key_line(text, ["methods", name, "extra"]),
                                 f"methods.{name}.extra.{key}: a mode of its own; write it as methods.{name}.{use} "
                                 f"(docs/matrix.md, candidate modes) so its cells record the mode")
        # A schedule or adaptive verification alone runs only that mode; depths run as well when they are given.
        default_depths = [] if (schedule or adaptive_depth) and "depths" not in m else [2, 3, 4, 5]
        depths = (0,) if name == "none" else (
            _ints(m.get("depths", default_depths), path, f"methods.{name}.depths", 1, MAX_DEPTH)
            if "depths" in m or default_depths else ())
        _unique(depths, path, text, ["methods", name, "depths"])
        rates: tuple[float, ...] = ()
        if "synthetic_acceptance_rates" in m:
            where = ["methods", name, "synthetic_acceptance_rates"]
            if name == "none":
                raise InputError(path, key_line(text, where), f"methods.{name}.synthetic_acceptance_rates: the none "
                                                              f"baseline drafts nothing")
            need = max([*depths, *(k for _, _, k in schedule), adaptive_depth])
            rates = parse_synthetic_rates(m["synthetic_acceptance_rates"], path, ".".join(where), need,
                                          key_line(text, where))
        methods.append(MethodSpec(name, depths, m.get("draft_model"),
                                  dict(_opt_table(m, "extra", path, f"methods.{name}")), schedule, rates,
                                  adaptive_depth))
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
    _unique(gpus, path, text, ["gpus"])
    _unique_servers(families, path, text)
    loads = _opt_table(raw, "load", path, "matrix")
    _check_keys(loads, LOAD_KEYS, path, text, ["load"])
    concurrency = _ints(loads.get("concurrency", [1]), path, "load.concurrency", 1, 100000)
    _unique(concurrency, path, text, ["load", "concurrency"])
    requests = run.get("requests_per_cell", 200)
    if not isinstance(requests, int) or isinstance(requests, bool) or not 1 <= requests <= 1_000_000:
        raise InputError(path, 0, f"run.requests_per_cell: expected an integer in [1, 1000000], got {requests!r}")
    if not methods or not families or not workloads:
        raise InputError(path, 0, "matrix: methods, families and workloads must each name at least one entry")
    per_request = run.get("per_request_spec_decode", "summary")
    if per_request not in PER_REQUEST_LEVELS:
        raise InputError(path, key_line(text, ["run", "per_request_spec_decode"]),
                         f"run.per_request_spec_decode: expected one of {', '.join(PER_REQUEST_LEVELS)}, "
                         f"got {per_request!r}")
    if run.get("endpoint", "completions") not in ("completions", "chat"):
        raise InputError(path, 0, f"run.endpoint: expected 'completions' or 'chat', got {run.get('endpoint')!r}")
    return Matrix(
        path=path, name=_name(raw, path, text), methods=tuple(methods), families=tuple(families),
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
        per_request_spec_decode=per_request,
    )
