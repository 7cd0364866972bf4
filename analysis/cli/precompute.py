"""``python -m analysis.cli.precompute [--db PATH]`` — the answers a user asks for first, computed and kept.

Run by the commands that write the store, once their write is closed (ingest/cli/answers.py). Each command line
of :data:`ANSWERS` goes through the analysis CLI's answer cache exactly as a user's call would (same argument
words, working directory and environment, so the same key), with its output discarded: the answer cache
(analysis/cli/answer_cache.py) keeps it, and the user's next identical call replays it. The answers share one
computation of the winners document (``--json`` and the table are two renderings of it). The store's unfiltered
re-scoring matrices are kept too (analysis/cli/matrix_cache.py), for the first ``rescore``. Nothing is printed;
the exit code is 0 when every answer was computed, 1 otherwise.
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path

from spectune.cli import build_parser
from spectune.commands import winners as cli
from spectune.commands import winners_live

# What the README gives first; ``--db PATH`` is appended as given to the writing command.
ANSWERS: tuple[tuple[str, ...], ...] = (("winners", "--json"), ("winners",))


def main(argv: list[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    db = words[words.index("--db"): words.index("--db") + 2] if "--db" in words else []
    from ingest.errors import InputError, UsageError

    document: list[dict] = []  # the one computed document, shared by every rendering

    codes = []
    for answer in ANSWERS:
        argv = [*answer, *db]
        args = build_parser("python -m analysis", chosen="winners").parse_args(argv)

        def run(args=args) -> int:
            if not document:
                res = winners_live.winners_answer(args)
                if isinstance(res, int):
                    return res
                document.append(res)
            return winners_live.print_winners(args, document[0])

        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                codes.append(cli.cached_run(argv, args, run))
            except (InputError, UsageError, ValueError):
                codes.append(2)
    codes.append(_matrices(Path(db[1]) if db else None))
    return 0 if all(code == 0 for code in codes) else 1


def _matrices(db: Path | None) -> int:
    """Keep the store's unfiltered re-scoring matrices (analysis/cli/matrix_cache.py) — what ``rescore`` without
    ``--family``/``--gpu`` reads first."""
    import duckdb

    from analysis.cli.matrix_cache import cached_matrices
    from analysis.rescore.matrix import load_matrices
    from ingest import store
    from ingest.paths import default_db_path

    path = db if db is not None else default_db_path()
    if not path.exists():  # nothing was written (and opening would create a store)
        return 1
    try:
        with store.session(path, read_only=True) as con:
            cached_matrices(path, (), (), lambda: load_matrices(con))
    except (OSError, ValueError, duckdb.Error):  # best effort, like the answers
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
