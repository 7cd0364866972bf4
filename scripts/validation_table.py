"""Rewrite the generated tables in docs/simulator.md from the current data and model: leave one source out (and
its level diagnosis), leave one model out within the reference tables, and the simulator's c = 1 picks against
the reference tables' measured winners (from the committed default data).

    python scripts/validation_table.py

tests/runner/test_validation.py and tests/analysis/test_sim_vs_published.py fail when the document and the
computed tables differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis import sim_vs_published, validation  # noqa: E402

DOC = ROOT / "docs" / "simulator.md"


def main() -> int:
    doc = validation.with_table(DOC.read_text())
    picks = sim_vs_published.markdown_table(sim_vs_published.default_picks())
    if sim_vs_published.DOC_START in doc:
        doc = validation.replace_between(doc, sim_vs_published.DOC_START, sim_vs_published.DOC_END, picks)
    DOC.write_text(doc)
    print(validation.markdown_table())
    print(validation.lomo_table())
    print(picks)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
