"""Published per-cell tables in the winner rule: one group per model × dataset, load not stated, the post's best.

On a fresh default store (built by the command itself, as a new user gets it) ``analysis winners --backend import
--best-depth --json`` gives one group per (model, dataset) of data/published/vllm-amd-2026-08/cells.csv, each with
``model``, ``dataset``, ``concurrency: null`` and ``load: "not stated"``, and each group's best point estimate is
the method the table itself measured fastest there (computed from the CSV here, never written in). A fresh table in
the same shape for invented models imports with one command and its best method per dataset comes back the same.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from tests.conftest import REPO, cli

CELLS = REPO / "data" / "published" / "vllm-amd-2026-08" / "cells.csv"


def _best_by_table(path: Path) -> dict[tuple[str, str], tuple[str, int]]:
    """(model, dataset) → the (method, depth) with the highest output tok/s in the table."""
    best: dict[tuple[str, str], tuple[float, str, int]] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            key, tok = (r["model"], r["dataset"]), float(r["output_tok_s"])
            if key not in best or tok > best[key][0]:
                best[key] = (tok, r["method"], int(r["depth"]))
    return {k: (m, d) for k, (_t, m, d) in best.items()}


def _winners(db: Path, *args: str) -> dict:
    res = cli("analysis", "winners", *args, "--json", db=db)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_fresh_default_store_answers_per_model_and_dataset(tmp_path: Path) -> None:
    db = tmp_path / "fresh.duckdb"  # does not exist: SPECTUNE_DB makes it the default store, built on first use
    doc = _winners(db, "--backend", "import", "--best-depth")
    want = _best_by_table(CELLS)
    got = {(c["model"], c["dataset"]): c for c in doc["cells"]}
    assert len(doc["cells"]) == len(want) == len(got) == 28
    assert set(got) == set(want)
    for key, c in got.items():
        assert c["concurrency"] is None and c["load"] == "not stated", key
        assert c["source_url"] == "https://vllm.ai/blog/2026-08-23-speculative-decoding-amd-gpus"
        assert (c["winner"]["method"], c["winner"]["depth"]) == want[key], key
        assert c["winner"]["method"] != "none" and c["gain_vs_none_pct"] > 0
    assert '"concurrency": 0' not in json.dumps(doc)
    text = cli("analysis", "winners", "--backend", "import", "--model", "Qwen3.5-122B-A10B", db=db)
    assert text.returncode == 0, text.stderr
    lines = [ln for ln in text.stdout.splitlines() if "· load not stated" in ln]
    assert len(lines) == 4 and all("Qwen3.5-122B-A10B" in ln and "c=0" not in ln for ln in lines)


def test_no_group_holds_two_models(tmp_path: Path) -> None:
    """The whole default store (simulated matrix and published cells): every group is one model's, and a family
    filter keeps every model of the family apart."""
    db = tmp_path / "fresh.duckdb"
    doc = _winners(db, "--family", "Qwen")
    models = {c["model"] for c in doc["cells"]}
    assert {"Qwen/Qwen3-8B", "Qwen/Qwen3.5-27B", "Qwen/Qwen3.5-122B-A10B"} <= models
    keys = [(c["gpu"], c["model"], c["workload"], c["dataset"], c["concurrency"]) for c in doc["cells"]]
    assert len(keys) == len(set(keys))
    stated = [c for c in doc["cells"] if c["concurrency"] is not None]
    assert stated and all(c["load"] == f"c={c['concurrency']}" for c in stated)
    for c in doc["cells"]:
        for cand in c["top3"]:  # every candidate of a group is one of that model's cells
            assert cand["method"] in {"none", "mtp", "eagle3", "dflash", "dspark", "ngram"}
    only = _winners(db, "--concurrency", "not-stated")
    assert only["cells"] and all(c["concurrency"] is None for c in only["cells"])


def test_a_new_table_for_models_not_in_the_repository(tmp_path: Path) -> None:
    header = ["source_url", "published", "engine", "engine_version", "gpu", "gpu_count", "model", "model_family",
              "moe", "method", "depth", "dataset", "workload", "concurrency", "temperature", "speedup",
              "output_tok_s", "baseline_output_tok_s", "acceptance_length", "acceptance_rate", "notes"]
    url = "https://example.org/blog/next-post"
    base = {"GSM8K": 1000.0, "HumanEval": 1200.0}
    figures = {  # (model, dataset) → {(method, depth): tok/s}; the best differs by model and by dataset
        ("acme/Nimbus-70B", "GSM8K"): {("eagle3", 2): 1700.0, ("eagle3", 4): 1850.0, ("dflash", 7): 1790.0},
        ("acme/Nimbus-70B", "HumanEval"): {("eagle3", 2): 1900.0, ("eagle3", 4): 2010.0, ("dflash", 7): 2400.0},
        ("zeta/Orca-12B", "GSM8K"): {("mtp", 1): 1500.0, ("mtp", 3): 1720.0, ("dspark", 7): 1650.0},
        ("zeta/Orca-12B", "HumanEval"): {("mtp", 1): 1600.0, ("mtp", 3): 1640.0, ("dspark", 7): 2100.0},
    }
    rows = []
    for (model, dataset), cands in figures.items():
        for (method, depth), tok in cands.items():
            rate = 0.7
            rows.append({"source_url": url, "published": "2027-01-01", "engine": "vLLM", "engine_version": "0.40",
                         "gpu": "MI355X", "gpu_count": "4", "model": model, "model_family": model.split("/")[0],
                         "moe": "false", "method": method, "depth": str(depth), "dataset": dataset, "workload": "",
                         "concurrency": "", "temperature": "", "speedup": f"{tok / base[dataset]:.2f}",
                         "output_tok_s": str(tok), "baseline_output_tok_s": str(base[dataset]),
                         "acceptance_length": f"{1 + depth * rate:.2f}", "acceptance_rate": str(rate), "notes": ""})
    table = tmp_path / "next-post"
    table.mkdir()
    with open(table / "cells.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=header)
        w.writeheader()
        w.writerows(rows)
    db = tmp_path / "own.duckdb"
    res = cli("ingest", "results", str(table), "--db", str(db))
    assert res.returncode == 0, res.stderr
    doc = json.loads(cli("analysis", "winners", "--db", str(db), "--best-depth", "--json").stdout)
    got = {(c["model"], c["dataset"]): (c["winner"]["method"], c["winner"]["depth"]) for c in doc["cells"]}
    assert got == _best_by_table(table / "cells.csv")
    assert {c["workload"] for c in doc["cells"] if c["dataset"] == "HumanEval"} == {"code"}  # data/datasets.csv
    again = cli("ingest", "results", str(table / "cells.csv"), "--db", str(db))
    assert again.returncode == 0 and "already in the store" in again.stdout
