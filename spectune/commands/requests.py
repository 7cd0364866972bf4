"""``spectune requests FILE --target NAME`` — land a gateway's request log (per-request spec-decode metrics
with each request's labels) so acceptance splits by tenant, route or workload inside one deployment.

The file is read and checked whole (ingest/requestlog.py) before anything is written; bad input exits 2 with one
line and writes nothing. The same file twice is one log (``new: false``).

JSON (``--json``): log_id, target, path, requests, skipped, skipped_why, new, already_imported_for, labels
(label names seen), depths.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from analysis import derived
from ingest import caps, open_store, requestlog, store
from ingest.errors import UsageError

LABEL_CHARS = 200


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", type=Path, metavar="FILE", help="request log: JSONL (.gz ok), one request per line")
    p.add_argument("--target", required=True, help="the deployment the requests went to (e.g. its watch target)")
    p.add_argument("--family", default=None, help="model family the deployment serves (for the benchmark match)")
    p.add_argument("--method", default=None, help="speculative method it runs (ngram, eagle3, ...)")
    p.add_argument("--gpu", default=None, help="GPU it runs on")
    p.add_argument("--workload", default=None, help="workload of requests without a 'workload' label")
    p.add_argument("--max-file-bytes", default=None, metavar="SIZE",
                   help="most bytes read (after gzip), e.g. 2GiB (default $SPECTUNE_MAX_FILE_BYTES, else 1GiB)")


def _text(value: str | None, flag: str) -> str | None:
    if value is None:
        return None
    value = value.strip()
    if not value or len(value) > LABEL_CHARS or not value.isprintable():
        raise UsageError(f"{flag} must be 1..{LABEL_CHARS} printable characters")
    return value


def run(args: argparse.Namespace) -> int:
    return derived.after_landing(_land(args), args.db)  # what answers need, derived once the store was written


def _land(args: argparse.Namespace) -> int:
    caps.set_from_flag(caps.IMPORT_CAP, args.max_file_bytes)
    meta = {k: _text(getattr(args, k), f"--{k}") for k in ("target", "family", "method", "gpu", "workload")}
    log = requestlog.read(args.file)  # every line checked before any write
    rows = log.frame()
    with open_store.session(args.db) as con:
        seen = store.write_request_log(con, {"log_id": log.log_id, **meta, "source_path": str(args.file),
                                             "requests": len(log), "skipped": log.skipped}, rows)
    labels = sorted(log.label_names)
    doc = {"log_id": log.log_id, "target": meta["target"], "path": str(args.file), "requests": len(log),
           "skipped": log.skipped, "skipped_why": log.skipped_why, "new": seen is None,
           "already_imported_for": seen, "labels": labels, "depths": sorted(log.depths)}
    if log.skipped:
        why = ", ".join(f"{n} {w}" for w, n in log.skipped_why.items())
        print(f"warning: {args.file}: {log.skipped} line(s) skipped ({why})", file=sys.stderr)
    if args.json:
        print(json.dumps(doc))
    elif seen is not None:
        print(f"{args.file}: already imported (for target {seen}) as {log.log_id}")
    else:
        print(f"{args.file}: {len(log)} requests of {meta['target']} landed as {log.log_id}; labels: "
              f"{', '.join(labels) or 'none'}")
    return 0
