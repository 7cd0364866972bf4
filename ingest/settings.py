"""spectune's settings, declared once as data, and the one place that reads them from the environment.

Every setting is a :class:`Setting` in :data:`SETTINGS`: its name, the ``SPECTUNE_*`` environment variable that
sets it, its type, default, unit and help text (docs/settings.md lists them; ``spectune settings`` prints them with
their current values). :func:`load` reads the environment once into a frozen, typed :class:`Settings`; commands
load it at their start and pass it (or the field they need) down, and a function deep in a layer takes it as a
parameter whose default is ``load()``. A bad value is a :class:`~ingest.errors.UsageError` naming the variable and
what it accepts (one line, exit 2). An empty value counts as unset. No other module reads ``SPECTUNE_*`` from the
environment (tests/test_settings.py scans the source); writing one into a child's environment is fine.

Bottom layer: imports only the standard library and ingest.errors, so every package can import it.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from ingest.errors import UsageError

MiB = 1024 * 1024
GiB = 1024 * MiB
UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2, "mib": MiB,
         "g": 1000**3, "gb": 1000**3, "gib": GiB, "t": 1000**4, "tb": 1000**4, "tib": 1024 * GiB}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")
SIZE_ACCEPTS = "a size in bytes, optionally with a unit (512MiB, 2GB)"


def parse_size(text: str, where: str) -> int:
    """Bytes from ``"1073741824"`` / ``"512MiB"`` / ``"2GB"``; a UsageError naming ``where`` otherwise."""
    m = _SIZE.match(str(text))
    unit = m.group(2).lower() if m else ""
    if not m or unit not in UNITS:
        raise UsageError(f"{where}: expected {SIZE_ACCEPTS}, got {text!r}")
    value = int(float(m.group(1)) * UNITS[unit])
    if value < 1:
        raise UsageError(f"{where}: a size cap must be at least 1 byte, got {text!r}")
    return value


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting: how it is named, set, typed and explained. ``default`` None means "not set": the code that
    uses the setting then does what ``help`` says (e.g. the default store)."""

    name: str  # the field of Settings
    env: str  # the environment variable that sets it
    type: str  # one of PARSERS: path, size, seconds, integer, text, secret, resources
    default: Any
    help: str
    unit: str = ""
    low: float | None = None  # inclusive bounds, for seconds and integer
    high: float | None = None

    def accepts(self) -> str:
        """What a value must look like, in the words of the error message."""
        span = ""
        if self.low is not None:
            span = f" in [{self.low:g}, {self.high:g}]" if self.high is not None else f" ≥ {self.low:g}"
        return {"path": "a path", "size": SIZE_ACCEPTS, "seconds": f"a number of seconds{span}",
                "integer": f"a whole number{span}", "text": "any text", "secret": "any text",
                "resources": 'a JSON object of resource name → amount, e.g. {"MI300X": 8}'}[self.type]

    def parse(self, raw: str) -> Any:
        """The typed value of ``raw`` (already known to be non-empty); a one-line UsageError otherwise."""
        try:
            return PARSERS[self.type](self, raw.strip())
        except ValueError:
            raise UsageError(f"{self.env}={raw!r}: expected {self.accepts()}") from None

    def declaration(self) -> dict[str, Any]:
        """The declaration as JSON values (docs/settings.md and ``spectune settings --json`` show this)."""
        return {"name": self.name, "env": self.env, "type": self.type, "default": self.default, "unit": self.unit,
                "accepts": self.accepts(), "help": self.help}


def _number(setting: Setting, raw: str, whole: bool) -> float:
    value = float(raw) if not whole else int(raw)
    if not math.isfinite(value) or (setting.low is not None and value < setting.low) or \
            (setting.high is not None and value > setting.high):
        raise ValueError(raw)
    return value


def _size(setting: Setting, raw: str) -> int:
    try:
        return parse_size(raw, setting.env)
    except UsageError:
        raise ValueError(raw) from None


def _resources(setting: Setting, raw: str) -> dict[str, float]:
    value = json.loads(raw)  # json.JSONDecodeError is a ValueError
    if not isinstance(value, dict) or not all(
            isinstance(k, str) and k and isinstance(v, int | float) and not isinstance(v, bool) and v >= 0
            for k, v in value.items()):
        raise ValueError(raw)
    return {k: float(v) for k, v in value.items()}


PARSERS: dict[str, Callable[[Setting, str], Any]] = {
    "path": lambda s, raw: Path(raw),
    "size": _size,
    "seconds": lambda s, raw: _number(s, raw, whole=False),
    "integer": lambda s, raw: _number(s, raw, whole=True),
    "text": lambda s, raw: raw,
    "secret": lambda s, raw: raw,
    "resources": _resources,
}

