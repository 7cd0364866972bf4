"""Start-up cost of the command line: fresh-process wall time of read-only commands next to ``python -c pass``.

Owns one measurement. Each command runs as a subprocess from the repo root (``python -m …``, the way users
and the test suite call it) on the built default store, alternating with the baseline ``python -c pass`` in
the same loop so both see the same machine load; wall time is end to end (interpreter start, imports, the
query, JSON on stdout), CPU time is the child's user + system time (``os.wait4``). Targets (issue 13):
``winners --json`` ≤ 0.3 s, ``--help`` ≤ 0.15 s wall. ``minus_baseline`` subtracts the interpreter's own
start from the same round.

``after_import`` measures the path a user takes after bringing results in: a fresh copy of the default store, ``python
-m ingest results SAMPLE --db COPY`` (which computes the first answers once the write is closed, ingest/cli/
answers.py), then the first ``winners --json --db COPY`` — next to the same import and first call with the answer
cache off (the import computes nothing, the call computes its answer), in the same rounds.

    python benchmarks/startup.py [--repeats 9] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import REPO, figure, load_average, machine

# name → (python's arguments, target wall s, environment for the answer cache). ``winners_json_s`` computes the
# answer (cache off); ``winners_json_cached_s`` replays it for the unchanged store (analysis/cli/answer_cache.py),
# the path a user's second and later calls take.
CACHE_OFF = {"SPECTUNE_CACHE": "off"}
CACHE_ON = {"SPECTUNE_CACHE": "on"}
COMMANDS: dict[str, tuple[list[str], float | None, dict[str, str]]] = {
    "python_c_pass_s": (["-c", "pass"], None, {}),
    "winners_json_s": (["-m", "analysis", "winners", "--json"], 0.3, CACHE_OFF),
    "winners_json_cached_s": (["-m", "analysis", "winners", "--json"], 0.3, CACHE_ON),
    "spectune_winners_json_s": (["-m", "spectune", "winners", "--json"], 0.3, CACHE_OFF),
    "analysis_help_s": (["-m", "analysis", "--help"], 0.15, {}),
    "spectune_help_s": (["-m", "spectune", "--help"], 0.15, {}),
    "runner_help_s": (["-m", "runner", "--help"], 0.15, {}),
}


def _run(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall s, child CPU s) of one ``python ARGS`` run; stdout must be non-empty and the exit 0."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, *args], cwd=REPO, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    out = proc.stdout.read() if proc.stdout else b""
    _pid, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0 or (args[0] == "-m" and not out):
        raise RuntimeError(f"python {' '.join(args)} failed")
    if "--json" in args:
        json.loads(out)
    return wall, usage.ru_utime + usage.ru_stime


def measure(repeats: int = 9) -> dict:
    from ingest import open_store

    open_store.connect(None, read_only=False).close()  # the default store exists: its one-time build is not timed
    where = machine()  # (its load average is the one at the start)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SPECTUNE_DB", None)
    samples: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in COMMANDS}
    with tempfile.TemporaryDirectory() as cache:
        env["SPECTUNE_CACHE_DIR"] = cache
        for args, _t, extra in COMMANDS.values():  # warm the page cache, .pyc files and the answer cache
            _run(args, {**env, **extra})
        for _ in range(repeats):
            for name, (args, _t, extra) in COMMANDS.items():
                wall, cpu = _run(args, {**env, **extra})
                samples[name][0].append(wall)
                samples[name][1].append(cpu)
    base = statistics.median(samples["python_c_pass_s"][0])
    figures = {}
    for name, (args, target, extra) in COMMANDS.items():
        wall, cpu = samples[name]
        about = {"command": " ".join([*(f"{k}={v}" for k, v in extra.items()), "python", *args])}
        if name != "python_c_pass_s":
            about["minus_baseline_s"] = round(statistics.median(wall) - base, 4)
        figures[name] = figure(wall, target=target, cpu=cpu, **about)
    return {"benchmark": "startup", "machine": where, "figures": figures, "load_avg_end": load_average()}


SAMPLE = REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json"


def after_import(repeats: int = 5) -> dict:
    """First ``winners --json`` after ``ingest results`` with and without the answers computed at the write."""
    import shutil

    from ingest import open_store, store

    default = store.default_db_path()
    open_store.connect(None, read_only=False).close()
    where = machine()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SPECTUNE_DB", None)
    names = ("python_c_pass_s", "import_precomputing_s", "winners_json_after_import_s",
             "import_cache_off_s", "winners_json_after_import_cache_off_s")
    samples: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in names}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats + 1):  # round 0 warms the page cache and .pyc files; it is not kept
            for mode, import_name, winners_name in (("on", "import_precomputing_s", "winners_json_after_import_s"),
                                                    ("off", "import_cache_off_s",
                                                     "winners_json_after_import_cache_off_s")):
                db = Path(tmp) / f"{mode}-{i}.duckdb"
                shutil.copy(default, db)
                run_env = {**env, "SPECTUNE_CACHE": mode, "SPECTUNE_CACHE_DIR": str(Path(tmp) / f"answers-{i}")}
                got = [_run(["-m", "ingest", "results", str(SAMPLE), "--db", str(db), "--json"], run_env),
                       _run(["-m", "analysis", "winners", "--json", "--db", str(db)], run_env)]
                base = _run(["-c", "pass"], env)
                db.unlink()
                if i:
                    for name, value in zip((import_name, winners_name, "python_c_pass_s"), (*got, base),
                                           strict=True):
                        samples[name][0].append(value[0])
                        samples[name][1].append(value[1])
    base = statistics.median(samples["python_c_pass_s"][0])
    figures = {}
    for name in names:
        wall, cpu = samples[name]
        about = {} if name == "python_c_pass_s" else {"minus_baseline_s": round(statistics.median(wall) - base, 4)}
        target = 0.3 if name.startswith("winners") else None
        figures[name] = figure(wall, target=target, cpu=cpu, **about)
    figures["python_c_pass_s"]["samples"] = len(samples["python_c_pass_s"][0])
    return {"benchmark": "startup_after_import", "machine": where, "sample": str(SAMPLE.relative_to(REPO)),
            "figures": figures, "load_avg_end": load_average()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    ap.add_argument("--after-import", action="store_true",
                    help="the first winners call after an import, with and without the answers computed at the write")
    args = ap.parse_args(argv)
    res = after_import(min(args.repeats, 5)) if args.after_import else measure(args.repeats)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        for name, f in res["figures"].items():
            print(f"{name:<26} {f['median']:.3f} s [{f['min']:.3f}, {f['max']:.3f}] cpu {f['cpu_s_median']:.3f} s "
                  f"{f.get('target', '')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
