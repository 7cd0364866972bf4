"""Report content (analysis.report): summaries from real winners and re-scoring documents on the default store,
the filters that apply, human column titles, and deploy commands cut for paper without losing a character."""

from __future__ import annotations

from pathlib import Path

import pytest

from analysis import frames
from analysis.report import filters, traffic, winners
from analysis.report.document import candidate, joined, shell_lines
from analysis.rescore.core import RescoreOptions, rescore
from analysis.vocabulary import cell_words
from analysis.winners import winners as winners_doc
from ingest import store
from ingest.traces import read_trace

SAMPLES = Path(__file__).resolve().parents[3] / "data" / "samples" / "traces"


@pytest.fixture(scope="module")
def con(default_db):
    c = store.connect(default_db, read_only=True)
    yield c
    c.close()


def test_winners_summary_answers_every_group_with_its_command_and_interval(con):
    doc = winners_doc(con, "output_throughput", frames.Filters(concurrency=(16,)))
    s = winners.summary(doc, "Output throughput (tok/s)", 16)
    assert "Output throughput (tok/s)" in s.question and "concurrency 16" in s.question
    assert len(s.answers) == len(doc["cells"]) > 0
    for a, c in zip(s.answers, doc["cells"], strict=True):
        w = c["winner"]
        # the recommendation: the clear winner, else the stated sensible pick, with its own deploy command
        rec = w if c["verdict"] == "clear" else c["pick"]
        assert a.candidate == ("none" if rec["method"] == "none" else f"{rec['method']}·{rec['depth']}")
        deploy = c["deploy"] if c["verdict"] == "clear" else c["pick"]["deploy"]
        assert a.command == deploy["command"] and a.command.startswith("vllm serve ")
        model = c["model"].rsplit("/", 1)[-1]  # the model names the group (a group never mixes models)
        assert a.group == f"{c['gpu']} · {model} · {c['workload']}"
        # the one vocabulary first (the same words as the pages), then the verdict in words
        head = cell_words(c).headline + "; "
        assert a.confidence.startswith(head)
        rest = a.confidence.removeprefix(head)
        assert rest.startswith("clear winner") if c["verdict"] == "clear" else rest.startswith(c["tie_text"])
        if w["method"] != "none":  # the paired-bootstrap interval of the gain over none, in words
            lo, hi = c["gain_vs_none_ci_pct"]
            assert lo <= c["gain_vs_none_pct"] <= hi
            own = rec if rec is c["pick"] and rec["method"] != "none" else c  # the pick's own gain when it is named
            said, (lo, hi) = own["gain_vs_none_text"], own["gain_vs_none_ci_pct"]
            assert said in a.gain and ("not separable" in said) == (lo <= 0 <= hi)
        if rec is c["pick"] and (rec["method"], rec["depth"]) != (w["method"], w["depth"]):
            assert f"behind the best point estimate {w['method']}·{w['depth']}" in a.gain
    assert any("simulated" in x for x in s.sources) and all(":" not in a.candidate for a in s.answers)


def test_traffic_summary_names_today_s_default_and_every_shard(con):
    doc = rescore(con, read_trace(SAMPLES / "azure_code.csv").frame,
                  RescoreOptions(families=("Qwen",), gpus=("MI355X",)))
    s = traffic.summary(doc, "azure_code.csv", "Output throughput (tok/s)")
    today = candidate(doc["default"]["method"], doc["default"]["depth"])
    assert f"today's {today}" in s.question and "azure_code.csv" in s.question
    assert len(s.answers) == len(doc["recommendations"])
    for a, r in zip(s.answers, doc["recommendations"], strict=True):
        assert a.command == r["deploy"]["command"] and f"vs {today}" in a.gain
        assert "95 % interval" in a.gain and r["shard"] in a.group
    assert s.sources[0].startswith("Traffic measured: 500 requests")


def test_slo_filters_are_listed_for_goodput_only():
    f = {"Metric": "x", "SLO: TTFT ≤ (ms)": "2000", "SLO: TPOT ≤ (ms)": "50", "GPUs": "all"}
    assert list(filters.applicable(f, "output_throughput")) == ["Metric", "GPUs"]
    assert filters.applicable(f, "goodput") == f


@pytest.mark.parametrize("width", [200, 60, 25, 5])
def test_a_command_cut_into_lines_pastes_back_whole(width):
    cmd = ("vllm serve Qwen/Qwen3.5-397B-A17B --tensor-parallel-size 2 --speculative-config "
           "'{\"method\":\"dspark\",\"num_speculative_tokens\":8,\"model\":\"'<DRAFTER_PATH>'\"}'")
    lines = shell_lines(cmd, width)
    assert joined(lines) == cmd
    assert all(ln.endswith(" \\") for ln in lines[:-1]) and not lines[-1].endswith("\\")
    assert all(len(ln) <= width or " " not in ln.removesuffix(" \\") for ln in lines)  # only one long word
    assert any("'{\"method\":\"dspark\"" in ln and "}'" in ln for ln in lines)  # the quoted JSON never cut


def test_schedule_candidates_keep_their_ranges():
    assert candidate("dspark", 8, "dspark:1-4→8,5-64→4") == "dspark·1-4→8,5-64→4"
    assert candidate("none", 0) == "none" and candidate("eagle3", 2, "eagle3:2") == "eagle3·2"


def test_a_tie_recommends_the_documents_pick_with_the_picks_own_command(con):
    doc = winners_doc(con, "output_throughput", frames.Filters(concurrency=(16,)))
    tie = next(c for c in doc["cells"] if c["verdict"] != "clear"
               and (c["pick"]["method"], c["pick"]["depth"]) != (c["winner"]["method"], c["winner"]["depth"]))
    a = winners.summary({**doc, "cells": [tie]}, "x", 16).answers[0]
    pick = candidate(tie["pick"]["method"], tie["pick"]["depth"])
    assert a.candidate == pick and f"pick {pick}" in a.confidence
    assert a.command == tie["pick"]["deploy"]["command"] != tie["deploy"]["command"]
    # a document without picks (an older winners JSON) still recommends its best point estimate
    old = {k: v for k, v in tie.items() if k not in ("pick", "verdict", "tie_text")}
    b = winners.summary({**doc, "cells": [old]}, "x", 16).answers[0]
    assert b.candidate == candidate(tie["winner"]["method"], tie["winner"]["depth"])
    assert b.confidence.startswith(f"tie · pick {b.candidate} (p ") and "; tie with" in b.confidence
