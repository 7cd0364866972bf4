"""Answers computed when the store is written: the read-only call a user makes next replays instead of computing.

``winners`` is a function of the store (analysis/cli/answer_cache.py keys its answers on the store's bytes), so
its answer can be computed as soon as a write ends, the way bootstrap replicates and the goodput SLO grid are
computed at landing rather than on every read. The commands that write the store (``ingest results``,
``ingest trace``, ``runner run``) call :func:`precompute` once their write is closed; it runs
``python -m analysis.cli.precompute`` in a child process (ingest does not import analysis), which keeps the
answers of :data:`analysis.cli.precompute.ANSWERS` in the answer cache. A first ``winners --json`` after an
import then takes the replay's ~0.14 s instead of the computation's ~1.1 s; the import takes that second instead.

It is best effort: off with the answer cache (``SPECTUNE_CACHE=off``, as the test suite runs), silent, and a
failure or a timeout changes nothing (the next call computes its answer as without it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

TIMEOUT_S = 600.0
OFF_WORDS = frozenset({"off", "0", "no", "false"})


def enabled() -> bool:
    """The answer cache is on unless ``SPECTUNE_CACHE`` says off (its one setting, read here and by the cache)."""
    return os.environ.get("SPECTUNE_CACHE", "on").strip().lower() not in OFF_WORDS


def precompute_argv(db: Path | None) -> list[str]:
    return [sys.executable, "-m", "analysis.cli.precompute", *(["--db", str(db)] if db is not None else [])]


def precompute(db: Path | None) -> bool:
    """Compute and keep the first answers for the store just written; True when the child finished with exit 0."""
    if not enabled():
        return False
    import subprocess  # here, not at the top: the answer cache's replay imports this module for enabled()

    try:
        done = subprocess.run(precompute_argv(db), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, timeout=TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return done.returncode == 0
