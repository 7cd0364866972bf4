"""The report's summary as data: the question, one answer per group or shard, and what is simulated and what
measured. Renderers lay it out; they never decide what it says."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Answer:
    """The recommendation for one group (GPU · family · workload) or one shard of a trace."""

    group: str
    candidate: str  # ``dflash·5``, or ``none`` for no speculation
    gain: str  # the gain in words, with its 95 % interval when there is one
    confidence: str  # clear winner / tie, in words
    command: str  # the whole deploy command, never shortened
    notes: tuple[str, ...] = ()  # drafter to supply, edge of the depth grid, predicted-only …


@dataclass(frozen=True)
class Summary:
    """Page 1 of a report."""

    question: str
    answers: tuple[Answer, ...]
    sources: tuple[str, ...]  # what is simulated, what measured, imported or modelled
    warnings: tuple[str, ...] = field(default_factory=tuple)


def signed_pct(x: float) -> str:
    """``+29.4 %`` / ``−3.1 %`` (a real minus sign)."""
    return f"{x:+.1f} %".replace("-", "−")


def interval_text(ci: list | tuple | None) -> str:
    """`` (95 % interval −48.8 % to +72.6 %)``, or nothing when the interval is unknown."""
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f" (95 % interval {signed_pct(ci[0])} to {signed_pct(ci[1])})"


def candidate(method: str, depth: int | None, label: str | None = None) -> str:
    """A candidate in the one notation: ``dflash·5``; ``none`` alone; a depth schedule keeps its ranges
    (``dspark·1-4→8,5-64→4``)."""
    if method == "none":
        return "none"
    if label and "→" in label:
        return f"{method}·{label.split(':', 1)[-1]}"
    return f"{method}·{depth}"


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def shell_lines(command: str, width: int) -> list[str]:
    """``command`` cut into lines of at most ``width`` characters at the spaces between shell words (never
    inside a quoted word), each line but the last ending in `` \\`` so the lines paste back into one command;
    a word longer than ``width`` keeps a line of its own, whole."""
    words, cur, quote = [], "", ""
    for ch in command:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == " ":
            if cur:
                words.append(cur)
            cur = ""
            continue
        cur += ch
    if cur:
        words.append(cur)
    lines: list[str] = []
    for w in words:
        if lines and len(lines[-1]) + 1 + len(w) + 2 <= width:
            lines[-1] += " " + w
        else:
            lines.append(w)
    return [ln + " \\" for ln in lines[:-1]] + lines[-1:]


def joined(lines: list[str]) -> str:
    """The one command that :func:`shell_lines` cut (what a shell reads from the pasted lines)."""
    return " ".join(ln.removesuffix(" \\") for ln in lines)
