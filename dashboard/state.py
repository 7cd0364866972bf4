"""Filters ↔ URL: every filter of a page lives in ``st.query_params`` so a link reproduces the view.

A page declares its filters as :class:`Param` objects (URL key, kind, allowed values, default). On the
first run of a page in a session, each widget's state is seeded from the URL; a value that is not in
the allow-list (unknown option, unparsable number, out of range, too long, too many values) is dropped
for the default and named in one ``st.warning`` — never an exception, and never echoed raw (URL text is
hostile until validated). After the widgets ran, :func:`write_url` puts the current values back in the
URL (defaults are omitted, so links stay short). Options are compared as strings, so no URL text is ever
cast, evaluated or sent to SQL before it matched a known value.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import streamlit as st

from dashboard import md

MAX_RAW = 200  # longest URL value considered at all
MAX_VALUES = 64  # most repeated values of one key

Kind = Literal["one", "many", "int", "float", "range", "bool"]


@dataclass(frozen=True)
class Param:
    key: str  # URL key; the widget key is "<page>.<key>"
    kind: Kind
    default: Any
    options: tuple[Any, ...] = ()  # allowed values ("one", "many"; "range": allowed ints)
    lo: float | None = None  # bounds for "int" / "float"
    hi: float | None = None
    label: str = ""
    step: float | None = None  # "float": the number input's step
    format_func: Callable[[Any], str] = field(default=str, compare=False)


def widget_key(page: str, p: Param) -> str:
    return f"{page}.{p.key}"


def _match(raw: str, options: Sequence[Any]) -> Any:
    for o in options:
        if str(o) == raw:
            return o
    raise ValueError("not an allowed value")


def _number(raw: str, p: Param, cast: Callable[[str], Any]) -> Any:
    if not re.fullmatch(r"-?\d{1,12}(\.\d{1,9})?", raw):
        raise ValueError("not a number")
    v = cast(raw) if cast is float else int(float(raw))
    if cast is int and "." in raw:
        raise ValueError("not an integer")
    if (p.lo is not None and v < p.lo) or (p.hi is not None and v > p.hi):
        raise ValueError("out of range")
    return v


def parse(p: Param, raw: list[str]) -> Any:
    """The typed value of one parameter from its raw URL values; ValueError when it is not acceptable."""
    if not raw:
        return p.default
    if len(raw) > MAX_VALUES or any(len(r) > MAX_RAW for r in raw):
        raise ValueError("too long")
    if p.kind == "many":
        if raw == [""]:
            return []
        out = []
        for r in raw:
            v = _match(r, p.options)
            if v not in out:
                out.append(v)
        return out
    if len(raw) != 1:
        raise ValueError("expected one value")
    r = raw[0]
    if p.kind == "one":
        return _match(r, p.options)
    if p.kind == "int":
        return _number(r, p, int)
    if p.kind == "float":
        return _number(r, p, float)
    if p.kind == "bool":
        return _match(r, ("0", "1")) == "1"
    if p.kind == "range":
        m = re.fullmatch(r"(\d{1,3})-(\d{1,3})", r)
        if not m:
            raise ValueError("expected LOW-HIGH")
        lo, hi = _match(m.group(1), p.options), _match(m.group(2), p.options)
        if lo > hi:
            raise ValueError("low above high")
        return (lo, hi)
    raise ValueError(f"unknown kind {p.kind}")


def serialise(p: Param, value: Any) -> list[str] | None:
    """URL values for ``value``; None when it is the default (left out of the URL)."""
    if value == p.default or (p.kind == "many" and not value and not p.default):
        return None
    if p.kind == "many":
        return [str(v) for v in value]
    if p.kind == "range":
        return [f"{value[0]}-{value[1]}"]
    if p.kind == "bool":
        return ["1" if value else "0"]
    return [str(value)]


def _preview(raw: list[str]) -> str:
    """A short, inert rendering of a rejected URL value for the warning (letters, digits, a few marks)."""
    text = " ".join(raw)[:24]
    return re.sub(r"[^A-Za-z0-9 _.:-]", "?", text)


def seed(page: str, params: Sequence[Param]) -> list[str]:
    """Seed widget state from the URL for widgets not yet in this session; returns the problems found."""
    problems = []
    for p in params:
        key = widget_key(page, p)
        if key in st.session_state:
            continue
        raw = st.query_params.get_all(p.key)
        try:
            value = parse(p, raw)
        except ValueError as exc:
            problems.append(f"`{p.key}`: “{md.text(_preview(raw))}” ({md.text(exc)})")
            value = p.default
        if p.kind == "range":  # range-ness comes from the widget's `value` argument: hand it over there
            st.session_state[init_key(page, p)] = value
        else:
            st.session_state[key] = list(value) if isinstance(value, list) else value
    return problems


def init_key(page: str, p: Param) -> str:
    """Where a widget that must get its first value through its ``value`` argument finds it."""
    return f"_init.{page}.{p.key}"


def warn(problems: list[str]) -> None:
    if problems:
        st.warning("Some link parameters were not valid and were replaced by defaults: " + " · ".join(problems),
                   icon=":material/link_off:")


def values(page: str, params: Sequence[Param]) -> dict[str, Any]:
    return {p.key: st.session_state.get(widget_key(page, p), st.session_state.get(init_key(page, p), p.default))
            for p in params}


def write_url(page: str, params: Sequence[Param]) -> None:
    """Mirror the current widget values into the URL (only this page's keys; defaults removed)."""
    for p in params:
        ser = serialise(p, values(page, [p])[p.key])
        current = st.query_params.get_all(p.key)
        if ser is None:
            if p.key in st.query_params:
                del st.query_params[p.key]
        elif current != ser:
            st.query_params[p.key] = ser if len(ser) > 1 else ser[0]
