"""Workloads: the built-in prompt sets, user datasets (ShareGPT, prompt JSONL, Spec-Bench), trace replay
(arrival times, output lengths, prompts synthesized to the trace's input length), Poisson request rates,
and bad files as one-line InputErrors."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest

from ingest.errors import InputError
from ingest.traces.tokens import estimate_tokens
from runner.matrix import WorkloadSpec
from runner.workloads import BUILTIN_DIR, load_workload, rescale_arrivals, resolve_source, synth_prompt

AZURE = "TIMESTAMP,ContextTokens,GeneratedTokens\n" + "".join(
    f"2024-05-10 00:00:{s:06.3f},{400 + 37 * i},{20 + 9 * i}\n" for i, s in enumerate([0.0, 0.25, 1.5, 1.75, 4.0])
)


@pytest.mark.parametrize("name", ["code", "chat", "reasoning"])
def test_builtin_sets_have_50_varied_distinct_prompts(name: str) -> None:
    rows = [json.loads(line) for line in (BUILTIN_DIR / f"{name}.jsonl").read_text().splitlines()]
    texts = [r["prompt"] for r in rows]
    assert len(texts) >= 50 and len(set(texts)) == len(texts)
    lengths = sorted(len(t) for t in texts)
    assert lengths[0] < 100 and lengths[-1] > 400 and lengths[-1] > 4 * lengths[0]
    assert len({r["id"] for r in rows}) == len(rows)


def test_builtin_generator_reproduces_the_committed_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("make_workloads", BUILTIN_DIR / "make_workloads.py")
    mod = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    monkeypatch.setattr(mod, "HERE", tmp_path)
    mod.main()
    for name in ("code", "chat", "reasoning"):
        assert (tmp_path / f"{name}.jsonl").read_bytes() == (BUILTIN_DIR / f"{name}.jsonl").read_bytes()


def test_builtin_load_is_a_seeded_shuffle_cycled_to_n() -> None:
    spec = WorkloadSpec("code")
    a, b = load_workload(spec, 130), load_workload(spec, 130)
    texts = [p.text for p in a.prompts]
    assert texts == [p.text for p in b.prompts] and len(texts) == 130
    pool = [json.loads(line)["prompt"] for line in (BUILTIN_DIR / "code.jsonl").read_text().splitlines()]
    assert set(texts) == set(pool) and texts[: len(pool)] != pool  # every prompt, not in file order
    assert texts[len(pool):] == texts[: 130 - len(pool)]  # the second round repeats the same order
    assert a.arrival_times_s is None and a.source.startswith("builtin ")
    assert [p.text for p in load_workload(WorkloadSpec("chat", source="code"), 5).prompts] != texts[:5]


def test_prompt_datasets(tmp_path: Path) -> None:
    (tmp_path / "sg.json").write_text(json.dumps([
        {"id": "a", "conversations": [{"from": "human", "value": "first question"}, {"from": "gpt", "value": "x"}]},
        {"id": "b", "conversations": [{"from": "system", "value": "sys"}, {"from": "user", "value": "second"}]},
        {"id": "c", "conversations": [{"from": "gpt", "value": "no human turn"}]},
    ]))
    (tmp_path / "p.jsonl").write_text('{"prompt": "alpha", "max_tokens": 7}\n\n{"prompt": "beta"}\n')
    (tmp_path / "q.jsonl").write_text('{"question_id": 1, "category": "math", "turns": ["one?", "two?"]}\n')
    sg = load_workload(WorkloadSpec("w", source="sg.json"), 2, tmp_path)
    assert sorted(p.text for p in sg.prompts) == ["first question", "second"]
    pj = load_workload(WorkloadSpec("w", source=str(tmp_path / "p.jsonl")), 2)
    assert sorted((p.text, p.max_tokens) for p in pj.prompts) == [("alpha", 7), ("beta", None)]
    sb = load_workload(WorkloadSpec("w", source="q.jsonl"), 3, tmp_path)
    assert [p.text for p in sb.prompts] == ["one?"] * 3
    assert resolve_source(WorkloadSpec("w", source="q.jsonl"), tmp_path)[0] == "specbench"
    assert resolve_source(WorkloadSpec("w", source="p.jsonl", format="specbench"), tmp_path)[0] == "specbench"


def test_trace_replay_keeps_arrivals_and_lengths_and_synthesizes_prompts(tmp_path: Path) -> None:
    (tmp_path / "az.csv").write_text(AZURE)
    wl = load_workload(WorkloadSpec("replay", source="az.csv"), 4, tmp_path)
    assert wl.arrival_times_s == pytest.approx([0.0, 0.25, 1.5, 1.75])
    assert [p.max_tokens for p in wl.prompts] == [20, 29, 38, 47]
    for i, p in enumerate(wl.prompts):
        assert p.text is not None
        assert estimate_tokens(p.text) == pytest.approx(400 + 37 * i, abs=3)
    assert len({p.text for p in wl.prompts}) == 4, "synthesized prompts differ (no accidental prefix caching)"
    assert "synthesized" in wl.source
    later = wl.slice(2, 4)
    assert later.arrival_times_s == pytest.approx([0.0, 0.25]) and later.prompts == wl.prompts[2:4]
    whole = load_workload(WorkloadSpec("replay", source="az.csv"), 100, tmp_path)
    assert len(whole.prompts) == 5, "a trace shorter than the cell gives what it has"


def test_a_trace_with_prompt_text_sends_that_text(repo: Path) -> None:
    wl = load_workload(WorkloadSpec("t", source=str(repo / "data/samples/traces/vllm_custom.jsonl"),
                                    format="trace"), 3)
    assert all(p.text and "synthesized" not in wl.source for p in wl.prompts)


def test_request_rate_gives_seeded_poisson_arrivals() -> None:
    wl = load_workload(WorkloadSpec("chat", request_rate=4.0), 400)
    times = wl.arrival_times_s
    assert times is not None and times[0] == 0.0 and times == sorted(times)
    gaps = [b - a for a, b in itertools.pairwise(times)]
    assert sum(gaps) / len(gaps) == pytest.approx(0.25, rel=0.15)
    assert load_workload(WorkloadSpec("chat", request_rate=4.0), 400).arrival_times_s == times


def test_synth_prompt_hits_the_token_estimate() -> None:
    words = ["alpha", "beta", "gamma", "delta", "epsilon"]
    for n in (1, 10, 100, 1000):
        assert abs(estimate_tokens(synth_prompt(n, words, 0)) - n) <= 2


@pytest.mark.parametrize(("content", "name", "line", "expected"), [
    ('{"prompt": "ok"}\nnot json\n', "p.jsonl", 2, "expected one JSON object per line"),
    ('{"prompt": ""}\n', "p.jsonl", 1, "expected a non-empty string field 'prompt'"),
    ('{"question_id": 1, "turns": []}\n', "q.jsonl", 1, "expected 'turns': a non-empty list of strings"),
    ('{"a": 1}', "s.json", 1, "expected a JSON list of conversations"),
    ("[]", "s.json", 0, "no prompts found"),
])
def test_bad_datasets_are_one_line_input_errors(tmp_path: Path, content: str, name: str, line: int,
                                                expected: str) -> None:
    (tmp_path / name).write_text(content)
    with pytest.raises(InputError) as info:
        load_workload(WorkloadSpec("w", source=name), 3, tmp_path)
    assert info.value.line == line and expected in info.value.message
    assert info.value.one_line().startswith(f"error: {tmp_path / name}:{line}: ")


def test_missing_sources_name_the_builtins(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"no such file, and not a built-in prompt set \(chat, code, reasoning\)"):
        load_workload(WorkloadSpec("w", source="nope.jsonl"), 1, tmp_path)
    with pytest.raises(InputError, match="no built-in prompt set 'poetry'"):
        load_workload(WorkloadSpec("w", source="poetry", format="builtin"), 1, tmp_path)
    (tmp_path / "x.bin").write_bytes(b"\xff\xfe" * 10)
    with pytest.raises(InputError):
        load_workload(WorkloadSpec("w", source="x.bin", format="prompts"), 1, tmp_path)


def test_request_rate_rescales_a_traces_arrivals_keeping_its_shape(tmp_path: Path) -> None:
    (tmp_path / "az.csv").write_text(AZURE)
    recorded = load_workload(WorkloadSpec("replay", source="az.csv"), 5, tmp_path)
    assert recorded.arrival_times_s == pytest.approx([0.0, 0.25, 1.5, 1.75, 4.0])  # 4 gaps in 4 s: 1 req/s
    faster = load_workload(WorkloadSpec("replay", source="az.csv", request_rate=4.0), 5, tmp_path)
    assert faster.arrival_times_s == pytest.approx([0.0, 0.0625, 0.375, 0.4375, 1.0])  # same bursts, 4x the pace
    assert "arrival times scaled x0.25 to 4 req/s (recorded 1 req/s)" in faster.source
    assert [p.max_tokens for p in faster.prompts] == [p.max_tokens for p in recorded.prompts]
    assert rescale_arrivals([7.0], 2.0) == ([0.0], "arrival times kept (no span to rescale to 2 req/s)")


def test_synthesized_prompts_are_remade_for_a_tokenizer(tmp_path: Path) -> None:
    (tmp_path / "az.csv").write_text(AZURE)
    wl = load_workload(WorkloadSpec("replay", source="az.csv"), 5, tmp_path)
    assert wl.synth == [(400 + 37 * i, i * 97) for i in range(5)]
    # a tokenizer that makes 1.7 real tokens of every estimated one (the CPU test model's does about that)
    fitted = wl.resynthesized(1.7)
    for i, p in enumerate(fitted.prompts):
        assert estimate_tokens(p.text or "") * 1.7 == pytest.approx(400 + 37 * i, rel=0.02)
    assert fitted.arrival_times_s == wl.arrival_times_s and fitted.slice(1, 3).synth == wl.synth[1:3]
    assert wl.resynthesized(1.0).prompts == wl.prompts
    datasets = load_workload(WorkloadSpec("code"), 3)
    assert datasets.synth is None and datasets.resynthesized(2.0) is datasets  # real text is never touched
