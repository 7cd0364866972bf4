"""Running ``python -m analysis|ingest|runner``: the three packages' ``__main__`` are aliases of the ``spectune``
command, and the alias itself lives in spectune (spectune/alias.py, over spectune/cli.py ALIASES).

Arrows point down (spectune → runner → analysis → ingest), so no module of those packages imports spectune: their
``__main__`` run spectune/alias.py as a script, with :mod:`runpy` (the standard library's "``python -m`` for a
module"), handing it the package and its words, and read back its exit code. Same process, same parsers, JSON and
exit codes as ``spectune``; ``sys.argv`` is left as it is (the store's lock holder names the command as typed).
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Sequence

SCRIPT = "spectune.alias"  # the module run as the alias (it reads PACKAGE and WORDS, leaves the exit code in `code`)


def run_alias(package: str, argv: Sequence[str] | None = None) -> int:
    """``python -m PACKAGE argv…`` (``argv`` None: this process's own words): spectune's commands of that package,
    as spectune runs them; argparse's own exits (``--help``, a usage error) leave as SystemExit, as before."""
    words = list(sys.argv[1:] if argv is None else argv)
    done = runpy.run_module(SCRIPT, init_globals={"PACKAGE": package, "WORDS": words}, run_name="__main__")
    return done["code"]
