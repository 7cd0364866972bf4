"""Reading a request log: one JSON line per request with its time, its labels and vLLM's response.

Owns the request-log format (docs/watch.md, "Acceptance by segment inside one server"). vLLM's /metrics
counters are per server and model name, so a split of one deployment's traffic by tenant, route or workload
needs each request's own spec-decode numbers: with ``--per-request-spec-decode-metrics`` vLLM 0.32 returns them
in the response body (and in the final chunk of a stream) as ``metrics.speculative_decoding``
(vllm/entrypoints/generate/base/protocol.py ``SpeculativeDecodingMetrics``, filled by
vllm/v1/metrics/stats.py ``RequestSpecDecodeMetrics.to_dict``). A gateway logs one line per request::

    {"ts": "2026-12-03T15:04:05.123Z", "labels": {"tenant": "a", "route": "/v1/chat"},
     "response": {... the response object exactly as vLLM returned it ...}}

``ts`` is ISO 8601 with a zone, or unix seconds (default: the response's ``created``). ``labels`` is an object of
text/number/boolean values (optional). ``response`` is the object (or its JSON text). A line whose response has no
spec-decode metrics (an error, n > 1, a server without the flag) is counted as skipped, never guessed;
a file where every line is so is refused.

The whole file is checked before anything is written: not JSON, a wrong type, a time without a zone, metrics
that contradict themselves (histogram sum ≠ ``num_spec_steps``, Σ j·h[j] ≠ ``num_accepted_draft_tokens``,
more accepted than drafted, more drafted than steps × k) or NUL padding are one ``InputError`` naming the line.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from ingest import caps
from ingest.errors import InputError
from ingest.filechecks import GZIP_MAGIC, head_bytes, regular_file_size

MAX_LINE_BYTES = 64 * 1024 * 1024  # a detailed-level response carries per-step lists: long, never this long
MAX_LABELS = 64
MAX_LABEL_CHARS = 256
SPEC_KEYS = ("acceptance_histogram", "num_spec_steps", "num_accepted_draft_tokens", "num_draft_tokens",
             "num_spec_tokens")
TIME_MIN, TIME_MAX = 0.0, 4_102_444_800.0  # 1970 .. 2100: outside it a number is not a request's time


ROW_SCHEMA = {"line": "Int32", "ts": "Datetime", "labels": "String", "model": "String", "depth": "Int32",
              "prompt_tokens": "Int32", "completion_tokens": "Int32", "spec_steps": "Int32", "draft_tokens": "Int32",
              "accepted_tokens": "Int32", "acceptance_histogram": "List"}
CHUNK_ROWS = 50_000  # rows gathered as Python values before they become a compact polars chunk


@dataclass(slots=True)
class RequestLog:
    """A validated request log, ready to land: its rows as polars chunks (``request_log_rows`` without ``log_id``),
    so a log of a million requests is held as columns, not a million dicts."""

    path: Path
    file_hash: str
    chunks: list[Any] = field(default_factory=list)
    pending: dict[str, list] = field(default_factory=lambda: {c: [] for c in ROW_SCHEMA})
    rows: int = 0
    label_names: set[str] = field(default_factory=set)
    depths: set[int] = field(default_factory=set)
    skipped: int = 0
    skipped_why: dict[str, int] = field(default_factory=dict)

    @property
    def log_id(self) -> str:
        return "rl-" + self.file_hash[:16]

    def __len__(self) -> int:
        return self.rows

    def add(self, row: dict[str, Any]) -> None:
        for c, v in row.items():
            self.pending[c].append(v)
        self.rows += 1
        self.depths.add(row["depth"])
        if len(self.pending["line"]) >= CHUNK_ROWS:
            self.flush()

    def flush(self) -> None:
        if self.pending["line"]:
            self.chunks.append(_chunk(self.pending))
            self.pending = {c: [] for c in ROW_SCHEMA}

    def frame(self) -> Any:
        """All rows as one polars frame in ``request_log_rows``' columns (without ``log_id``)."""
        import polars as pl

        self.flush()
        return pl.concat(self.chunks) if self.chunks else _chunk(self.pending)


def _chunk(cols: dict[str, list]) -> Any:
    import polars as pl

    kinds = {"Int32": pl.Int32, "Datetime": pl.Datetime("us"), "String": pl.String, "List": pl.List(pl.Int32)}
    return pl.DataFrame(cols, schema={c: kinds[k] for c, k in ROW_SCHEMA.items()})


