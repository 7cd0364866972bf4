"""data/datasets.csv (dataset → workload, with a reason) is stated in docs/importing.md row for row."""

from __future__ import annotations

import csv

from tests.ingest.results.conftest import REPO


def test_every_dataset_mapping_is_in_the_docs() -> None:
    doc = (REPO / "docs" / "importing.md").read_text(encoding="utf-8")
    table = [line for line in doc.splitlines() if line.startswith("| ") and line.count("|") == 4]
    with open(REPO / "data" / "datasets.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert rows and all(r["reason"].strip() for r in rows)
    for r in rows:
        assert any(r["dataset"] in line and f"| {r['workload']} |" in line for line in table), r["dataset"]
