"""spectune: which speculative-decoding method, at which depth, is fastest for my model, my GPU and my traffic.

This package is the ``spectune`` command (:mod:`spectune.cli`) and its ``dashboard`` launcher; the work is done
by ``runner``, ``analysis``, ``ingest`` and ``dashboard``. The version lives here (pyproject reads it).
"""

__version__ = "0.1.0"
