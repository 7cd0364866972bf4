"""The "Your traffic" page in the real Streamlit app (AppTest): upload → recommendations, mapping form, limits,
bad files, saved traces and the comparison of two traces. Each test gets its own copy of the default store
(the page writes traces; the session store stays read-only)."""

from __future__ import annotations

import json
import shlex
import shutil
import tempfile
from pathlib import Path

import pytest

from ingest import sql, store
from tests.dashboard.conftest import chart_specs, open_page, plain

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "data" / "samples" / "traces"
PAGE = "views/traffic.py"


@pytest.fixture
def db(default_db, tmp_path, monkeypatch):
    path = tmp_path / "store.duckdb"
    shutil.copy(default_db, path)
    monkeypatch.setenv("SPECTUNE_DB", str(path))
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))  # uploads' temp folders land here, to be checked
    return path


def _traces(db: Path) -> list[str]:
    with store.session(db, read_only=True) as con:
        return [r[0] for r in con.execute("SELECT name FROM traces ORDER BY name").fetchall()]


def _upload(at, name: str, data: bytes, mime: str = "text/csv"):
    at.file_uploader(key="traffic.upload").set_value((name, data, mime)).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _titles(at) -> list[str]:
    out = []
    for c in chart_specs(at):
        t = c["spec"].get("title", "")
        out.append(t.get("text", "") if isinstance(t, dict) else str(t))
    return out


def test_upload_gives_recommendations_charts_and_the_config(db):
    at = _upload(open_page(PAGE), "AzureLLMInferenceTrace_conv.csv", (SAMPLES / "azure_conv.csv").read_bytes())
    assert any("stored" in plain(s.value) for s in at.success)
    assert _traces(db) == ["AzureLLMInferenceTrace_conv.csv"]
    assert any("Simulated data on screen" in plain(w.value) for w in at.warning)
    codes = [c.value for c in at.code]
    assert codes and all(c.startswith("vllm serve ") for c in codes)
    argv = shlex.split(codes[0])  # the full command: model, benchmarked TP size, the config
    assert argv[argv.index("--tensor-parallel-size") + 1].isdigit()
    spec = json.loads(argv[argv.index("--speculative-config") + 1])
    assert spec["num_speculative_tokens"] >= 1
    titles = _titles(at)
    assert {"Workload mix", "Output tokens", "Input tokens", "Arrival rate"} <= set(titles)
    assert any(t.startswith("Every candidate per shard") for t in titles) and any(t.startswith("The tax") for t in
                                                                                  titles)
    heat = next(c for c in chart_specs(at) if str(c["spec"].get("title", "")).find("Every candidate") >= 0)
    assert sum(r["is_winner"] for r in heat["rows"]) == 1 and {r["shard"] for r in heat["rows"]} == {"chat"}
    mix = next(c for c in chart_specs(at) if "Workload mix" in str(c["spec"].get("title", "")))
    assert [r["workload"] for r in mix["rows"]] == ["chat"]  # the Azure "conv" name says chat
    tid = at.selectbox(key="traffic.trace").value
    assert len(tid) == 16 and at.query_params["trace"] in (tid, [tid])  # the view is a link
    assert list(Path(tempfile.gettempdir()).iterdir()) == []  # the upload's temp folder is gone


def test_the_deploy_command_takes_the_drafter_from_the_page_and_shows_the_schedule_choice(db):
    at = _upload(open_page(PAGE), "AzureLLMInferenceTrace_conv.csv", (SAMPLES / "azure_conv.csv").read_bytes())
    before = [c.value for c in at.code]
    method = json.loads(shlex.split(before[0])[-1])["method"]
    assert any("<DRAFTER_PATH>" in c for c in before) == any("needs its drafter" in plain(w.value) for w in at.warning)
    # one drafter field per method that needs one
    fields = {t.key for t in at.text_input if t.key.startswith("traffic.drafter.")}
    assert fields == {f"traffic.drafter.{m}" for m in ("dflash", "dspark", "eagle3")}
    if method in ("eagle3", "dflash", "dspark"):
        at.text_input(key=f"traffic.drafter.{method}").set_value("/models/my drafter").run()
        assert not at.exception
        after = json.loads(shlex.split(at.code[0].value)[-1])
        assert after["model"] == "/models/my drafter"
        assert not any("needs its drafter" in plain(w.value) for w in at.warning if method in plain(w.value))
    assert any("Depth schedule per batch size" in plain(m.value) for m in at.markdown)
    at.text_input(key="traffic.drafter.eagle3").set_value("bad\npath").run()
    assert any("control character" in plain(e.value) for e in at.error)