def _count(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _time(v: Any, path: Path, line: int) -> datetime:
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if not math.isfinite(v) or not TIME_MIN <= v <= TIME_MAX:
            raise InputError(path, line, f"'ts' {v!r} is not unix seconds between 1970 and 2100")
        return datetime.fromtimestamp(float(v), UTC).replace(tzinfo=None)
    if isinstance(v, str):
        try:
            t = datetime.fromisoformat(v.strip())
        except ValueError:
            raise InputError(path, line, f"'ts' {v[:40]!r} is not an ISO 8601 time or unix seconds") from None
        if t.tzinfo is None:
            raise InputError(path, line, f"'ts' {v[:40]!r} has no time zone: add Z or +hh:mm, or give unix seconds")
        return t.astimezone(UTC).replace(tzinfo=None)
    if v is not None:
        raise InputError(path, line, f"'ts' is {type(v).__name__}: give ISO 8601 text with a zone or unix seconds")
    raise InputError(path, line, "'ts' is missing: every line needs the request's time (ISO 8601 or unix seconds)")


def _labels(v: Any, path: Path, line: int) -> str:
    if v is None:
        return "{}"
    if not isinstance(v, dict):
        raise InputError(path, line, "'labels' must be an object of label: value")
    if len(v) > MAX_LABELS:
        raise InputError(path, line, f"'labels' has {len(v)} keys; at most {MAX_LABELS}")
    out: dict[str, str] = {}
    for k, x in v.items():
        if isinstance(x, bool):
            x = "true" if x else "false"
        elif isinstance(x, (int, float)) and math.isfinite(x):
            x = str(x)
        if not isinstance(x, str):
            raise InputError(path, line, f"label {k[:40]!r} must be text, a number or a boolean")
        if not k or len(k) > MAX_LABEL_CHARS or len(x) > MAX_LABEL_CHARS:
            raise InputError(path, line, f"label {k[:40]!r}: names and values are 1..{MAX_LABEL_CHARS} characters")
        out[k] = x
    return json.dumps(out, sort_keys=True, ensure_ascii=False)


def spec_metrics(response: dict) -> dict | None:
    """The response's ``metrics.speculative_decoding`` object, or None when the response carries none."""
    metrics = response.get("metrics")
    spec = metrics.get("speculative_decoding") if isinstance(metrics, dict) else None
    return spec if isinstance(spec, dict) else None


def _check_spec(spec: dict, path: Path, line: int) -> None:
    """vLLM's invariants (RequestSpecDecodeMetrics.to_dict): numbers that break them are not vLLM's."""
    missing = [k for k in SPEC_KEYS if k not in spec]
    if missing:
        raise InputError(path, line, f"metrics.speculative_decoding lacks {', '.join(missing)} (vLLM 0.32 shape)")
    hist, k = spec["acceptance_histogram"], spec["num_spec_tokens"]
    steps, drafted, accepted = spec["num_spec_steps"], spec["num_draft_tokens"], spec["num_accepted_draft_tokens"]
    if not all(_count(x) for x in (k, steps, drafted, accepted)):
        raise InputError(path, line, "metrics.speculative_decoding counts must be whole numbers ≥ 0")
    if not 1 <= k <= 64:
        raise InputError(path, line, f"num_spec_tokens {k} is not a speculation depth (1..64)")
    if not isinstance(hist, list) or len(hist) != k + 1 or not all(_count(x) for x in hist):
        raise InputError(path, line, f"acceptance_histogram must be {k + 1} whole numbers ≥ 0 (num_spec_tokens + 1)")
    if sum(hist) != steps:
        raise InputError(path, line, f"acceptance_histogram sums to {sum(hist)}, num_spec_steps is {steps}")
    if sum(j * h for j, h in enumerate(hist)) != accepted:
        raise InputError(path, line, f"acceptance_histogram gives {sum(j * h for j, h in enumerate(hist))} "
                                     f"accepted tokens, num_accepted_draft_tokens is {accepted}")
    if accepted > drafted or drafted > steps * k:
        raise InputError(path, line, f"{accepted} accepted of {drafted} drafted in {steps} steps of at most {k}: "
                                     "impossible")


def _open(path: Path) -> IO[bytes]:
    gz = head_bytes(path, 2) == GZIP_MAGIC
    return gzip.open(path, "rb") if gz else path.open("rb")


def _lines(path: Path, limit: int, sha: Any) -> Any:
    """(line number, text) of every line; bytes counted after decompression, so a gzip bomb stops at the cap."""
    total = 0
    with _open(path) as fh:
        n = 0
        while True:
            try:
                raw = fh.readline(MAX_LINE_BYTES + 1)
            except (OSError, EOFError, gzip.BadGzipFile) as exc:
                raise InputError(path, n + 1, f"cannot read the compressed file ({exc})") from None
            if not raw:
                return
            n += 1
            total += len(raw)
            sha.update(raw)
            if total > limit:
                value, source = caps.resolve(caps.IMPORT_CAP)
                raise InputError(path, n, f"more than the {value:,}-byte {caps.IMPORT_CAP.what} ({source}) of log; "
                                          f"raise it with {caps.IMPORT_CAP.flag} SIZE or ${caps.IMPORT_CAP.env}")
            if len(raw) > MAX_LINE_BYTES:
                raise InputError(path, n, f"line longer than {MAX_LINE_BYTES:,} bytes")
            if b"\x00" in raw:
                raise InputError(path, n, "NUL bytes: the file is padded or damaged here (e.g. a crash while "
                                          "writing); cut the file before this line")
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError(path, n, "not UTF-8 text") from None
            yield n, text.removeprefix("\ufeff") if n == 1 else text


def _row(obj: Any, path: Path, line: int) -> tuple[datetime, str, dict] | str:
    """(time, labels JSON, response) of a line, or the reason it is skipped."""
    if not isinstance(obj, dict):
        raise InputError(path, line, "expected one JSON object per line ({\"ts\": …, \"labels\": {…}, "
                                     "\"response\": {…}})")
    labels = _labels(obj.get("labels"), path, line)
    resp = obj.get("response")
    if isinstance(resp, str):  # some gateways log the body as text
        try:
            resp = json.loads(resp)
        except (ValueError, RecursionError):
            raise InputError(path, line, "'response' is text that is not JSON") from None
    if resp is None:
        raise InputError(path, line, "'response' is missing: log the response object vLLM returned")
    if not isinstance(resp, dict):
        raise InputError(path, line, "'response' must be the JSON object vLLM returned")
    if resp.get("error") is not None or resp.get("object") == "error":
        return "error response"
    # the gateway's time of the request; else the response's ``created`` (vLLM's unix seconds)
    ts = _time(obj.get("ts", obj.get("timestamp", resp.get("created"))), path, line)
    return ts, labels, resp


def read(path: Path) -> RequestLog:
    """Read and check a whole request log (plain or gzip); nothing is written."""
    limit = caps.limit(caps.IMPORT_CAP)  # bytes read (after gzip), not the file's size
    regular_file_size(path, 1 << 62)  # a FIFO, device or folder is refused before a read; the cap is on bytes read
    sha = hashlib.sha256()
    log = RequestLog(path=path, file_hash="")
    seen_labels: set[str] = set()
    for n, text in _lines(path, limit, sha):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except RecursionError:
            raise InputError(path, n, "JSON nested too deeply") from None
        except ValueError as exc:
            cut = " (the line is cut short: a truncated file?)" if not text.endswith("\n") else ""
            raise InputError(path, n, f"not JSON: {exc}{cut}") from None
        got = _row(obj, path, n)
        if isinstance(got, str):
            log.skipped += 1
            log.skipped_why[got] = log.skipped_why.get(got, 0) + 1
            continue
        ts, labels, resp = got
        spec = spec_metrics(resp)
        if spec is None:
            why = "no metrics.speculative_decoding"
            log.skipped += 1
            log.skipped_why[why] = log.skipped_why.get(why, 0) + 1
            continue
        _check_spec(spec, path, n)
        usage = resp.get("usage") if isinstance(resp.get("usage"), dict) else {}
        model = resp.get("model")
        if labels not in seen_labels:  # label sets repeat: parse each distinct one once
            seen_labels.add(labels)
            log.label_names.update(json.loads(labels))
        log.add({"line": n, "ts": ts, "labels": labels, "model": model if isinstance(model, str) else None,
                 "depth": spec["num_spec_tokens"],
                 "prompt_tokens": usage.get("prompt_tokens") if _count(usage.get("prompt_tokens")) else None,
                 "completion_tokens": usage.get("completion_tokens") if _count(usage.get("completion_tokens"))
                 else None,
                 "spec_steps": spec["num_spec_steps"], "draft_tokens": spec["num_draft_tokens"],
                 "accepted_tokens": spec["num_accepted_draft_tokens"],
                 "acceptance_histogram": list(spec["acceptance_histogram"])})
    log.file_hash = sha.hexdigest()
    if not log.rows:
        why = "; ".join(f"{n} {w}" for w, n in log.skipped_why.items()) or "no lines"
        raise InputError(path, 0, f"no request with per-request spec-decode metrics ({why}): start vLLM with "
                                  "--per-request-spec-decode-metrics summary and log each response whole")
    return log

