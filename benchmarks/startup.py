"""Start-up cost of the command line: fresh-process wall time of read-only commands next to ``python -c pass``.

Owns one measurement. Each command runs as a subprocess from the repo root (``python -m …``, the way users
and the test suite call it) on the built default store, alternating with the baseline ``python -c pass`` in
the same loop so both see the same machine load; wall time is end to end (interpreter start, imports, the
query, JSON on stdout), CPU time is the child's user + system time (``os.wait4``). Every call gets a new, empty
``XDG_CACHE_HOME`` (no cache folder of any kind can help). ``minus_baseline`` subtracts the interpreter's own
start from the same round. Targets (issue 29): ``spectune winners --json`` ≤ 0.35 s more than ``python -c pass``
(issue 13: ``--help`` ≤ 0.15 s wall).

``spectune_winners_json_s`` reads the answer the store keeps (analysis/derived.py, analysis/derived_read.py);
``spectune_winners_json_live_s`` is the baseline computed the same way in the same rounds: the same command on a
copy of the default store without its derived rows (so the answer is computed live). The two documents must be
byte-identical (checked; a difference fails the run).

``after_import`` measures the path a user takes after bringing results in: a fresh copy of the default store, ``python
-m ingest results SAMPLE --db COPY`` (which refreshes the store's derived data in its own process once the data
landed), then the first ``winners --json --db COPY`` — next to the same first call on a copy of that store without
its derived rows (computed live), in the same rounds. ``refresh_s`` is the refresh alone, in this process.

    python benchmarks/startup.py [--repeats 9] [--json] [--after-import]
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

# name → (python's arguments, target: s more than python -c pass, which store). ``default``: the default store
# with its derived data current; ``live``: a copy of it without derived rows, given as ``--db`` (the answer is then
# computed, by the same function, and not kept: only the default store keeps what winners computed).
COMMANDS: dict[str, tuple[list[str], float | None, str]] = {
    "python_c_pass_s": (["-c", "pass"], None, ""),
    "spectune_winners_json_s": (["-m", "spectune", "winners", "--json"], 0.35, "default"),
    "spectune_winners_json_live_s": (["-m", "spectune", "winners", "--json", "--db", "{live}"], None, "live"),
    "winners_json_s": (["-m", "analysis", "winners", "--json"], 0.35, "default"),
    "analysis_help_s": (["-m", "analysis", "--help"], None, ""),
    "spectune_help_s": (["-m", "spectune", "--help"], None, ""),
    "runner_help_s": (["-m", "runner", "--help"], None, ""),
}


def _run(args: list[str], env: dict[str, str], out_of: dict[str, bytes] | None = None) -> tuple[float, float]:
    """(wall s, child CPU s) of one ``python ARGS`` run, with a new, empty ``XDG_CACHE_HOME``; stdout must be
    non-empty and the exit 0 (kept in ``out_of[" ".join(args)]`` when given)."""
    with tempfile.TemporaryDirectory() as cache:
        return _run_in(args, {**env, "XDG_CACHE_HOME": cache}, out_of)


def _run_in(args: list[str], env: dict[str, str], out_of: dict[str, bytes] | None) -> tuple[float, float]:
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
    if out_of is not None:
        out_of[" ".join(args)] = out
    return wall, usage.ru_utime + usage.ru_stime


def measure(repeats: int = 9) -> dict:
    from analysis import derived
    from ingest import open_store, store

    open_store.connect(None, read_only=False).close()  # the default store exists: its one-time build is not timed
    derived.refresh_store(None)  # and its derived data is current (what any write leaves): not timed either
    where = machine()  # (its load average is the one at the start)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SPECTUNE_DB", None)
    samples: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in COMMANDS}
    outputs: dict[str, dict[str, bytes]] = {"default": {}, "live": {}}
    with tempfile.TemporaryDirectory() as tmp:
        live = str(derived.live_copy(store.default_db_path(), Path(tmp) / "live.duckdb"))
        argv = {name: [a.replace("{live}", live) for a in args] for name, (args, _t, _w) in COMMANDS.items()}
        for name in COMMANDS:  # warm the page cache and .pyc files
            _run(argv[name], env)
        for _ in range(repeats):
            for name, (_args, _t, which) in COMMANDS.items():
                wall, cpu = _run(argv[name], env, outputs.get(which))
                samples[name][0].append(wall)
                samples[name][1].append(cpu)
    (live_doc,) = outputs["live"].values()
    if any(doc != live_doc for doc in outputs["default"].values()):  # spectune's and analysis's winners --json
        raise RuntimeError("the kept winners document differs from the one computed live")
    base = statistics.median(samples["python_c_pass_s"][0])
    figures = {}
    for name, (args, target, which) in COMMANDS.items():
        wall, cpu = samples[name]
        about: dict = {"command": " ".join(["python", *args]), "store": which or None}
        if name != "python_c_pass_s":
            about["minus_baseline_s"] = round(statistics.median(wall) - base, 4)
            if target is not None:
                about["target_minus_baseline"] = f"<= {target:g}"
                about["meets_target"] = about["minus_baseline_s"] <= target
        figures[name] = figure(wall, cpu=cpu, **about)
    return {"benchmark": "startup", "machine": where, "figures": figures, "kept_equals_live": True,
            "load_avg_end": load_average()}


SAMPLE = REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json"


def after_import(repeats: int = 5) -> dict:
    """First ``winners --json`` after ``ingest results`` (derived data refreshed by the import), next to the same
    call computed live on the same store without its derived rows; and the refresh alone, in this process."""
    import shutil

    from analysis import derived
    from ingest import open_store, store

    default = store.default_db_path()
    open_store.connect(None, read_only=False).close()
    where = machine()
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("SPECTUNE_DB", None)
    names = ("python_c_pass_s", "import_s", "winners_json_after_import_s", "winners_json_after_import_live_s",
             "refresh_s")
    samples: dict[str, tuple[list[float], list[float]]] = {k: ([], []) for k in names}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeats + 1):  # round 0 warms the page cache and .pyc files; it is not kept
            db = Path(tmp) / f"store-{i}.duckdb"
            shutil.copy(default, db)
            outs: dict[str, bytes] = {}
            got = {"import_s": _run(["-m", "ingest", "results", str(SAMPLE), "--db", str(db), "--json"], env),
                   "winners_json_after_import_s": _run(["-m", "analysis", "winners", "--json", "--db", str(db)],
                                                       env, outs)}
            live = derived.live_copy(db, Path(tmp) / "live.duckdb")
            live_outs: dict[str, bytes] = {}
            got["winners_json_after_import_live_s"] = _run(["-m", "analysis", "winners", "--json", "--db", str(live)],
                                                           env, live_outs)
            if list(outs.values()) != list(live_outs.values()):
                raise RuntimeError("the kept winners document differs from the one computed live")
            got["python_c_pass_s"] = _run(["-c", "pass"], env)
            t0, c0 = time.perf_counter(), time.process_time()
            derived.refresh_store(live)  # the refresh an import runs after its data landed
            got["refresh_s"] = (time.perf_counter() - t0, time.process_time() - c0)
            db.unlink()
            live.unlink()
            if i:
                for name, value in got.items():
                    samples[name][0].append(value[0])
                    samples[name][1].append(value[1])
    base = statistics.median(samples["python_c_pass_s"][0])
    figures = {}
    for name in names:
        wall, cpu = samples[name]
        about: dict = {} if name in ("python_c_pass_s", "refresh_s") else {
            "minus_baseline_s": round(statistics.median(wall) - base, 4)}
        if name == "winners_json_after_import_s":
            about["target_minus_baseline"] = "<= 0.35"
            about["meets_target"] = about["minus_baseline_s"] <= 0.35
        figures[name] = figure(wall, cpu=cpu, **about)
    return {"benchmark": "startup_after_import", "machine": where, "sample": str(SAMPLE.relative_to(REPO)),
            "figures": figures, "kept_equals_live": True, "load_avg_end": load_average()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--json", action="store_true", help="print one JSON document")
    ap.add_argument("--after-import", action="store_true",
                    help="the first winners call after an import, next to the same answer computed live")
    args = ap.parse_args(argv)
    res = after_import(min(args.repeats, 5)) if args.after_import else measure(args.repeats)
    if args.json:
        print(json.dumps(res, indent=2))
    else:
        for name, f in res["figures"].items():
            extra = f"  +{f['minus_baseline_s']:.3f} s over pass" if "minus_baseline_s" in f else ""
            print(f"{name:<34} {f['median']:.3f} s [{f['min']:.3f}, {f['max']:.3f}] cpu {f['cpu_s_median']:.3f} s"
                  f"{extra} {f.get('target_minus_baseline', '')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
