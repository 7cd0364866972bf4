"""Summarise a mutmut run (scripts/mutation.sh): mutants per status and module, the kill rate, the survivors.

Usage: python3 scripts/mutation_report.py [--only GLOB...] -- MUTMUT_COMMAND...   (e.g. ``.venv-mutation/bin/mutmut``)
Killed = a test failed (or timed out, or crashed) on the mutant. Survived and "no tests" are not killed. Exit 1
when the kill rate is below ``--min`` percent (default 90).
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import subprocess
import sys
from collections import Counter, defaultdict

KILLED = {"killed", "timeout", "segfault", "caught by type check"}
NOT_KILLED = {"survived", "no tests", "suspicious"}


def parse(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        name, sep, status = line.strip().rpartition(": ")
        if sep and "__mutmut_" in name:
            out[name] = status.strip()
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--min", type=float, default=90.0)
    ap.add_argument("--only", nargs="*", default=[], help="mutant name globs to count (default: every mutant)")
    ap.add_argument("mutmut", nargs="+")
    args = ap.parse_args(argv)
    res = subprocess.run([*args.mutmut, "results", "--all", "true"], capture_output=True, text=True, check=True)
    status = parse(res.stdout)
    if args.only:
        status = {n: st for n, st in status.items() if any(fnmatch.fnmatchcase(n, g) for g in args.only)}
    by_module: dict[str, Counter] = defaultdict(Counter)
    for name, st in status.items():
        by_module[re.split(r"\.x[_ǁ]", name)[0]][st] += 1
    print(f"{'module':<28} {'mutants':>7} {'killed':>7} {'survived':>8} {'no tests':>8} {'rate':>7}")
    tot = Counter()
    for mod in sorted(by_module):
        c = by_module[mod]
        tot.update(c)
        judged = sum(v for k, v in c.items() if k in KILLED | NOT_KILLED)
        killed = sum(c[k] for k in KILLED)
        rate = f"{100 * killed / judged:.1f}%" if judged else "-"
        print(f"{mod:<28} {judged:>7} {killed:>7} {c['survived'] + c['suspicious']:>8} {c['no tests']:>8} {rate:>7}")
    judged = sum(v for k, v in tot.items() if k in KILLED | NOT_KILLED)
    killed = sum(tot[k] for k in KILLED)
    rate = 100 * killed / judged if judged else 0.0
    print(f"{'total':<28} {judged:>7} {killed:>7} {tot['survived'] + tot['suspicious']:>8} {tot['no tests']:>8} "
          f"{rate:>6.1f}%")
    other = {k: v for k, v in tot.items() if k not in KILLED | NOT_KILLED}
    if other:
        print("not judged:", ", ".join(f"{k} {v}" for k, v in sorted(other.items())))
    survivors = sorted(n for n, st in status.items() if st in NOT_KILLED)
    if survivors:
        print("\nsurvivors (`mutmut show NAME` for the diff):")
        for n in survivors:
            print(f"  {n}: {status[n]}")
    return 0 if rate >= args.min else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
