"""``spectune watch`` — collecting production spec-decode counters from live vLLM fleets.

Modules: :mod:`targets` (the TARGETS.toml file), :mod:`exposition` (one ``/metrics`` text → one
validated sample), :mod:`scrape` (direct scrapes, concurrent, each bounded by a timeout),
:mod:`prometheus` (a Prometheus server's ``/api/v1/query_range``), :mod:`land` (idempotent writes of
samples and events to the store's ``watch_*`` tables), :mod:`loop` (the long-running command:
interval, ``--once``, backfill, SIGTERM/Ctrl-C), :mod:`bounded` (caches capped in bytes, so a hostile
target cannot grow the watcher). Counters are stored as the server reports them
(cumulative); resets, gaps and windows are analysis' business (analysis/production/).
"""
