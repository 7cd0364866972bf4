"""Where a trace's workloads came from, the explicit workload selector, and the warnings both call for.

Owns the re-scoring side of workload assignment. A request's workload decides which measured cells score
it, so the answer must never depend silently on something the user did not choose. Azure and Mooncake
files carry no workload: their readers guess it from the *file name* (``…_code``, ``conversation_…``),
so the same bytes saved as ``prod.jsonl`` become ``unknown`` and are scored as the equal blend of the
store's workloads. Hence:

* the **selector** (``--workload W``; the page's *Workload* box) is the explicit assignment: it labels
  every request the file does not label itself — all of them in a format without a workload column, so
  it replaces the file-name guess — before the prompt classifier sees the rest;
* every result says **which source** labelled how many requests (:class:`WorkloadSource`: ``selector``,
  ``file name``, ``file`` column, ``stored`` (labelled when the trace was stored), ``classifier``,
  ``unknown``);
* a **warning** when the workload came from the file name, and when most requests are ``unknown``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import polars as pl

from ingest.classify import assign_workloads
from ingest.errors import UsageError
from ingest.traces.registry import NAME_HINTS

UNKNOWN = "unknown"
LABEL = re.compile(r"^\w[\w\-]{0,63}$")
MOSTLY_UNKNOWN = 0.5  # share of unknown requests above which the result is said to rest on a blend
SOURCES = ("selector", "file name", "file", "stored", "classifier", "unknown")


@dataclass(frozen=True, slots=True)
class WorkloadSource:
    """How many requests each source labelled, and the selector / file-name guess behind them."""

    counts: dict[str, int] = field(default_factory=dict)  # source → requests (SOURCES order)
    selector: str | None = None
    name: str = ""
    name_guess: str | None = None  # what the file name says (Azure/Mooncake), whether used or not

    @property
    def source(self) -> str:
        """The source that labelled the most requests (``unknown`` when none was labelled)."""
        labelled = {k: v for k, v in self.counts.items() if k != "unknown" and v > 0}
        return max(labelled, key=lambda k: (labelled[k], -SOURCES.index(k))) if labelled else "unknown"

    def assignment(self) -> dict[str, int]:
        """The older ``workload_assignment`` summary: labelled by the file, its name or the selector
        (``given``), by the prompt classifier, or not at all."""
        c = self.counts
        return {"given": c.get("file", 0) + c.get("file name", 0) + c.get("selector", 0),
                "classifier": c.get("classifier", 0), "unknown": c.get("unknown", 0)}

    def as_dict(self) -> dict:
        return {"source": self.source, "counts": dict(self.counts), "selector": self.selector,
                "name": self.name, "name_guess": self.name_guess}


def normalise_selector(selector: str | None) -> str | None:
    """``None``/empty/``auto`` → no selector; else the lower-case label. Raises UsageError on a bad label."""
    text = (selector or "").strip().lower()
    if text in ("", "auto", "as assigned"):
        return None
    if not LABEL.match(text):
        raise UsageError(f"--workload {selector!r}: expected a workload label such as code, chat or reasoning "
                         "(letters, digits, _ and -, at most 64 characters)")
    return text


def name_guess(fmt: str, name: str) -> str | None:
    """The workload the format's reader reads from a file name (None: the format has no such rule)."""
    hint = NAME_HINTS.get(fmt)
    return hint(name or "") if hint is not None else None


def _counts(**kw: int) -> dict[str, int]:
    return {k: int(kw.get(k.replace(" ", "_"), 0)) for k in SOURCES if kw.get(k.replace(" ", "_"), 0)}


def _select(frame: pl.DataFrame, fmt: str, selector: str | None) -> tuple[pl.DataFrame, int]:
    """The selector applied: every row in a name-guessed format, else the rows the file left unlabelled."""
    if selector is None:
        return frame, 0
    if fmt in NAME_HINTS:
        return frame.with_columns(pl.lit(selector, pl.String).alias("workload")), frame.height
    n = int(frame["workload"].null_count())
    return frame.with_columns(pl.col("workload").fill_null(selector)), n


def assign_file(frame: pl.DataFrame, fmt: str, name: str, selector: str | None
                ) -> tuple[pl.DataFrame, WorkloadSource]:
    """A trace just read (ingest.traces, with no per-file workload) → workloads assigned, and their sources.

    Order: the file's own column, then the selector, then the prompt classifier, else ``unknown``. In a
    format whose reader guesses from the name, the guess stands only without a selector."""
    selector = normalise_selector(selector)
    guess = name_guess(fmt, name)
    if fmt in NAME_HINTS:
        from_name = 0 if selector else int(frame["workload"].is_not_null().sum()) if guess else 0
        own = 0
    else:
        from_name, own = 0, int(frame["workload"].is_not_null().sum())
    frame, chosen = _select(frame, fmt, selector)
    frame, assigned = assign_workloads(frame)
    return frame, WorkloadSource(_counts(selector=chosen, file_name=from_name, file=own,
                                         classifier=assigned["classifier"], unknown=assigned["unknown"]),
                                 selector, name, guess)


def assign_stored(frame: pl.DataFrame, meta: dict, selector: str | None) -> tuple[pl.DataFrame, WorkloadSource]:
    """A stored trace (workloads labelled when it was stored) → the selector applied, and the sources.

    The store keeps counts, not a source per request: in a name-guessed format the labels are the file
    name's when they all equal its guess, else the choice made at storing time; elsewhere the stored
    counts split the file's labels from the classifier's."""
    selector = normalise_selector(selector)
    fmt, name = str(meta.get("format") or ""), str(meta.get("name") or "")
    guess = name_guess(fmt, name)
    frame, chosen = _select(frame, fmt, selector)
    labelled = int(frame["workload"].is_not_null().sum()) - chosen
    unknown = frame.height - chosen - labelled
    if fmt in NAME_HINTS:
        labels = set(frame["workload"].drop_nulls().unique().to_list()) if not selector else set()
        by_name = bool(guess) and labels == {guess}
        counts = _counts(selector=chosen, file_name=labelled if by_name else 0,
                         stored=0 if by_name else labelled, unknown=unknown)
    else:
        stored = meta.get("workload_assignment") or {}
        classifier = min(int(stored.get("classifier", 0) or 0), labelled)
        counts = _counts(selector=chosen, file=labelled - classifier, classifier=classifier, unknown=unknown)
    return frame, WorkloadSource(counts, selector, name, guess)


def warnings(source: dict | None, mix: dict[str, float], requests: int) -> list[str]:
    """The workload warnings of a result: labels guessed from the file name (``source``: a
    :meth:`WorkloadSource.as_dict`, None when the caller did not say), and mostly ``unknown`` (``mix``)."""
    out = []
    n_name = int(((source or {}).get("counts") or {}).get("file name", 0))
    if n_name:
        out.append(f"workload from the file name: {n_name:,} of {requests:,} requests are "
                   f"{source.get('name_guess')!r} only because the file is called {source.get('name')!r} (its "
                   "format carries no workload); the same content under another name would be scored "
                   "differently — choose the workload explicitly (--workload, or Workload on the page)")
    unknown = float(mix.get(UNKNOWN, 0.0))
    if unknown > MOSTLY_UNKNOWN:
        out.append(f"most requests have no workload: {unknown:.0%} are 'unknown' and are scored as the equal "
                   "blend of the store's workloads — choose the workload explicitly (--workload, or Workload "
                   "on the page) if you know it")
    return out
