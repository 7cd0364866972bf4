"""Page rerun of two checkouts in one session (issue 16: before/after of the dashboard's rerun on one machine).

Owns the A/B plan: for each round, each store and each change set, ``dashboard_bench.page_rerun`` of every
checkout in its own subprocess (its own ``dashboard/`` and ``benchmarks/`` on ``sys.path``), interleaved so the
shared machine's load falls on both alike; the load average before and after each run is recorded. A checkout
whose ``dashboard_bench`` predates the landing change set gets it set as its ``CHANGES`` (the same loop).

    python benchmarks/rerun_ab.py --checkout before=/tmp/base --checkout after=. --db big=/tmp/big.duckdb \
        [--db default=data/spectune.duckdb] [--rounds 2] [--out results/rerun-ab.json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import load_average, machine

_RUN = """
import json, os, sys
from pathlib import Path
sys.path.insert(0, os.getcwd())
from benchmarks import dashboard_bench as b
landing = {landing!r}
if {which!r} == "landing":
    b.CHANGES[:] = landing  # in place: an older checkout's page_rerun reads the module's list
print(json.dumps(b.page_rerun(Path({db!r}), 7)))
"""


def one(checkout: Path, db: Path, which: str) -> dict[str, Any]:
    from benchmarks.dashboard_bench import LANDING_CHANGES

    code = _RUN.format(landing=LANDING_CHANGES, which=which, db=str(db.resolve()))
    before = load_average()
    proc = subprocess.run([sys.executable, "-c", code], cwd=checkout, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "PYTHONPATH": str(checkout)})
    if proc.returncode != 0:
        raise RuntimeError(f"{checkout}: {proc.stderr[-1500:]}")
    return {**json.loads(proc.stdout.strip().splitlines()[-1]), "load_avg_start": before,
            "load_avg_end": load_average()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--checkout", action="append", required=True, help="NAME=DIR")
    ap.add_argument("--db", action="append", required=True, help="NAME=STORE")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    checkouts = dict(c.split("=", 1) for c in args.checkout)
    dbs = dict(d.split("=", 1) for d in args.db)
    runs = []
    for r in range(args.rounds):
        for db_name, db in dbs.items():
            for which in ("heatmap", "landing"):
                for name, checkout in checkouts.items():
                    res = one(Path(checkout), Path(db), which)
                    runs.append({"round": r, "checkout": name, "store": db_name, "changes": which, **res})
                    print(f"{name:8s} {db_name:8s} {which:8s} wall median {res['median']:.3f} s, "
                          f"CPU median {res['cpu_s_median']:.3f} s, load {res['load_avg_start'][0]}",
                          file=sys.stderr)
    doc = {"benchmark": "rerun_ab", "machine": machine(), "checkouts": checkouts, "stores": dbs, "runs": runs}
    text = json.dumps(doc, indent=1)
    if args.out:
        args.out.write_text(text + "\n")
    else:
        print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
