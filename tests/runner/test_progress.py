"""The progress display's ETA: the run's own average pace, shown from the first finished cell on (rich's
remaining-time column averages the last 30 s only, so with minute-long cells it never showed a time)."""

from __future__ import annotations

from rich.progress import Progress

from runner.progress import RunEtaColumn, eta_seconds


def test_eta_is_the_average_pace_so_far() -> None:
    assert eta_seconds(None, 0, 4) is None and eta_seconds(100.0, 0, 4) is None and eta_seconds(5.0, 1, None) is None
    assert eta_seconds(300.0, 1, 4) == 900.0
    assert eta_seconds(300.0, 4, 4) == 0.0


def test_eta_column_shows_a_time_after_one_slow_cell() -> None:
    now = [0.0]
    column = RunEtaColumn()
    bar = Progress(column, get_time=lambda: now[0], auto_refresh=False)
    task_id = bar.add_task("TinyLlama/ngram:3@cpu", total=None)
    task = bar.tasks[0]
    assert column.render(task).plain == "ETA -:--:--"
    now[0] = 240.0  # a server start and one cell: four minutes, far beyond rich's 30 s speed window
    bar.update(task_id, completed=1, total=3)
    assert column.render(task).plain == "ETA 0:08:00"
    now[0] = 600.0
    bar.update(task_id, completed=3, total=3)
    assert column.render(task).plain == "ETA 0:00:00"
