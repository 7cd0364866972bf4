"""The progress display's ETA: the run's own average pace, shown from the first finished cell on (rich's
remaining-time column averages the last 30 s only, so with minute-long cells it never showed a time)."""

from __future__ import annotations

import pytest
from rich.progress import Progress

from runner.progress import RunEtaColumn, eta_seconds, progress_display


def test_eta_is_the_average_pace_so_far_counting_down_between_cells() -> None:
    assert eta_seconds(None, 100.0, 0, 4) is None and eta_seconds(5.0, 5.0, 1, None) is None
    assert eta_seconds(300.0, 300.0, 1, 4) == 900.0
    assert eta_seconds(300.0, 360.0, 1, 4) == 840.0  # a minute later, no new cell: a minute less, not more
    assert eta_seconds(300.0, 1500.0, 1, 4) == 0.0
    assert eta_seconds(300.0, 300.0, 4, 4) == 0.0


def test_the_display_shows_a_time_after_one_slow_cell_and_counts_down(monkeypatch: pytest.MonkeyPatch) -> None:
    from runner import progress as progress_mod

    now = [0.0]
    made: list[Progress] = []
    real = progress_mod.Progress

    def clocked(*columns: object, **kw: object) -> Progress:
        bar = real(*columns, get_time=lambda: now[0], auto_refresh=False, **kw)  # type: ignore[arg-type]
        made.append(bar)
        return bar

    monkeypatch.setattr(progress_mod, "Progress", clocked)
    column = RunEtaColumn()
    with progress_display(quiet=False) as update:
        assert update is not None
        update("TinyLlama/none@cpu", 0, 3)
        task = made[0].tasks[0]
        assert column.render(task).plain == "ETA -:--:--"
        now[0] = 240.0  # a server start and one cell: four minutes, far beyond rich's 30 s speed window
        update("TinyLlama/none@cpu", 1, 3)
        assert column.render(task).plain == "ETA 0:08:00"
        now[0] = 300.0
        update("TinyLlama/ngram:3@cpu: starting server", None, None)  # a status note leaves the counts
        assert column.render(task).plain == "ETA 0:07:00"
        now[0] = 600.0
        update("TinyLlama/ngram:3@cpu", 3, 3)
        assert column.render(task).plain == "ETA 0:00:00"
