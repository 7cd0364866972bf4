"""Bounded loopback soak of the dashboard: N concurrent sessions for D seconds, server memory at start and end.

    python tests/reliability/soak.py                      # 20 sessions × 120 s on the embedded default data
    python tests/reliability/soak.py --sessions 5 --duration 20 --json

It starts the real server (``streamlit run dashboard/app.py`` with the repo's config, on 127.0.0.1 and a free
port, against a store built in a temporary folder — never data/), then runs N virtual users over Streamlit's
own HTTP + websocket protocol (tests/reliability/stclient.py): each opens a session the way a browser does
(XSRF cookie, websocket), loads a random page with random filters in the URL (shared links, including some
invalid ones), reruns it a few times, closes it and starts over, until the time is up. Every run must finish
without an exception on the page. Server RSS (process and children, /proc) is sampled every 5 s. Everything
stops by itself: the duration, a per-run timeout, and the server's process group is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repo importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.reliability.stclient import Session, rss_mb, serve, xsrf_cookie

PAGES = ("", "explore", "tradeoffs", "gpus", "load", "traffic", "runs", "datasets")
METRICS = ("output_throughput", "p99_e2e_ms", "p99_tpot_ms", "p99_ttft_ms", "acceptance_rate", "acceptance_length")
FAMILIES = ("Gemma", "Qwen", "Kimi", "MiniMax")
WORKLOADS = ("code", "chat", "reasoning")
BAD = ("' OR 1=1 --", "1e999", "<script>x</script>", "A" * 300)
MAX_SESSIONS, MAX_DURATION_S = 64, 1800  # hard bounds: this is a loopback check, not a load generator


def random_query(rng: random.Random) -> str:
    parts = [f"metric={rng.choice(METRICS)}", f"conc={rng.choice((1, 16, 64))}"]
    if rng.random() < 0.5:
        parts.append(f"gpu={rng.choice(('MI300X', 'MI355X'))}")
    for fam in rng.sample(FAMILIES, rng.randint(0, 2)):
        parts.append(f"fam={fam}")
    if rng.random() < 0.3:
        parts.append(f"wl={rng.choice(WORKLOADS)}")
    if rng.random() < 0.1:  # a mangled shared link now and then
        from urllib.parse import quote

        parts.append(f"{rng.choice(('metric', 'fam', 'depth', 'conc'))}={quote(rng.choice(BAD))}")
    return "&".join(parts)


@dataclass
class Stats:
    runs: int = 0
    sessions: int = 0
    failures: list[str] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)


async def user(url: str, token: str, deadline: float, rng: random.Random, stats: Stats) -> None:
    while time.monotonic() < deadline:
        try:
            async with Session(url, token) as s:
                stats.sessions += 1
                page = rng.choice(PAGES)
                for _ in range(rng.randint(1, 3)):
                    if time.monotonic() >= deadline:
                        break
                    res = await s.run(random_query(rng), page, timeout_s=max(5.0, min(120.0, deadline + 60 -
                                                                                      time.monotonic())))
                    stats.runs += 1
                    stats.seconds.append(res.seconds)
                    if res.status != "FINISHED_SUCCESSFULLY" or res.exceptions:
                        stats.failures.append(f"{page or 'winners'}: {res.status} {res.exceptions[:1]}")
        except Exception as exc:  # a dropped connection counts as a failure, the soak goes on
            stats.failures.append(f"session: {type(exc).__name__}: {str(exc)[:200]}")
            await asyncio.sleep(0.5)


async def sample_rss(pid: int, deadline: float, out: list[tuple[float, float]], t0: float) -> None:
    while time.monotonic() < deadline:
        out.append((round(time.monotonic() - t0, 1), round(rss_mb(pid), 1)))
        await asyncio.sleep(5)


def soak(sessions: int, duration_s: float, db: Path | None = None, seed: int = 0) -> dict:
    sessions, duration_s = min(sessions, MAX_SESSIONS), min(duration_s, MAX_DURATION_S)
    with tempfile.TemporaryDirectory(prefix="spectune-soak-") as tmp:
        if db is None:
            from ingest.default_data import build_default_db

            db = Path(tmp) / "default.duckdb"
            build_default_db(db)
        with serve(db, Path(tmp) / "server.log") as (url, pid):
            token = xsrf_cookie(url)

            async def warm() -> None:  # first run pays for imports and caches: not part of the figures
                async with Session(url, token) as s:
                    await s.run("", "")

            asyncio.run(warm())
            rss_start = rss_mb(pid)
            stats, samples = Stats(), []
            t0 = time.monotonic()
            deadline = t0 + duration_s

            async def main() -> None:
                rng = random.Random(seed)
                users = [user(url, token, deadline, random.Random(rng.random()), stats) for _ in range(sessions)]
                await asyncio.gather(sample_rss(pid, deadline, samples, t0), *users)

            asyncio.run(main())
            elapsed = time.monotonic() - t0
            rss_end = rss_mb(pid)
            time.sleep(5)  # sessions closed: does memory come back down?
            rss_idle = rss_mb(pid)
    secs = sorted(stats.seconds) or [0.0]
    return {
        "sessions": sessions, "duration_s": round(elapsed, 1), "runs": stats.runs, "sessions_opened": stats.sessions,
        "failures": len(stats.failures), "failure_examples": stats.failures[:5],
        "rerun_s": {"p50": round(statistics.median(secs), 3), "p95": round(secs[int(0.95 * (len(secs) - 1))], 3),
                    "max": round(secs[-1], 3)},
        "runs_per_s": round(stats.runs / elapsed, 2) if elapsed else 0.0,
        "server_rss_mb": {"start": round(rss_start, 1), "end": round(rss_end, 1), "idle_after": round(rss_idle, 1),
                          "peak": round(max([rss_start, rss_end, *(r for _, r in samples)]), 1)},
        "rss_samples": samples,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=20)
    ap.add_argument("--duration", type=float, default=120.0, help="seconds")
    ap.add_argument("--db", type=Path, default=None, help="store to serve (default: embedded data, built in temp)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    res = soak(args.sessions, args.duration, args.db, args.seed)
    if args.json:
        print(json.dumps(res))
    else:
        r = res["server_rss_mb"]
        print(f"{res['sessions']} sessions × {res['duration_s']} s: {res['runs']} page runs in "
              f"{res['sessions_opened']} sessions ({res['runs_per_s']}/s), {res['failures']} failures; rerun "
              f"p50 {res['rerun_s']['p50']} s, p95 {res['rerun_s']['p95']} s, max {res['rerun_s']['max']} s; "
              f"server RSS {r['start']} → {r['end']} MB (peak {r['peak']}, {r['idle_after']} after sessions closed)")
    return 0 if res["failures"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