DB = Setting(
    "db", "SPECTUNE_DB", "path", None,
    "The store a command opens without --db (and the store the dashboard reads). Unset: data/spectune.duckdb in a "
    "checkout, $XDG_DATA_HOME/spectune/spectune.duckdb (~/.local/share/spectune) in an installed copy.")
MAX_FILE_BYTES = Setting(
    "max_file_bytes", "SPECTUNE_MAX_FILE_BYTES", "size", 1 * GiB,
    "Largest result file, export table or request log read (and export part written); --max-file-bytes on the "
    "command wins.", unit="bytes")
MAX_TRACE_BYTES = Setting(
    "max_trace_bytes", "SPECTUNE_MAX_TRACE_BYTES", "size", 4 * GiB,
    "Largest traffic trace file read by rescore and trace; --max-trace-bytes on the command wins.", unit="bytes")
MAX_UPLOAD_MB = Setting(
    "max_upload_mb", "SPECTUNE_MAX_UPLOAD_MB", "integer", 200,
    "The dashboard's upload cap on the Your traffic page; at most the server's maxUploadSize (200) in "
    ".streamlit/config.toml.", unit="MB", low=1, high=200)
LOCK_TIMEOUT = Setting(
    "lock_timeout_s", "SPECTUNE_LOCK_TIMEOUT", "seconds", 60.0,
    "How long a command waits for a store another process holds before it exits 2 naming the holder; 0 = do not "
    "wait.", unit="s", low=0, high=86_400)
VLLM_LAUNCH = Setting(
    "vllm_launch", "SPECTUNE_VLLM_LAUNCH", "text", None,
    "The vLLM launch template ({model}, {port}, {args}) when the matrix has no run.launch. Unset: vllm serve "
    "{model} --host 127.0.0.1 --port {port} {args}.")
VLLM_API_KEY = Setting(
    "vllm_api_key", "SPECTUNE_VLLM_API_KEY", "secret", None,
    "Bearer token sent to a remote vLLM endpoint (runner --endpoint); never stored or printed.")
RAY_RESOURCES = Setting(
    "ray_resources", "SPECTUNE_RAY_RESOURCES", "resources", {},
    "Custom resources of the throwaway cluster of runner --ray local, e.g. {\"MI300X\": 8}.")
RAY_PYTHONPATH = Setting(
    "ray_pythonpath", "SPECTUNE_RAY_PYTHONPATH", "text", None,
    "PYTHONPATH of Ray workers (runner and rescore --ray), where they import spectune from. Unset: this "
    "checkout's path.")
RAY_CPUS = Setting(
    "ray_cpus", "SPECTUNE_RAY_CPUS", "integer", None,
    "CPUs of the throwaway cluster of rescore --ray local. Unset: Ray's own count.", low=1)

SETTINGS: tuple[Setting, ...] = (DB, MAX_FILE_BYTES, MAX_TRACE_BYTES, MAX_UPLOAD_MB, LOCK_TIMEOUT, VLLM_LAUNCH,
                                 VLLM_API_KEY, RAY_RESOURCES, RAY_PYTHONPATH, RAY_CPUS)
BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}


@dataclass(frozen=True, slots=True)
class Settings:
    """Every setting's value for this process (one field per :data:`SETTINGS` entry, same names), and which of
    them the environment set."""

    db: Path | None
    max_file_bytes: int
    max_trace_bytes: int
    max_upload_mb: int
    lock_timeout_s: float
    vllm_launch: str | None
    vllm_api_key: str | None
    ray_resources: dict[str, float]
    ray_pythonpath: str | None
    ray_cpus: int | None
    from_env: frozenset[str] = frozenset()  # names of the settings the environment set

    def source(self, name: str) -> str:
        """``environment`` when the environment set it, else ``default``."""
        return "environment" if name in self.from_env else "default"


def load(environ: Mapping[str, str] | None = None) -> Settings:
    """The settings from ``environ`` (default: this process's environment); the first bad value is a one-line
    UsageError naming its variable and what it accepts."""
    env = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    given: set[str] = set()
    for s in SETTINGS:
        raw = env.get(s.env, "")
        if raw.strip():
            values[s.name] = s.parse(raw)
            given.add(s.name)
        else:
            values[s.name] = dict(s.default) if isinstance(s.default, dict) else s.default
    return Settings(**values, from_env=frozenset(given))


def defaults() -> Settings:
    """Every setting at its default, whatever the environment says."""
    return load({})


assert [f.name for f in fields(Settings)][:-1] == [s.name for s in SETTINGS], "Settings and SETTINGS disagree"
