"""spectune's own performance benchmarks (see benchmarks/run.py and benchmarks/RESULTS.md)."""
