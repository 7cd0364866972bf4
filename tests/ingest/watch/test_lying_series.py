"""Watch data that lies is refused per series with a warning, never stored and never summed.

A histogram bucket whose bound is NaN (or no number), a counter that is non-finite, negative or beyond 2**53,
and a series that appears twice in one page: the parser names each refused series and leaves its field unknown
for that sample (the rest of the page lands); a real watch over HTTP on 127.0.0.1 stores none of it, warns, and
``analysis ab`` / ``analysis drift`` read the store without a traceback.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ingest import sql, store
from ingest.watch.exposition import MAX_COUNTER, parse
from ingest.watch.loop import WatchOptions, watch
from ingest.watch.targets import load_targets
from tests.conftest import cli
from tests.ingest.watch.faults import REAL, exposition, fault_server

LABELS = 'engine="0",model_name="m"'
E2E = "vllm:e2e_request_latency_seconds_bucket"


def _e2e(count: float, extra_le: str | None = None, extra_count: float = 0.0) -> str:
    """Cumulative e2e buckets (all requests under 1 s), optionally with one more bucket of bound ``extra_le``."""
    lines = ["# TYPE vllm:e2e_request_latency_seconds histogram",
             *(f'{E2E}{{{LABELS},le="{le}"}} {count * f}' for le, f in (("0.5", 0.5), ("1.0", 1.0), ("+Inf", 1.0)))]
    if extra_le is not None:
        lines.append(f'{E2E}{{{LABELS},le="{extra_le}"}} {extra_count}')
    return "\n".join(lines) + "\n"


def _page(n: int, *, extra: str = "", replace: tuple[str, str] | None = None) -> str:
    text = exposition(100 * (n + 1), [60 * (n + 1), 40 * (n + 1), 20 * (n + 1)]) + _e2e(10 * (n + 1)) + extra
    if replace is not None:
        old, new = replace
        assert old in text
        text = text.replace(old, new, 1)
    return text


def _line_of(text: str, prefix: str) -> str:
    return next(line for line in text.split("\n") if line.startswith(prefix))


# ---- the parser --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("le", ["NaN", "nan", "-Inf", "fast", ""])
def test_a_bucket_bound_that_is_not_a_number_refuses_that_histogram_only(le: str) -> None:
    s = parse(_page(0, extra=_e2e(0, le, 5.0).split("\n", 4)[-1]))
    assert "e2e" not in s.histograms, "no histogram with an unorderable bucket is stored"
    assert [series for series, _ in s.refused] == [f'{E2E}{{engine="0",le="{le}",model_name="m"}}']
    assert "not a number" in s.refused[0][1]
    assert s.values["drafts"] == 100 and s.values["generation_tokens"] == 200, "the rest of the page is kept"


def test_a_real_vllm_page_with_a_nan_bucket_keeps_its_other_histograms() -> None:
    line = _line_of(REAL, E2E + "{")
    s = parse(REAL.replace(line, line + "\n" + re.sub(r'le="[^"]*"', 'le="NaN"', line), 1))
    good = parse(REAL)
    assert "e2e" not in s.histograms and set(s.histograms) == set(good.histograms) - {"e2e"}
    assert s.values == good.values and s.per_pos == good.per_pos


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf", "-3", "1e306", str(int(MAX_COUNTER))])
def test_a_lying_token_counter_is_unknown_for_that_sample(value: str) -> None:
    text = _page(0)
    line = _line_of(text, "vllm:generation_tokens_total")
    s = parse(text.replace(line, line.rsplit(" ", 1)[0] + " " + value))
    assert s.values["generation_tokens"] is None, "stored as not exported, never as the lie"
    assert s.values["drafts"] == 100 and s.per_pos == [60, 40, 20]
    assert s.refused and s.refused[0][0] == f"vllm:generation_tokens_total{{{LABELS}}}"


@pytest.mark.parametrize("value", ["NaN", "-1", "1e306"])
def test_a_lying_spec_decode_counter_drops_the_spec_decode_group_together(value: str) -> None:
    text = _page(0)
    line = _line_of(text, "vllm:spec_decode_num_accepted_tokens_total")
    s = parse(text.replace(line, line.rsplit(" ", 1)[0] + " " + value))
    assert not s.speculating and s.per_pos == []
    assert {s.values[k] for k in ("drafts", "draft_tokens", "accepted_tokens")} == {None}
    assert s.values["generation_tokens"] == 200 and "e2e" in s.histograms


def test_a_counter_just_under_the_bound_is_kept() -> None:
    text = _page(0)
    line = _line_of(text, "vllm:generation_tokens_total")
    s = parse(text.replace(line, line.rsplit(" ", 1)[0] + f" {MAX_COUNTER - 1:.1f}"))
    assert s.values["generation_tokens"] == MAX_COUNTER - 1 and not s.refused


def test_a_series_twice_in_a_page_is_refused_not_summed() -> None:
    text = _page(0)
    drafts = _line_of(text, "vllm:spec_decode_num_drafts_total")
    gen = _line_of(text, "vllm:generation_tokens_total")
    # the same label set written in another order is the same series
    twin = gen.replace(LABELS, 'model_name="m",engine="0"')
    s = parse(text.replace(drafts, drafts + "\n" + drafts).replace(gen, gen + "\n" + twin))
    assert s.values["generation_tokens"] is None and not s.speculating, "neither doubled nor half-kept"
    names = [series for series, why in s.refused if "more than once" in why]
    assert names.count(f"vllm:spec_decode_num_drafts_total{{{LABELS}}}") == 2
    assert names.count(f"vllm:generation_tokens_total{{{LABELS}}}") == 2
    assert "e2e" in s.histograms


def test_a_page_whose_every_counter_lies_is_refused_whole() -> None:
    text = "".join(f'{n}{{{LABELS}}} NaN\n' for n in ("vllm:spec_decode_num_drafts_total",
                                                        "vllm:generation_tokens_total"))
    with pytest.raises(ValueError, match="every vLLM counter was refused"):
        parse(text)


# ---- a real watch over HTTP, then analysis -----------------------------------------------------------------

ROUNDS = 4
ROUTES = {
    "/good": lambda n: (200, _page(n), 0.0),
    "/nanle": lambda n: (200, _page(n, extra=f'{E2E}{{{LABELS},le="NaN"}} {3 * (n + 1)}\n'), 0.0),
    "/huge": lambda n: (200, _page(n, replace=(f"vllm:generation_tokens_total{{{LABELS}}} {200 * (n + 1)}",
                                               f"vllm:generation_tokens_total{{{LABELS}}} 1e306")), 0.0),
    "/dup": lambda n: (200, _page(n, replace=(
        f"vllm:spec_decode_num_drafts_total{{{LABELS}}} {100 * (n + 1)}",
        f"vllm:spec_decode_num_drafts_total{{{LABELS}}} {100 * (n + 1)}\n"
        f"vllm:spec_decode_num_drafts_total{{{LABELS}}} {100 * (n + 1)}")), 0.0),
}


def test_a_watch_stores_none_of_the_lies_and_analysis_reads_the_store(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    with fault_server() as srv:
        srv.routes.update(ROUTES)
        text = "timeout_s = 20\n" + "".join(
            f'[[target]]\nname = "{p[1:]}"\nurl = "{srv.url(p)}"\nsegment = "seg-{p[1:]}"\nfamily = "F"\n'
            'method = "ngram"\ndepth = 3\n' for p in ROUTES)
        (tmp_path / "t.toml").write_text(text)
        report = watch(load_targets(tmp_path / "t.toml"), WatchOptions(db=db, interval_s=0.2, max_rounds=ROUNDS,
                                                                        quiet=True))
    by = {t.name: t for t in report.targets.values()}
    assert all(by[n].samples == ROUNDS and by[n].failed_rounds == 0 for n in by), "a lie costs a series, not a page"
    warned = "\n".join(report.warnings)
    assert f'target nanle: series {E2E}{{engine="0",le="NaN",model_name="m"}} refused' in warned
    assert "target huge: series vllm:generation_tokens_total" in warned and "2**53" in warned
    assert "target dup: series vllm:spec_decode_num_drafts_total" in warned and "more than once" in warned
    assert sum(w.startswith("target nanle:") for w in report.warnings) == 1, "warned once, not every round"
    assert not any(w.startswith("target good:") for w in report.warnings)
    with store.session(db, read_only=True) as con:
        assert sql.one(con, "SELECT count(*) FROM watch_histograms WHERE isnan(le)")[0] == 0
        assert sql.one(con, "SELECT count(*) FROM watch_histograms WHERE target = 'nanle' AND metric = 'e2e'")[0] \
            == 0
        assert sql.one(con, "SELECT max(generation_tokens) FROM watch_samples")[0] == 200 * ROUNDS
        assert sql.one(con, "SELECT count(generation_tokens) FROM watch_samples WHERE target = 'huge'")[0] == 0
        dup = sql.frame(con, "SELECT drafts, accepted_tokens, generation_tokens FROM watch_samples "
                             "WHERE target = 'dup' ORDER BY ts")
        assert dup["drafts"].null_count() == ROUNDS and dup["accepted_tokens"].null_count() == ROUNDS
        assert dup["generation_tokens"].to_list() == [200.0 * (n + 1) for n in range(ROUNDS)]
    for a in ("nanle", "huge", "dup"):
        res = cli("analysis", "ab", "--a", a, "--b", "good", "--metric", "p99_e2e_ms", "--db", str(db), "--json")
        assert res.returncode == 0, res.stderr
        doc = json.loads(res.stdout)
        assert doc["b"]["target"] == "good" and "verdict" in doc
    drift = cli("analysis", "drift", "--db", str(db), "--json")
    assert drift.returncode == 0, drift.stderr
    segs = {s["segment"]: s for s in json.loads(drift.stdout)["segments"]}
    assert segs["seg-good"]["production"]["acceptance_rate"] == pytest.approx(120 / 300)
    assert segs["seg-huge"]["production"]["acceptance_rate"] == pytest.approx(120 / 300)
    assert segs["seg-dup"]["production"]["acceptance_rate"] is None, "no acceptance from a doubled page"
