"""Peak RSS and wall of ``python -m ingest results FILE --json`` on a padded vLLM result: whole-file read vs stream.

Owns one measurement (issue 15). The input is the ``vllm bench serve`` sample (120 requests) written with
``--save-detailed``-style extras a real file carries and the importer ignores: a ``generated_texts`` array
(``--pad-mb`` MiB of answer text in 100 KB strings) and whitespace inside the document. The same command runs,
alternating in one loop so both see the same machine load, against

* ``old``: the importers as they were before the streaming reader (commit ``--old-commit``, exported with
  ``git archive`` into a temp folder: ``path.read_bytes()`` + ``json.JSONDecoder`` on the whole text), and
* ``new``: this checkout (``ingest/results/jsonstream.py``: ijson/yajl2_c in 1 MiB chunks, ignored values
  streamed past unbuilt).

Each run is a fresh process importing into its own new store; wall time is end to end (interpreter, imports,
parse, landing 120 requests, JSON on stdout) and peak RSS is the child's own ``VmHWM`` (read at exit). Both
must print the same cells.

    python benchmarks/results_padding.py [--pad-mb 256] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import REPO, figure, load_average, machine

SAMPLE = REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json"
OLD_COMMIT = "26635b7"  # the last commit before the streaming reader


def write_padded(path: Path, pad_bytes: int) -> None:
    doc = json.loads(SAMPLE.read_text())
    text = json.dumps(doc)
    text_share, space_share = pad_bytes * 3 // 4, pad_bytes // 4
    string = json.dumps("x" * 100_000)
    with path.open("w") as fh:
        fh.write("{" + " \n" * (space_share // 2) + text[1:-1])
        fh.write(', "generated_texts": [' + ",".join([string] * (text_share // (len(string) + 1))) + "]}\n")


# ``python -m ingest ARGS`` exactly (runpy), reporting the process's own peak RSS (VmHWM) on stderr at exit:
# ru_maxrss from wait4 would include this parent's peak, which Linux carries over across fork and exec.
_WRAPPER = ("import atexit, runpy, sys\n"
            "def hwm():\n"
            "    with open('/proc/self/status') as fh:\n"
            "        sys.stderr.write(next(l for l in fh if l.startswith('VmHWM')))\n"
            "atexit.register(hwm)\n"
            "sys.argv = ['ingest', *sys.argv[1:]]\n"
            "runpy.run_module('ingest', run_name='__main__', alter_sys=True)\n")


def _run(tree: Path, path: Path, db: Path) -> tuple[float, float, dict]:
    """(wall s, peak RSS MB, the JSON report) of one import run from ``tree``."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    with tempfile.TemporaryFile() as err_file:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", _WRAPPER, "results", str(path), "--db", str(db), "--json"],
                                cwd=tree, env=env, stdout=subprocess.PIPE, stderr=err_file)
        out = proc.stdout.read() if proc.stdout else b""
        _pid, status = os.waitpid(proc.pid, 0)
        wall = time.perf_counter() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            err_file.seek(0)
            raise SystemExit(f"{tree}: exit {os.waitstatus_to_exitcode(status)}: {err_file.read().decode()[-2000:]}")
        err_file.seek(0)
        rss = next(int(ln.split()[1]) for ln in err_file.read().decode().splitlines() if ln.startswith("VmHWM")) / 1024
    return wall, rss, json.loads(out)


def _cells(report: dict) -> list:
    """What both versions must agree on: each file's cells as reported (not paths, hashes or times)."""
    return [(f["format"], f["rows"], f["requests"], [{k: v for k, v in r.items() if k != "line"}
                                                     for r in f["summary"].get("results", [])])
            for f in report["files"]]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pad-mb", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--old-commit", default=OLD_COMMIT)
    ap.add_argument("--json", action="store_true", help="print the result document")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="spectune-bench-padding-"))
    try:
        old = work / "old"
        old.mkdir()
        archive = subprocess.run(["git", "archive", args.old_commit], cwd=REPO, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
        path = work / "bench.json"
        write_padded(path, args.pad_mb << 20)
        where = machine()  # (its load average is the one at the start)
        trees = {"old": old, "new": REPO}
        walls: dict[str, list[float]] = {k: [] for k in trees}
        rss: dict[str, list[float]] = {k: [] for k in trees}
        reports: dict[str, dict] = {}
        for i in range(args.repeats):
            for name, tree in trees.items():
                wall, peak, report = _run(tree, path, work / f"{name}-{i}.duckdb")
                walls[name].append(wall)
                rss[name].append(peak)
                reports[name] = report
        same = _cells(reports["old"]) == _cells(reports["new"])
        result = {
            "benchmark": "results_padding",
            "what": "python -m ingest results FILE --json on a vllm bench serve result (120 requests) padded with "
                    f"{args.pad_mb} MiB (3/4 generated_texts, 1/4 whitespace inside the document)",
            "file_bytes": path.stat().st_size,
            "old_commit": args.old_commit,
            "machine": where,
            "figures": {
                "old_wall_s": figure(walls["old"]), "new_wall_s": figure(walls["new"]),
                "old_peak_rss_mb": figure(rss["old"], unit="MB"),
                "new_peak_rss_mb": figure(rss["new"], unit="MB"),
            },
            "same_cells": same,
            "load_avg_end": load_average(),
        }
        if args.json:
            print(json.dumps(result, indent=1))
        else:
            for k, v in result["figures"].items():
                print(f"{k:18} {v['median']:>9} {v['unit']} (min {v['min']}, max {v['max']})")
            print(f"same cells: {same}; file {result['file_bytes']:,} bytes")
        if not same:
            raise SystemExit("old and new imports differ")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
