"""The runner's progress display: cells done/total, the current server config and an ETA (rich, on stderr).

The ETA is the run's own average pace up to its last finished cell (server starts included) times the
cells left, counting down until the next one finishes; shown from the first finished cell on. Rich's own
remaining-time column averages only the last 30 s of updates, so with cells that take minutes it never
showed anything.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import timedelta

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.text import Text

from runner.backends.base import Progress as ProgressFn


def eta_seconds(elapsed_at_done: float | None, elapsed_now: float | None, done: float,
                total: float | None) -> float | None:
    """Seconds left at the run's average pace up to its last finished cell, counting down since then;
    None before the first cell finished."""
    if elapsed_at_done is None or elapsed_now is None or total is None or done <= 0:
        return None
    return max(0.0, elapsed_at_done / done * (total - done) - (elapsed_now - elapsed_at_done))


class RunEtaColumn(ProgressColumn):
    """Reads ``done_at`` (the task's elapsed seconds when its count last went up) from the task's fields."""

    def render(self, task: Task) -> Text:
        left = eta_seconds(task.fields.get("done_at"), task.elapsed, task.completed, task.total)
        if left is None:
            return Text("ETA -:--:--", style="progress.remaining")
        return Text(f"ETA {timedelta(seconds=round(left))}", style="progress.remaining")


@contextlib.contextmanager
def progress_display(*, quiet: bool) -> Iterator[ProgressFn | None]:
    if quiet:
        yield None
        return
    console = Console(stderr=True)
    bar = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("cells"),
        TimeElapsedColumn(), RunEtaColumn(), console=console, transient=False,
    )
    task: list[TaskID] = []  # started on the first update, so an early error stays one clean line

    def update(label: str, done: int | None, total: int | None) -> None:
        if not task:
            bar.start()
            task.append(bar.add_task(label, total=None, done_at=None))
        current = bar.tasks[0]
        if done is not None and done > current.completed:
            bar.update(task[0], done_at=current.elapsed)
        bar.update(task[0], description=label, completed=done, total=total)

    try:
        yield update
    finally:
        if task:
            bar.stop()
