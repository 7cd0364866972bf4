"""The format registries of results and traces are one mechanism (ingest.formats): selected by kind, ``auto``
first, a new format one entry."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from ingest.formats import FormatRegistry
from ingest.results import registry as results_registry
from ingest.traces import registry as traces_registry


@dataclass(frozen=True)
class _Fmt:
    name: str
    description: str = ""


def test_both_registries_are_format_registries_with_auto_first() -> None:
    for reg, choices in ((results_registry.FORMATS, results_registry.FORMAT_CHOICES),
                         (traces_registry.FORMATS, traces_registry.FORMAT_CHOICES)):
        assert isinstance(reg, FormatRegistry)
        assert choices == ("auto", *reg) and reg.choices == choices


def test_a_new_format_is_one_entry() -> None:
    reg = FormatRegistry("test", [_Fmt("a")])
    reg.register(_Fmt("b"))
    assert reg.choices == ("auto", "a", "b") and reg["b"].name == "b"
    assert reg.expected() == "auto, a, b"


@pytest.mark.parametrize("name", ["a", "auto"])
def test_a_name_taken_twice_is_refused(name: str) -> None:
    reg = FormatRegistry("test", [_Fmt("a")])
    with pytest.raises(ValueError, match="registered twice"):
        reg.register(_Fmt(name))


def test_trace_name_hints_come_from_the_entries() -> None:
    assert set(traces_registry.NAME_HINTS) == {"azure", "mooncake"}
    assert traces_registry.NAME_HINTS["azure"]("AzureLLMInferenceTrace_code.csv") == "code"
