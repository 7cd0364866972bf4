"""Run many CLI invocations in ONE Python process: ``python -m tests.reliability.cli_driver < cases.json``.

Input (stdin): a JSON list of argv lists, each starting with the module (``["ingest", "trace", FILE, ...]``).
For each, the module's real ``__main__.main(argv)`` runs exactly as ``python -m module`` would run it
(argparse, error printing, exit code), with stdout and stderr captured; an exception that escapes
``main`` is recorded as a traceback with exit code 1 — what the interpreter would print and return.
Output (stdout): a JSON list of {"code", "stdout", "stderr"}. Importing once makes a sweep of hundreds
of bad files take seconds instead of minutes; a sample still runs as real ``python -m`` subprocesses.
"""

from __future__ import annotations

import contextlib
import importlib
import io
import json
import sys
import traceback


def run_one(argv: list[str]) -> dict[str, object]:
    module, *args = argv
    main = importlib.import_module(f"{module}.__main__").main
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:  # argparse errors, explicit exits
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        except BaseException:  # what `python -m` would print before exiting 1
            traceback.print_exc()
            code = 1
    return {"code": int(code or 0), "stdout": out.getvalue(), "stderr": err.getvalue()}


def main() -> None:
    cases = json.load(sys.stdin)
    results = [run_one(argv) for argv in cases]
    sys.stdout.write(json.dumps(results))


if __name__ == "__main__":
    main()
