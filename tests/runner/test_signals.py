"""SIGTERM/SIGHUP inside the runner unwind like Ctrl-C. The case a process test cannot hit on demand: the
signal arriving while a request task is executing (on a busy two-core host, during a real vLLM load) must
stop the load from the event loop, not kill that task with a stray exception and a logged traceback."""

from __future__ import annotations

import asyncio
import gc
import logging
import os
import signal
import time

import pytest

from runner.signals import Terminated, stop_on_terminate


def test_sigterm_while_a_task_runs_stops_the_loop_cleanly(caplog: pytest.LogCaptureFixture) -> None:
    cancelled: list[str] = []

    async def request() -> None:  # stands in for an aiohttp writer task, busy when the signal lands
        os.kill(os.getpid(), signal.SIGTERM)
        deadline = time.monotonic() + 0.2
        while time.monotonic() < deadline:  # the handler runs between these bytecodes, inside this task
            pass
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append("request")
            raise

    async def load() -> None:
        await asyncio.gather(request(), asyncio.sleep(30))

    caplog.set_level(logging.ERROR, logger="asyncio")
    before = signal.getsignal(signal.SIGTERM)  # SIG_DFL, or Ray's when an earlier test started Ray here
    t0 = time.monotonic()
    with stop_on_terminate(), pytest.raises(Terminated) as info:
        asyncio.run(load())
    gc.collect()
    assert info.value.signum == signal.SIGTERM and time.monotonic() - t0 < 5
    assert cancelled == ["request"], "the request was cancelled by asyncio.run, not killed by the signal"
    assert "never retrieved" not in caplog.text
    assert signal.getsignal(signal.SIGTERM) is before  # restored


def test_sigterm_outside_a_loop_raises_at_once() -> None:
    with stop_on_terminate(), pytest.raises(Terminated) as info:
        os.kill(os.getpid(), signal.SIGHUP)
        time.sleep(5)
    assert info.value.signum == signal.SIGHUP
