"""The one mechanism behind the format registries of results and traces: formats selected by ``kind``.

Owns :class:`FormatRegistry`, a table of formats keyed by the name ``--format`` takes (GuideLLM style: a
registry selected by kind), with ``auto`` first among the choices. The result registry
(ingest.results.registry) and the trace registry (ingest.traces.registry) are two instances of it, so a new
format is one entry in one of them (or one :meth:`FormatRegistry.register` call) and shows up in the
command's choices, in detection's messages and in the docs tests without further wiring.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, TypeVar


class Named(Protocol):
    """What a registered format has at least: the name ``--format`` takes."""

    @property
    def name(self) -> str: ...


F = TypeVar("F", bound=Named)


class FormatRegistry(dict[str, F]):
    """Formats by name, in the order they were registered (the order help and detection list them)."""

    AUTO = "auto"

    def __init__(self, what: str, formats: Iterable[F] = ()) -> None:
        super().__init__()
        self.what = what  # "result" / "trace", for messages
        for fmt in formats:
            self.register(fmt)

    def register(self, fmt: F) -> F:
        """Add one format; a name registered twice is a programming error, not a silent replacement."""
        if fmt.name in self or fmt.name == self.AUTO:
            raise ValueError(f"{self.what} format {fmt.name!r} is registered twice")
        self[fmt.name] = fmt
        return fmt

    @property
    def choices(self) -> tuple[str, ...]:
        """What ``--format`` accepts: ``auto`` (detect), then every registered name."""
        return (self.AUTO, *self)

    def expected(self) -> str:
        """The choices as a message lists them."""
        return ", ".join(self.choices)
