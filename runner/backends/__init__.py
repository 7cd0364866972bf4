"""Backends by kind: ``sim`` (the calibrated simulator) and ``vllm`` (real servers). Selected by name."""

from __future__ import annotations

from collections.abc import Callable

from runner.backends.base import Backend
from runner.backends.sim import SimBackend
from runner.backends.vllm import VllmBackend

BACKENDS: dict[str, Callable[[], Backend]] = {"sim": SimBackend, "vllm": VllmBackend}


def get_backend(kind: str, world: int | None = None) -> Backend:
    """The backend ``kind``; ``world`` (sim only) measures that world (runner.backends.sim)."""
    if kind not in BACKENDS:
        raise ValueError(f"unknown backend {kind!r} (expected one of {', '.join(BACKENDS)})")
    if world is not None:
        if kind != "sim":
            raise ValueError(f"--world needs the sim backend, not {kind!r}")
        return SimBackend(world=world)
    return BACKENDS[kind]()
