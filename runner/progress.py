"""The runner's progress display: cells done/total, the current server config and an ETA (rich, on stderr)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
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
    with Progress(
        TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TextColumn("cells"),
        TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(), console=console, transient=False,
    ) as bar:
        task = bar.add_task("starting", total=None)

        def update(label: str, done: int, total: int) -> None:
            bar.update(task, description=label, completed=done, total=total)

        yield update
