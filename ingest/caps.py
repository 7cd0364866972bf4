"""File-size caps as settings: the largest file a reader opens, where that number came from, and how to change it.

Owns the two caps users meet on big data (issue 16):

* the **import cap** (``ingest results``: result files and spectune export tables): default 1 GiB, set by
  ``--max-file-bytes`` on the command, else ``$SPECTUNE_MAX_FILE_BYTES``;
* the **trace cap** (``analysis rescore``, ``ingest trace``): default 4 GiB (ingest.traces.limits), set by
  ``--max-trace-bytes``, else ``$SPECTUNE_MAX_TRACE_BYTES``. The dashboard's upload cap is its own
  (``$SPECTUNE_MAX_UPLOAD_MB``, .streamlit/config.toml's ``maxUploadSize``).

Sizes are bytes or a number with a unit (``512MiB``, ``2GB``, ``1.5GiB``). A file over a cap is refused
before a byte is read, with an error that names the cap's value, where it came from and both ways to
raise it. An export folder spectune writes splits any table larger than the import cap in force into
parts below it (``requests.part-00000.parquet`` …), so an export always imports back under the same cap.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from ingest.errors import UsageError

MiB = 1024 * 1024
GiB = 1024 * MiB
UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "kib": 1024, "m": 1000**2, "mb": 1000**2, "mib": MiB,
         "g": 1000**3, "gb": 1000**3, "gib": GiB, "t": 1000**4, "tb": 1000**4, "tib": 1024 * GiB}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


@dataclass(frozen=True, slots=True)
class Cap:
    """One size cap: its name in messages, the flag and environment variable that set it, the default."""

    what: str
    flag: str
    env: str
    default: int


IMPORT_CAP = Cap("import limit", "--max-file-bytes", "SPECTUNE_MAX_FILE_BYTES", 1 * GiB)
TRACE_CAP = Cap("trace size limit", "--max-trace-bytes", "SPECTUNE_MAX_TRACE_BYTES", 4 * GiB)
_FROM_FLAG: dict[str, int] = {}  # env name -> value given on this process's command line


def parse_size(text: str, where: str) -> int:
    """Bytes from ``"1073741824"`` / ``"512MiB"`` / ``"2GB"``; a UsageError naming ``where`` otherwise."""
    m = _SIZE.match(str(text))
    unit = m.group(2).lower() if m else ""
    if not m or unit not in UNITS:
        raise UsageError(f"{where}: expected a size in bytes, optionally with a unit (512MiB, 2GB), got {text!r}")
    value = int(float(m.group(1)) * UNITS[unit])
    if value < 1:
        raise UsageError(f"{where}: a size cap must be at least 1 byte, got {text!r}")
    return value


def set_from_flag(cap: Cap, text: str | None) -> None:
    """The command line's value for ``cap`` (None: not given), for this process."""
    if text is None:
        _FROM_FLAG.pop(cap.env, None)
    else:
        _FROM_FLAG[cap.env] = parse_size(text, cap.flag)


def resolve(cap: Cap) -> tuple[int, str]:
    """(bytes, where the value came from): the flag, else the environment, else the default."""
    if cap.env in _FROM_FLAG:
        return _FROM_FLAG[cap.env], cap.flag
    env = os.environ.get(cap.env, "").strip()
    if env:
        return parse_size(env, f"${cap.env}"), f"${cap.env}"
    return cap.default, "default"


def limit(cap: Cap) -> int:
    return resolve(cap)[0]


def over_message(cap: Cap) -> str:
    """The tail of a "file is N bytes, …" error: the cap, its source, how to raise it (no format fields)."""
    value, source = resolve(cap)
    return (f"over the {value}-byte {cap.what} ({source}); raise it with {cap.flag} SIZE or "
            f"${cap.env}").replace("{", "{{").replace("}", "}}")
