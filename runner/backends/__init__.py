"""Backends by kind: ``sim`` (the calibrated simulator) and ``vllm`` (real servers). Selected by name."""

from __future__ import annotations

from collections.abc import Callable

from runner.backends.base import Backend
from runner.backends.sim import SimBackend
from runner.backends.vllm import VllmBackend

BACKENDS: dict[str, Callable[[], Backend]] = {"sim": SimBackend, "vllm": VllmBackend}


def get_backend(kind: str) -> Backend:
    try:
        return BACKENDS[kind]()
    except KeyError:
        raise ValueError(f"unknown backend {kind!r} (expected one of {', '.join(BACKENDS)})") from None
