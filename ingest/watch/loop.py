"""The ``ingest watch`` command's engine: scrape rounds on an interval, landing each round, until stopped.

A round scrapes every direct target and queries every Prometheus target concurrently; each target's
failure is a one-line warning (on stderr, and a ``watch_events`` row) and the others land. SIGTERM and
Ctrl-C stop the loop between rounds — a round in flight finishes (it is bounded by the targets'
timeouts) and lands, so no scraped sample is lost and nothing is half-written. ``--once`` runs one
round; ``--since/--until`` backfills Prometheus targets over a past range (direct targets have no past).
Config changes and relabels (a target's segment, method, depth, GPU or workload differing from its last
stored sample) are recorded as events so the Production page can annotate them.

Prometheus targets are read on the step grid: each live round re-reads the last
:data:`PROMETHEUS_LOOKBACK_STEPS` steps up to :data:`PROMETHEUS_SETTLE_S` ago, and a step already landed is
not sent again (the store's (target, ts) key is the backstop). What the watcher remembers between rounds
(labels, landed steps, warnings, each instance's series) is capped in bytes (:data:`STATE_BYTES` each).
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from ingest import open_store
from ingest.watch import land
from ingest.watch.bounded import ByteLRU, text_bytes
from ingest.watch.exposition import MAX_PAGE_LABEL_BYTES, MAX_SERIES_BYTES
from ingest.watch.prometheus import MAX_INSTANCE_CHARS, MAX_INSTANCES, PrometheusError, query_range
from ingest.watch.scrape import Scraper, missing_token, verify_for
from ingest.watch.targets import Target, WatchConfig

LABELS = ("segment", "family", "method", "depth", "gpu", "gpu_count", "workload")
PROMETHEUS_LOOKBACK_STEPS = 4  # a live round re-reads a few steps: Prometheus may have ingested late
# A live round leaves the newest steps to the next round: a scrape's samples carry its start time but are
# written when the scrape ends, and a round's queries run one after another on Prometheus' side, so a step
# younger than this could mix two scrapes of one server across queries.
PROMETHEUS_SETTLE_S = 2.0
# The watcher's own memory of what it has seen (labels per stored target, steps landed, warnings given,
# series each Prometheus instance exports) is capped in bytes, least recently used first: a page or a
# Prometheus that sends fresh labels or instances every poll must not grow a watch that runs for months.
# A forgotten entry costs at most a store read (labels), a repeated warning, or a re-poll that the store's
# (target, ts) key ignores. 4 MiB each holds ~8,000 entries: every target of a large fleet.
STATE_BYTES = 4 << 20


@dataclass(slots=True)
class TargetStatus:
    name: str
    kind: str
    ok_rounds: int = 0
    failed_rounds: int = 0
    samples: int = 0
    last_error: str | None = None


@dataclass(slots=True)
class WatchReport:
    rounds: int = 0
    added: dict[str, int] = field(default_factory=lambda: dict.fromkeys(land.TABLES, 0))
    targets: dict[str, TargetStatus] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    stopped_by: str | None = None

    def as_dict(self) -> dict:
        return {"rounds": self.rounds, "added": self.added, "stopped_by": self.stopped_by,
                "targets": [vars(s) if not hasattr(s, "__slots__") else {k: getattr(s, k) for k in s.__slots__}
                            for s in self.targets.values()],
                "warnings": self.warnings}


@dataclass(slots=True)
class WatchOptions:
    db: str | Path | None = None
    interval_s: float = 15.0
    once: bool = False
    since: float | None = None
    until: float | None = None
    max_rounds: int | None = None  # tests and benchmarks; None = until stopped
    quiet: bool = False


def _labels(t: Target, depth_seen: int | None) -> dict:
    d = {k: getattr(t, k) for k in LABELS}
    if d["depth"] is None and depth_seen:
        d["depth"] = depth_seen
    return d


class Watcher:
    def __init__(self, config: WatchConfig, opts: WatchOptions) -> None:
        self.config, self.opts = config, opts
        self.report = WatchReport(targets={t.name: TargetStatus(t.name, t.kind) for t in config.targets})
        self._stop = asyncio.Event()
        self._last_labels: ByteLRU[str, dict] = ByteLRU(STATE_BYTES, lambda k, v: text_bytes(k, v))
        self._prom_landed: ByteLRU[tuple[str, float], bool] = ByteLRU(STATE_BYTES, lambda k, v: text_bytes(k[0]))
        self._prom_series: dict[str, ByteLRU] = {}  # Prometheus target → instance → (process start, series)
        self._prom_last: dict[str, float] = {}  # Prometheus target → newest step read (one per configured target)
        self._warned: ByteLRU[str, bool] = ByteLRU(STATE_BYTES, lambda k, v: text_bytes(k))

    # ---- messages -------------------------------------------------------------------------------
    def warn(self, text: str, *, once_key: str | None = None) -> None:
        if once_key is not None:
            if once_key in self._warned:
                return
            self._warned.put(once_key, True)
        if len(self.report.warnings) < 1000:
            self.report.warnings.append(text)
        if not self.opts.quiet:
            print(f"warning: {text}", file=sys.stderr, flush=True)

    def _warn_refused(self, name: str, refused: list[tuple[str, str]]) -> None:
        """One warning per refused series for the watch's life (not one per round: a fleet scraped every 15 s
        would bury every other warning, and a lying value may change every scrape); the rest of the page was
        stored."""
        for series, why in refused:
            self.warn(f"target {name}: series {series} refused ({why}); its counter is not stored for this "
                      "sample, the rest of the page is", once_key=f"refused:{name}:{series}")

    def _warn_capped(self, name: str, capped: int) -> None:
        """One warning per scrape (these series may be fresh every page, so no per-series warning)."""
        if capped:
            self.warn(f"target {name}: {capped:,} series refused by the label caps ({MAX_PAGE_LABEL_BYTES >> 20} "
                      f"MiB a page, {MAX_SERIES_BYTES >> 10} kB a series); the counters they feed are not stored "
                      "for this sample")

    def stop(self, why: str) -> None:
        self.report.stopped_by = self.report.stopped_by or why
        self._stop.set()

    # ---- one round ------------------------------------------------------------------------------
    def _resolve(self, t: Target, sample) -> Target:
        """The target as stored: depth read from the server's per-position counters when the file has none."""
        seen = len(sample.per_pos) or None
        if t.depth is not None and seen is not None and t.method not in (None, "none") and seen != t.depth:
            self.warn(f"target {t.name}: configured depth {t.depth} but the server drafts {seen} positions; "
                      "storing what the server does", once_key=f"depth:{t.name}:{seen}")
            return _replace(t, depth=seen)
        if t.depth is None and seen is not None:
            return _replace(t, depth=seen)
        return t

    def _label_events(self, batch: land.Batch, target_id: str, t: Target, ts: float, con) -> None:
        now = _labels(t, None)
        before = self._last_labels.get(target_id)
        if before is None:
            row = land.last_sample(con, target_id)
            before = {k: row[k] for k in LABELS} if row else None
        if before is not None and before != now:
            changed = [k for k in LABELS if before.get(k) != now.get(k)]
            kind = "relabel" if set(changed) <= {"segment", "workload"} else "config_change"
            detail = "; ".join(f"{k} {before.get(k)!r} → {now.get(k)!r}" for k in changed)
            batch.events.append(land.Event(target_id, ts, kind, detail))
        self._last_labels.put(target_id, now)

    async def _prometheus(self, client: httpx.AsyncClient, t: Target, start: float, end: float,
                          step: float) -> tuple[Target, list[land.Row], str | None]:
        known = self._prom_series.setdefault(t.name, ByteLRU(STATE_BYTES, lambda k, v: text_bytes(k, v[1]) + 64))
        try:
            res = await query_range(client, t, start, end, step, known=known)
        except PrometheusError as exc:
            return t, [], str(exc)
        if res.dropped:
            self.warn(f"target {t.name}: {res.dropped} Prometheus step(s) dropped ({'; '.join(res.reasons)})")
        if res.refused_instances:
            self.warn(f"target {t.name}: {res.refused_instances} instance(s) refused (more than {MAX_INSTANCES} "
                      f"instances, or an instance label longer than {MAX_INSTANCE_CHARS} characters)")
        rows = []
        for inst, by_ts in res.samples.items():
            tid = f"{t.name}@{inst}" if inst else t.name
            if by_ts:
                self._prom_last[t.name] = max(self._prom_last.get(t.name, 0.0), *by_ts)
            for ts, s in by_ts.items():
                if (tid, ts) in self._prom_landed:  # a re-polled step already landed: nothing to add
                    continue
                rows.append(land.Row(tid, self._resolve(t, s), ts, s, source="prometheus"))
        return t, rows, None

    async def round(self, scraper: Scraper, prom_clients: dict[str, httpx.AsyncClient]) -> None:
        now = time.time()
        direct = [t for t in self.config.targets if t.kind == "metrics"]
        prom = [t for t in self.config.targets if t.kind == "prometheus"]
        backfill = self.opts.since is not None
        step = self.opts.interval_s
        for t in self.config.targets:
            why = missing_token(t)
            if why:
                self.warn(f"target {t.name}: {why}", once_key=f"token:{t.name}")
        tasks = []
        if not backfill:
            tasks.append(scraper.scrape(direct))
        for t in prom:
            if backfill:
                start, end = self.opts.since, self.opts.until if self.opts.until is not None else now
            else:  # the last few steps again (late ingest, or a step dropped as incomplete), none too young,
                # and back to the newest step read when rounds fell behind (a slow round, a store held by another)
                end = now - PROMETHEUS_SETTLE_S
                start = min(self._prom_last.get(t.name, end), end - PROMETHEUS_LOOKBACK_STEPS * step)
            key = repr(t.verify)
            if key not in prom_clients:
                prom_clients[key] = httpx.AsyncClient(verify=verify_for(t), trust_env=False, follow_redirects=False,
                                                      timeout=None)
            client = prom_clients[key]
            tasks.append(self._prometheus(client, t, start, end, step))
        results = await asyncio.gather(*tasks)
        batch = land.Batch()
        per_target: dict[str, list[land.Row]] = {}
        errors: dict[str, str] = {}
        if not backfill:
            for r in results[0]:
                if r.sample is None:
                    errors[r.target.name] = r.error or "unknown error"
                else:
                    self._warn_refused(r.target.name, r.sample.refused)
                    self._warn_capped(r.target.name, r.sample.capped)
                    per_target.setdefault(r.target.name, []).append(
                        land.Row(r.target.name, self._resolve(r.target, r.sample), r.ts, r.sample))
            results = results[1:]
        for t, rows, err in results:
            if err is not None:
                errors[t.name] = err
            else:
                per_target[t.name] = rows
        for name, why in errors.items():
            self.warn(f"target {name}: {why}")
            batch.events.append(land.Event(name, now, "error", why))
            st = self.report.targets[name]
            st.failed_rounds += 1
            st.last_error = why
        for name, rows in per_target.items():
            batch.rows += rows
            st = self.report.targets[name]
            st.ok_rounds += 1
        # Land with retries: a store briefly locked by another writer must not cost this round's samples.
        added = await asyncio.to_thread(self._land, batch)
        for r in batch.rows:
            if r.source == "prometheus":
                self._prom_landed.put((r.target_id, r.ts), True)
        for k, v in added.items():
            self.report.added[k] += v
        for name, rows in per_target.items():
            self.report.targets[name].samples += len(rows)
        self.report.rounds += 1

    def _land(self, batch: land.Batch) -> dict[str, int]:
        with open_store.session(self.opts.db) as con:
            seen_ids: set[str] = set()
            for r in sorted(batch.rows, key=lambda r: r.ts):
                if r.target_id not in seen_ids:
                    self._label_events(batch, r.target_id, r.target, r.ts, con)
                    seen_ids.add(r.target_id)
            return land.write(con, batch)

    # ---- the loop -------------------------------------------------------------------------------
    async def run(self) -> WatchReport:
        loop = asyncio.get_running_loop()
        for sig, name in ((signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "SIGINT")):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, self.stop, name)
        scraper = Scraper()
        prom_clients: dict[str, httpx.AsyncClient] = {}
        try:
            single = self.opts.once or self.opts.since is not None
            while not self._stop.is_set():
                started = time.monotonic()
                await self.round(scraper, prom_clients)
                if single or (self.opts.max_rounds is not None and self.report.rounds >= self.opts.max_rounds):
                    break
                wait = max(0.0, self.opts.interval_s - (time.monotonic() - started))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._stop.wait(), wait)
        finally:
            await scraper.aclose()
            for c in prom_clients.values():
                await c.aclose()
            for sig in (signal.SIGTERM, signal.SIGINT):
                with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                    loop.remove_signal_handler(sig)
        return self.report


def _replace(t: Target, **kw) -> Target:
    from dataclasses import replace

    return replace(t, **kw)


def watch(config: WatchConfig, opts: WatchOptions) -> WatchReport:
    return asyncio.run(Watcher(config, opts).run())
