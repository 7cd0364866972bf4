"""The short soak: 5 concurrent loopback sessions for 20 s against the real server (the 2-minute, 20-session
run is ``python tests/reliability/soak.py``; its figures are in docs/reliability.md)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.reliability.soak import soak


@pytest.mark.slow
def test_short_soak_has_no_failures_and_bounded_memory(default_db: Path) -> None:
    res = soak(sessions=5, duration_s=20, db=default_db, seed=1)
    rss = res["server_rss_mb"]
    print(f"soak: {res['runs']} runs in {res['sessions_opened']} sessions, rerun p50 {res['rerun_s']['p50']} s, "
          f"RSS {rss['start']} → {rss['end']} MB (peak {rss['peak']})")
    assert res["failures"] == 0, res["failure_examples"]
    assert res["sessions_opened"] >= 5 and res["runs"] >= 10  # every virtual user got through pages
    assert rss["peak"] < 1500  # the DESIGN budget is 600 MB with 10 M rows; 1.5 GB flags a leak, not noise
    assert rss["end"] - rss["start"] < 400