def _metric(at, label: str):
    return next(m for m in at.metric if m.label == label)


def test_warnings_banner_workload_selector_and_the_operating_concurrency(db):
    at = _upload(open_page(PAGE), "conversation_trace.jsonl", (SAMPLES / "mooncake.jsonl").read_bytes(),
                 "application/jsonl")
    at.sidebar.selectbox(key="traffic.fam").set_value("Qwen").run()
    at.sidebar.selectbox(key="traffic.gpu").set_value("MI355X").run()
    assert any("workload from the file name" in plain(w.value) and "conversation_trace.jsonl" in plain(w.value)
               for w in at.warning)
    assert _metric(at, "Workload from").value == "file name"
    conc = _metric(at, "Scored at concurrency")
    assert float(conc.value.split("–")[0]) > 0 and "arrival rate" in conc.help
    named = [c.value for c in at.code]
    at.sidebar.selectbox(key="traffic.workload").set_value("chat").run()
    assert not at.exception
    assert _metric(at, "Workload from").value == "selector"
    assert not any("workload from the file name" in plain(w.value) for w in at.warning)
    assert [c.value for c in at.code] == named  # the guess was chat: the explicit chat gives the same answer
    assert at.query_params["workload"] in ("chat", ["chat"])
    at.sidebar.selectbox(key="traffic.workload").set_value("code").run()
    assert any(m.value.startswith("Workloads: code 100%") for m in at.caption)


def test_an_unmeasured_default_warns_on_the_page(db):
    with store.session(db) as con:  # drop one measured depth of one family × GPU: the page still offers it
        con.execute("DELETE FROM cells WHERE family = 'Qwen' AND gpu = 'MI355X' AND method = 'mtp' AND depth = 8")
    at = _upload(open_page(PAGE, {"fam": "Qwen", "gpu": "MI355X", "default": "mtp:8"}), "code.csv",
                 (SAMPLES / "azure_code.csv").read_bytes())
    assert any("default mtp·8 never measured (extrapolated)" in plain(w.value) and "model:depth" in plain(w.value)
               for w in at.warning)
    at.sidebar.selectbox(key="traffic.default").set_value("mtp:3").run()
    assert not any(w.value.startswith("default ") for w in at.warning)


def test_shard_by_output_length_and_hour_on_the_page(db):
    at = _upload(open_page(PAGE), "AzureLLMInferenceTrace_code.csv", (SAMPLES / "azure_code.csv").read_bytes())
    at.sidebar.selectbox(key="traffic.shard").set_value("output_length").run()
    assert not at.exception
    shards = [plain(m.value) for m in at.markdown if plain(m.value).startswith("**output ")]
    assert len(shards) >= 2 and int(_metric(at, "Shards").value) == len(shards)
    at.sidebar.selectbox(key="traffic.shard").set_value("hour").run()
    assert any(m.value.startswith("**hour 00**") for m in at.markdown)


def test_a_bundled_sample_loads_without_an_upload(db):
    at = open_page(PAGE)
    assert not at.code and _traces(db) == []
    at.selectbox(key="traffic.sample").set_value("BurstGPT (synthetic sample)")
    next(b for b in at.button if b.label == "Load sample").click().run()
    assert not at.exception, [e.message for e in at.exception]
    assert _traces(db) == ["sample burstgpt.csv"] and at.code
    assert at.selectbox(key="traffic.trace").value in at.query_params["trace"]


def test_changing_family_and_default_rescores(db):
    at = _upload(open_page(PAGE), "code.csv", (SAMPLES / "azure_code.csv").read_bytes())
    before = [c.value for c in at.code]
    at.sidebar.selectbox(key="traffic.fam").set_value("Kimi").run()
    at.sidebar.selectbox(key="traffic.default").set_value("none").run()
    assert not at.exception
    after = [c.value for c in at.code]
    assert after != before and "moonshotai/Kimi-K2.5" in after[0]


