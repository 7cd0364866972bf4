"""The ``python -m analysis|ingest|runner`` aliases' one body: :func:`spectune.cli.alias_main` over the package's
commands (spectune/cli.py ALIASES).

Run as a script by ingest/alias.py (runpy, ``__name__ == "__main__"``) with the globals ``PACKAGE`` (analysis, ingest
or runner) and ``WORDS`` (its command line); the exit code is left in ``code``. That way the aliases' packages never
import spectune, and the arrow from them stays pointing down.
"""

from __future__ import annotations

from spectune.cli import alias_main

if __name__ == "__main__":
    code = alias_main(globals()["PACKAGE"], globals()["WORDS"])
