"""Peak memory of one reader on one file, in a fresh process: ``python -m tests.reliability.memprobe KIND PATH …``.

Prints one JSON line: the RSS high-water mark after imports (``base_mb``) and after reading (``peak_mb``),
and the outcome (``accepted`` with the rows kept, or ``refused`` with the error line). ``VmHWM`` is the
process's peak resident set, so a transient spike counts. Kind ``result_cells`` reads a result file
or folder (``k=v`` are ``--set`` overrides) and reports ``accepted`` as :func:`result_cells` of it, so a
test can compare what a padded file imports with what the unpadded one does.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any


def _peak_mb() -> float:
    """This process's RSS high-water mark (``VmHWM``). Not ``ru_maxrss``: Linux carries that over from the
    parent across fork and exec, so a test process that had just written a big file would hide the probe's
    own peak under its own."""
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM:")) / 1024


def result_cells(path: Path, overrides: dict[str, str]) -> list[dict[str, Any]]:
    """Everything a result import keeps, per cell, as JSON-able values: key, window, status, headline,
    the per-request rows, the ITL samples and any table landed as given (not file hashes or line numbers,
    which padding changes)."""
    import hashlib

    from ingest.results import ReadOptions
    from ingest.results.registry import read_path

    out: list[dict[str, Any]] = []
    for parsed in read_path(path, "auto", ReadOptions(overrides=overrides)):
        for c in parsed.cells:
            itl = None if c.itl_ms is None else hashlib.sha256(c.itl_ms.tobytes()).hexdigest()
            out.append({"key": dataclasses.astuple(c.key), "window_s": c.window_s, "gpu_count": c.gpu_count,
                        "status": c.status, "error": c.error, "headline": repr(sorted(c.headline.items())),
                        "requests": repr(c.requests.to_dicts()), "itl_ms": itl})
        for name, table in sorted(parsed.extra.items()):
            out.append({"table": name, "rows": repr(table.drop("run_id", "line", strict=False).to_dicts())})
    return out


def main() -> None:
    kind, path = sys.argv[1], Path(sys.argv[2])
    from ingest.errors import InputError
    from ingest.results import ReadOptions, read_file
    from ingest.traces import DEFAULT_LIMITS
    from ingest.traces.assigned import read_assigned
    from runner.matrix import load_matrix

    upload_limits = dataclasses.replace(DEFAULT_LIMITS, max_decompressed_bytes=10 * 200 * 1024 * 1024)
    readers = {
        "trace": lambda: read_assigned(path, "auto", None, None, None)[0].frame.height,
        "upload": lambda: read_assigned(path, "auto", None, None, "upload", upload_limits)[0].frame.height,
        "results": lambda: sum(c.requests.height or 1 for c in read_file(path, "auto", ReadOptions()).cells),
        "matrix": lambda: len(load_matrix(path).cells()),
        "result_cells": lambda: result_cells(path, dict(a.split("=", 1) for a in sys.argv[3:])),
    }
    base = _peak_mb()
    try:
        outcome = {"accepted": readers[kind]()}
    except InputError as exc:
        outcome = {"refused": exc.one_line()}
    print(json.dumps({"base_mb": base, "peak_mb": _peak_mb(), **outcome}))


if __name__ == "__main__":
    main()
