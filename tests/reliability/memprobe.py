"""Peak memory of one reader on one file, in a fresh process: ``python -m tests.reliability.memprobe KIND PATH``.

Prints one JSON line: the RSS high-water mark after imports (``base_mb``) and after reading (``peak_mb``),
and the outcome (``accepted`` with the rows kept, or ``refused`` with the error line). Linux ``ru_maxrss``
is the process's peak resident set, so a transient spike counts.
"""

from __future__ import annotations

import dataclasses
import json
import resource
import sys
from pathlib import Path


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    kind, path = sys.argv[1], Path(sys.argv[2])
    from ingest.cli.trace import read_assigned
    from ingest.errors import InputError
    from ingest.results import ReadOptions, read_file
    from ingest.traces import DEFAULT_LIMITS
    from runner.matrix import load_matrix

    upload_limits = dataclasses.replace(DEFAULT_LIMITS, max_decompressed_bytes=10 * 200 * 1024 * 1024)
    readers = {
        "trace": lambda: read_assigned(path, "auto", None, None, None)[0].frame.height,
        "upload": lambda: read_assigned(path, "auto", None, None, "upload", upload_limits)[0].frame.height,
        "results": lambda: sum(c.requests.height or 1 for c in read_file(path, "auto", ReadOptions()).cells),
        "matrix": lambda: len(load_matrix(path).cells()),
    }
    base = _peak_mb()
    try:
        outcome = {"accepted": readers[kind]()}
    except InputError as exc:
        outcome = {"refused": exc.one_line()}
    print(json.dumps({"base_mb": base, "peak_mb": _peak_mb(), **outcome}))


if __name__ == "__main__":
    main()
