"""The runner's progress display: cells done/total, the current server config and an ETA (rich, on stderr)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from runner.execute import Progress as ProgressFn


@contextlib.contextmanager
def progress_display(*, quiet: bool) -> Iterator[ProgressFn | None]:
    if quiet:
        yield None
        return
    console = Console(stderr=True)
    bar = Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("cells"),
        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=False,
    )
    task: list[TaskID] = []  # started on the first update, so an early error stays one clean line

    def update(label: str, done: int | None, total: int | None) -> None:
        if not task:
            bar.start()
            task.append(bar.add_task(label, total=None))
        bar.update(task[0], description=label, completed=done, total=total)

    try:
        yield update
    finally:
        if task:
            bar.stop()