def test_unknown_columns_open_the_mapping_form(db):
    rows = "".join(f"{i},{300 + i},{20 + i % 50}\n" for i in range(80))
    at = _upload(open_page(PAGE), "weird.csv", ("a,b,c\n" + rows).encode())
    assert any("unrecognised columns" in plain(w.value) and "weird.csv:1" in plain(w.value) for w in at.warning)
    assert _traces(db) == []
    at.selectbox(key="traffic.map.input_tokens").set_value("b")
    at.selectbox(key="traffic.map.output_tokens").set_value("c")
    next(b for b in at.button if "Read with this mapping" in b.label).click().run()
    assert not at.exception and at.code and _traces(db) == ["weird.csv"]


@pytest.mark.parametrize(("name", "data", "needle"), [
    ("nul.csv", b"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.69,1\x00,2\n", "NUL byte"),
    ("neg.csv", b"TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.6805900,-3,2\n", "negative"),
    ("junk.parquet", b"PAR1 not really parquet", "Parquet"),
    ("empty.csv", b"", "empty"),
])
def test_bad_uploads_show_one_error_and_store_nothing(db, name, data, needle):
    at = _upload(open_page(PAGE), name, data)
    errors = [plain(e.value) for e in at.error]
    assert len(errors) == 1 and errors[0].startswith(f"error: {name}:") and needle in errors[0]
    assert "\n" not in errors[0] and "spectune-upload" not in errors[0]  # the temp path never shows
    assert _traces(db) == [] and not at.code


def test_uploads_over_the_size_limit_are_refused(db, monkeypatch):
    monkeypatch.setenv("SPECTUNE_MAX_UPLOAD_MB", "1")
    body = (SAMPLES / "azure_code.csv").read_bytes()
    at = _upload(open_page(PAGE), "big.csv", body * (1024 * 1024 // len(body) + 2))
    assert any("over the 1 MB limit" in plain(e.value) for e in at.error) and _traces(db) == []


def test_a_bad_upload_cap_setting_stops_the_app_with_its_one_line_and_no_upload(db, monkeypatch):
    monkeypatch.setenv("SPECTUNE_MAX_UPLOAD_MB", "lots")
    at = open_page(PAGE)
    assert not at.exception
    errors = [plain(e.value) for e in at.error]
    assert "error: SPECTUNE_MAX_UPLOAD_MB='lots': expected a whole number in [1, 200]" in errors, errors
    assert not [u for u in at.get("file_uploader") if u.key == f"{PAGE}.upload"]  # nothing to upload into


def test_saved_traces_and_comparing_two(db):
    at = open_page(PAGE)
    _upload(at, "code.csv", (SAMPLES / "azure_code.csv").read_bytes())
    _upload(at, "conv.csv", (SAMPLES / "azure_conv.csv").read_bytes())
    assert _traces(db) == ["code.csv", "conv.csv"]
    assert at.selectbox(key="traffic.cmp_a").value != at.selectbox(key="traffic.cmp_b").value  # the two traces
    assert any(m.value == "**The recommendation changes**" for m in at.markdown)
    assert any(m.label == "Mix drift (total variation)" and plain(m.value) == "100.0%" for m in at.metric)
    # the same bytes again are the same trace
    _upload(at, "code-copy.csv", (SAMPLES / "azure_code.csv").read_bytes())
    assert any("already stored" in plain(s.value) for s in at.success) and len(_traces(db)) == 2


def test_a_link_to_a_trace_and_hostile_links(db):
    at = _upload(open_page(PAGE), "code.csv", (SAMPLES / "azure_code.csv").read_bytes())
    tid = at.selectbox(key="traffic.trace").value
    linked = open_page(PAGE, {"trace": tid, "fam": "Qwen"})
    assert linked.selectbox(key="traffic.trace").value == tid and linked.code
    for bad in ("'; DROP TABLE traces; --", "<script>alert(1)</script>", "x" * 5000):
        at2 = open_page(PAGE, {"trace": bad})
        assert not at2.exception and not at2.code
        assert any("not valid" in plain(w.value) for w in at2.warning)
    with store.session(db, read_only=True) as con:
        assert sql.one(con, "SELECT count(*) FROM traces")[0] == 1
