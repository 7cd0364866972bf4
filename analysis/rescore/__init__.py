"""Re-scoring a traffic trace against the store: one module per concept.

``core`` orchestrates (the ``analysis rescore`` JSON document: :func:`analysis.rescore.core.rescore` with its
``RescoreOptions``), ``trace`` buckets a trace, ``matrix`` reads the measured cells, ``fill`` fills unmeasured cells
with the acceptance/cost model, ``score`` predicts a candidate's throughput and p99 per shard, ``drift`` re-scores
under production acceptance, ``config`` parses choices and writes the deploy config, ``summary`` and ``compare`` shape
the results for display, ``stored`` reads stored traces, ``shard`` holds the per-request shard keys, ``workload``
where workloads came from (and the explicit selector), ``default`` what the store knows about the user's default —
the last two feed ``warnings``. The package itself imports nothing, so importing a light submodule (``trace``,
``config``) does not pay for the whole pipeline.
"""
