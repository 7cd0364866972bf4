"""Rewrite the leave-one-source-out table in docs/simulator.md from the current data and model.

    python scripts/validation_table.py

tests/runner/test_validation.py fails when the document and the computed table differ.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis import validation  # noqa: E402

DOC = ROOT / "docs" / "simulator.md"


def main() -> int:
    DOC.write_text(validation.with_table(DOC.read_text()))
    print(validation.markdown_table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
