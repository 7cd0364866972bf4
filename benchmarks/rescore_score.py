"""Re-scoring without the read: ``rescore()`` in-process on a bucketed trace, the store's matrices loaded once.

What the scorer costs (analysis/rescore/score.py and core.py) with the trace read and the matrix load taken out,
next to the same measurement from an older source tree in the same run (``--before TREE``, e.g. ``git archive
REV | tar -x -C TREE``), each in a fresh subprocess of this script with that tree first on ``sys.path``. The
end-to-end CLI figures (start-up, read and load included) are ``benchmarks/rescore_read.py``'s.

    python benchmarks/rescore_score.py TRACE.parquet [--repeats 3] [--before TREE] [--db DB]

Prints one JSON document: CPU and wall seconds per repeat for each tree, and whether the documents are equal.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def measure(trace: str, repeats: int, db: str | None) -> dict:
    """In this process (the tree on ``sys.path``): bucket the trace, load the matrices, time ``rescore``."""
    import polars as pl

    from analysis.rescore import core
    from analysis.rescore.matrix import load_matrices
    from analysis.rescore.trace import bucketize
    from ingest import open_store

    frame = pl.read_parquet(trace)
    if frame.schema.get("timestamp") is not None and frame.schema["timestamp"].is_temporal():
        frame = frame.with_columns(pl.col("timestamp").dt.epoch("us").cast(pl.Float64).truediv(1e6)
                                   .alias("timestamp_s"))
    buckets = bucketize(frame)
    with open_store.connect(Path(db) if db else None, read_only=db is not None) as con:
        matrices = load_matrices(con)
        takes_matrices = "matrices" in inspect.signature(core.rescore).parameters
        cpu, wall, doc = [], [], None
        for _ in range(repeats):
            c0, w0 = time.process_time(), time.perf_counter()
            doc = (core.rescore(con, buckets, matrices=matrices) if takes_matrices
                   else _without_matrices(core, con, buckets, matrices))
            cpu.append(round(time.process_time() - c0, 4))
            wall.append(round(time.perf_counter() - w0, 4))
    return {"cpu_s": cpu, "wall_s": wall, "cpu_s_median": sorted(cpu)[len(cpu) // 2], "shards": len(buckets.shards),
            "document": doc}


def _without_matrices(core, con, buckets, matrices):  # an older tree: its rescore loads the matrices itself
    core.load_matrices = lambda *a, **k: matrices
    return core.rescore(con, buckets)


def _run(tree: Path, trace: str, repeats: int, db: str | None) -> dict:
    argv = [sys.executable, str(Path(__file__).resolve()), "--child", trace, "--repeats", str(repeats)]
    if db:
        argv += ["--db", db]
    res = subprocess.run(argv, cwd=tree, capture_output=True, text=True, timeout=3600,
                         env={**os.environ, "PYTHONPATH": str(tree)})
    if res.returncode != 0:
        raise RuntimeError(f"{tree}: exited {res.returncode}: {res.stderr[-800:]}")
    return json.loads(res.stdout)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--before", type=Path, default=None, metavar="TREE")
    ap.add_argument("--db", default=None)
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        sys.path.insert(0, os.getcwd())
        print(json.dumps(measure(args.trace, args.repeats, args.db)))
        return 0
    out: dict = {"trace": args.trace, "load_average": list(os.getloadavg())}
    now = _run(REPO, args.trace, args.repeats, args.db)
    out["after"] = {k: v for k, v in now.items() if k != "document"}
    if args.before is not None:
        old = _run(args.before, args.trace, args.repeats, args.db)
        out["before"] = {k: v for k, v in old.items() if k != "document"}
        out["documents_identical"] = old["document"] == now["document"]
        out["cpu_ratio"] = round(old["cpu_s_median"] / now["cpu_s_median"], 2)
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
