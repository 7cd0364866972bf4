"""Production acceptance from the watch tables: counter deltas, windows, expectation, drift, A/B.

Modules: :mod:`load` (the only SQL: watch samples, positions, histograms, events; benchmark cells),
:mod:`deltas` (cumulative counters → per-interval increases, resets and gaps), :mod:`windows`
(per-segment acceptance over time windows with bootstrap intervals), :mod:`expectation` (the
benchmark's acceptance for the same family/method/depth/workload), :mod:`drift` (re-scoring a segment
with its production acceptance: does another (method, depth) now win clearly?), :mod:`ab` (two targets
of one segment, compared with the winner rule). Pure functions over polars frames; nothing is written.
"""
