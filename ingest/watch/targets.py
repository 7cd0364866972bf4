"""The watch targets file (TOML): which endpoints to read, and what segment and config each serves.

Format (docs/watch.md)::

    interval_s = 15            # optional default for --interval
    timeout_s = 5              # per target, per scrape
    [[target]]
    name = "chat-a"            # unique; stored as the target id
    url = "https://vllm-a:8000/metrics"   # a vLLM /metrics URL (kind = "metrics", the default) ...
    segment = "tenant-x/chat"
    family = "llama70b"; method = "ngram"; depth = 3; gpu = "H100"; gpu_count = 1; workload = "chat"
    token_env = "VLLM_A_TOKEN" # optional: bearer token read from this environment variable
    verify = true              # https certificate verification (default on); or a CA bundle path

    [[target]]                 # ... or a Prometheus server that already scrapes the fleet
    name = "fleet"
    kind = "prometheus"
    url = "http://prometheus:9090"
    selector = '{job="vllm", deployment="b"}'  # label matchers; one stored target per instance

Tokens are read from the environment at request time and never stored, printed or logged. A URL with
credentials in it (``user:pass@``) is refused: secrets belong in environment variables.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ingest.errors import InputError
from ingest.records import KNOWN_METHODS

KINDS = ("metrics", "prometheus")
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:/@-]{0,127}$")
_SELECTOR = re.compile(r'^\{(\s*[A-Za-z_][A-Za-z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"\s*,?)*\s*\}$')
_ENV = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_FILE_BYTES = 4 << 20
MAX_TARGETS = 10_000


@dataclass(frozen=True, slots=True)
class Target:
    """One configured target: where to read and what it serves (the labels stored with its samples)."""

    name: str
    url: str
    kind: str = "metrics"
    segment: str = "default"
    family: str | None = None
    method: str | None = None
    depth: int | None = None
    gpu: str | None = None
    gpu_count: int = 1
    workload: str | None = None
    selector: str = "{}"
    token_env: str | None = None
    verify: bool | str = True
    timeout_s: float = 5.0

    @property
    def config_label(self) -> str:
        return f"{self.method or '?'}:{self.depth if self.depth is not None else '?'}"


@dataclass(frozen=True, slots=True)
class WatchConfig:
    path: Path
    targets: tuple[Target, ...]
    interval_s: float = 15.0
    timeout_s: float = 5.0


def _line_of(text: str, name: str) -> int:
    for i, line in enumerate(text.splitlines(), 1):
        if re.match(rf'\s*name\s*=\s*["\']{re.escape(name)}["\']', line):
            return i
    return 0


def _num(v: object, lo: float, hi: float) -> float | None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not lo <= float(v) <= hi:
        return None
    return float(v)


def _target(raw: dict, i: int, defaults: dict, path: Path, text: str) -> Target:
    name = raw.get("name")
    where = f"target[{i}]"
    line = _line_of(text, name) if isinstance(name, str) else 0

    def bad(msg: str) -> InputError:
        return InputError(path, line, f"{where}: {msg}")

    if not isinstance(name, str) or not _NAME.match(name):
        raise bad(f"name: expected 1-128 characters of letters, digits and _.:/@-, got {name!r}")
    where = f"target {name!r}"
    allowed = set(Target.__dataclass_fields__)
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise bad(f"unknown key(s) {', '.join(unknown)}; expected some of {', '.join(sorted(allowed))}")
    kind = raw.get("kind", "metrics")
    if kind not in KINDS:
        raise bad(f"kind: expected one of {', '.join(KINDS)}, got {kind!r}")
    url = raw.get("url")
    if not isinstance(url, str):
        raise bad("url: expected a string (http:// or https://)")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise bad(f"url: expected an http:// or https:// URL, got {url!r}")
    if parts.username or parts.password:
        raise bad("url: credentials in a URL are refused (they would be stored and logged); use token_env")
    for key in ("segment", "family", "gpu", "workload"):
        v = raw.get(key)
        if v is not None and (not isinstance(v, str) or not v.strip() or len(v) > 200):
            raise bad(f"{key}: expected a non-empty string of at most 200 characters, got {v!r}")
    method = raw.get("method")
    if method is not None and method not in KNOWN_METHODS:
        raise bad(f"method: expected one of {', '.join(KNOWN_METHODS)}, got {method!r}")
    depth = raw.get("depth")
    if depth is not None and (isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 64):
        raise bad(f"depth: expected an integer in [0, 64], got {depth!r}")
    if method == "none":
        depth = 0
    gpu_count = raw.get("gpu_count", 1)
    if isinstance(gpu_count, bool) or not isinstance(gpu_count, int) or not 1 <= gpu_count <= 4096:
        raise bad(f"gpu_count: expected an integer in [1, 4096], got {gpu_count!r}")
    selector = raw.get("selector", "{}")
    if kind == "metrics" and "selector" in raw:
        raise bad("selector: only for kind = \"prometheus\"")
    if not isinstance(selector, str) or not _SELECTOR.match(selector):
        raise bad(f'selector: expected PromQL label matchers like {{job="vllm"}}, got {selector!r}')
    token_env = raw.get("token_env")
    if token_env is not None and (not isinstance(token_env, str) or not _ENV.match(token_env)):
        raise bad(f"token_env: expected an environment variable name, got {token_env!r}")
    verify = raw.get("verify", True)
    if not isinstance(verify, bool | str):
        raise bad(f"verify: expected true, false or a CA bundle path, got {verify!r}")
    timeout = _num(raw.get("timeout_s", defaults["timeout_s"]), 0.1, 600)
    if timeout is None:
        raise bad(f"timeout_s: expected a number of seconds in [0.1, 600], got {raw.get('timeout_s')!r}")
    return Target(name=name, url=url, kind=kind, segment=raw.get("segment", "default"), family=raw.get("family"),
                  method=method, depth=depth, gpu=raw.get("gpu"), gpu_count=gpu_count,
                  workload=raw.get("workload"), selector=selector, token_env=token_env, verify=verify,
                  timeout_s=timeout)


def load_targets(path: str | Path) -> WatchConfig:
    """Read and check a targets file; every problem is an :class:`InputError` naming file and line."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise InputError(path, 0, f"expected a targets file of at most {MAX_FILE_BYTES >> 20} MiB, "
                                      f"got {size} bytes")
        raw_bytes = path.read_bytes()
    except FileNotFoundError:
        raise InputError(path, 0, "no such targets file") from None
    except IsADirectoryError:
        raise InputError(path, 0, "expected a TOML targets file, got a folder") from None
    try:
        text = raw_bytes.decode("utf-8-sig")
        raw = tomllib.loads(text)
    except UnicodeDecodeError:
        raise InputError(path, 0, "expected a UTF-8 TOML targets file") from None
    except tomllib.TOMLDecodeError as exc:
        at = re.search(r"\(at line (\d+)", str(exc))
        raise InputError(path, int(at.group(1)) if at else 0,
                         f"expected valid TOML ({str(exc).split(' (at')[0]})") from None
    except RecursionError:
        raise InputError(path, 0, "expected valid TOML (nested too deeply)") from None
    unknown = sorted(set(raw) - {"target", "interval_s", "timeout_s"})
    if unknown:
        raise InputError(path, 0, f"unknown top-level key(s) {', '.join(unknown)}; expected interval_s, "
                                  "timeout_s and [[target]] tables")
    interval = _num(raw.get("interval_s", 15.0), 0.05, 86_400)
    timeout = _num(raw.get("timeout_s", 5.0), 0.1, 600)
    if interval is None or timeout is None:
        raise InputError(path, 0, "interval_s / timeout_s: expected positive numbers of seconds")
    items = raw.get("target", [])
    if not isinstance(items, list) or not items or not all(isinstance(t, dict) for t in items):
        raise InputError(path, 0, "expected at least one [[target]] table")
    if len(items) > MAX_TARGETS:
        raise InputError(path, 0, f"expected at most {MAX_TARGETS} targets, got {len(items)}")
    targets = [_target(t, i, {"timeout_s": timeout}, path, text) for i, t in enumerate(items)]
    seen: set[str] = set()
    for t in targets:
        if t.name in seen:
            raise InputError(path, _line_of(text, t.name),
                             f"target name {t.name!r} appears twice; names must be unique")
        seen.add(t.name)
    return WatchConfig(path=path, targets=tuple(targets), interval_s=interval, timeout_s=timeout)
