"""SIGTERM and SIGHUP during a run unwind like Ctrl-C, so every ``finally`` stops the servers the run started.

(A vLLM server runs in its own session: a runner that simply died would leave it holding the GPUs.)
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, turned into an interrupt so every ``finally`` stops its server (a vLLM server runs
    in its own session: a runner that simply died would leave it holding the GPUs)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def stop_on_terminate() -> Iterator[None]:
    fired: list[int] = []

    def handler(signum: int, _frame: object) -> None:
        if fired:  # the first one unwinds; a repeat must not cut the servers' shutdown short
            return
        fired.append(signum)
        # asyncio is imported by the load generator only (``--help`` and ``plan`` start faster without it); no
        # loop can be running before it is, and a signal handler should not import.
        asyncio = sys.modules.get("asyncio")
        try:
            if asyncio is None:
                raise RuntimeError("no event loop")
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise Terminated(signum) from None
        # Inside a load, raising here would land in whichever task runs (an aiohttp writer, say), which
        # then dies with "Task exception was never retrieved" and a traceback. Raise from a loop callback
        # instead, as asyncio does for Ctrl-C: the loop stops and asyncio.run cancels every request.

        def interrupt() -> None:
            raise Terminated(signum)

        loop.call_soon_threadsafe(interrupt)

    wanted = [signal.SIGTERM, signal.SIGHUP]
    try:
        previous = {s: signal.signal(s, handler) for s in wanted}
    except ValueError:  # not the main thread (e.g. called from a test harness): leave signals alone
        yield
        return
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)
