"""Ending a command quietly when the reader of its output goes away (``… --json | head -c 600``).

A closed pipe is the reader's choice, not an error: the command stops writing and exits 0 with nothing on
stderr. The flush happens here, inside the handler, so Python's own flush at exit cannot raise the
``BrokenPipeError`` after the handler is gone ("Exception ignored in … stdout").
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable


def run_quietly(main: Callable[[], int]) -> int:
    """``main()``'s exit code; 0 when stdout's reader closed the pipe."""
    try:
        code = main()
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # Point stdout at /dev/null so the interpreter's final flush has nowhere to fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
