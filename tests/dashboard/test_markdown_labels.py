"""Labels from data render as text (issue 30): a GPU, family, model, workload, tenant or file name holding
Markdown — link and image syntax, emphasis, code, Streamlit's ``:color[…]`` and emoji shortcodes, ``$…$`` LaTeX,
raw HTML — reaches every Markdown element of the Winners page, its drill-down and the Your-traffic page as
literal characters, never as a live link, image, emphasis or formula. And no ordinary input gives a traceback: a
linked family × GPU with no cells, a workload containing ``|`` (which ``ingest results --set`` accepts).

The store is the default data plus one file imported with ``--set`` hostile labels (the real importer); the
Markdown each element carries is rendered with markdown-it (CommonMark + GFM tables, strikethrough and bare-URL
linkify) and its HTML inspected."""

from __future__ import annotations

import html
import re
import shutil
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from dashboard import drill, md
from tests.conftest import REPO, cli
from tests.dashboard.conftest import open_page

SAMPLE = REPO / "data" / "samples" / "results" / "vllm_bench_eagle3_qwen_code.json"
HOST = "127.0.0.1:9"  # nothing listens on port 9 (discard): a fetch would fail, but must never be attempted
# built here, piece by piece: each names one Markdown construct Streamlit would honour
LINK = "[" + "open me" + "](" + f"http://{HOST}/wl" + ")"
IMAGE = "!" + "[" + "pixel" + "](" + f"http://{HOST}/gpu.png" + ")"
FAMILY = ":" + "blue[" + "Fam" + "]" + " $" + "a_1^2" + "$"
MODEL = "org/" + "__under__ " + "`" + "tick" + "`" + " <i>" + "x" + "</i> :" + "rocket" + ":"
PIPE_WORKLOAD = "left" + "|" + "right"
LABELS = (LINK, IMAGE, FAMILY, MODEL.rsplit("/", 1)[-1])
MD = MarkdownIt("gfm-like")  # linkify: a bare http://… would become a link too


def _import(db: Path, **labels: str) -> None:
    sets = [a for k, v in labels.items() for a in ("--set", f"{k}={v}")]
    res = cli("ingest", "results", str(SAMPLE), "--db", str(db), *sets)
    assert res.returncode == 0, res.stderr


@pytest.fixture(scope="module")
def hostile_db(default_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    db = tmp_path_factory.mktemp("hostile") / "s.duckdb"
    shutil.copy(default_db, db)
    _import(db, gpu=IMAGE, family=FAMILY, model=MODEL, workload=LINK)
    return db


@pytest.fixture
def use(monkeypatch):
    def point(db: Path) -> Path:
        monkeypatch.setenv("SPECTUNE_DB", str(db))
        return db
    return point


def sources(at) -> list[str]:
    """The Markdown source of every element Streamlit renders as Markdown (bodies, callouts, titles, labels)."""
    out = []
    for kind in ("title", "header", "subheader", "markdown", "caption", "info", "warning", "error", "success"):
        out += [e.value for e in getattr(at, kind)]
    out += [e.label for e in at.expander]
    return out


def shown(src: str) -> str:
    """What a reader sees of one Markdown source: its rendered text."""
    return md.unjoined(html.unescape(re.sub(r"<[^>]+>", "", MD.render(src))))


def check_inert(at) -> str:
    """Every Markdown element renders without a link or image to the hostile host, without emphasis, code or raw
    HTML coming from a label, with no Streamlit shortcode or formula left unescaped. Returns the visible text."""
    seen = []
    for src in sources(at):
        page = MD.render(src)
        assert HOST not in "".join(re.findall(r"<(?:a|img)\b[^>]*>", page)), (src, page)
        for tag in ("<img", "<em>under", "<strong>under", "<code>tick", "<i>"):
            assert tag not in page, (tag, src)
        # Streamlit's own extensions, which markdown-it does not know: a colour directive, an emoji shortcode,
        # LaTeX between dollars — each must reach the browser escaped
        assert not re.search(r"(?<!\\):blue\[|(?<!\\):rocket\\?:|(?<!\\)\$", src), src
        # remark-gfm links a bare http://… found in the text after parsing, escapes or not: it must not be there
        assert f"://{HOST}" not in html.unescape(re.sub(r"<[^>]+>", "", page)), src
        seen.append(shown(src))
    return "\n".join(seen)


def test_winners_every_load_shows_the_labels_as_text(hostile_db, use):
    use(hostile_db)
    at = open_page()
    text = check_inert(at)
    assert LINK in text and IMAGE in text  # shown, character for character


def test_winners_drill_down_shows_the_labels_as_text(hostile_db, use):
    use(hostile_db)
    at = open_page(query={"conc": "16"})
    cell = drill.cell_id(IMAGE, FAMILY, LINK, MODEL, "")
    at.selectbox(key="winners.cell").set_value(cell).run()
    assert not at.exception, [e.message for e in at.exception]
    text = check_inert(at)
    assert "Why this pick" in text and LINK in text and IMAGE in text, text  # the open drill-down names them


def test_traffic_deploy_section_shows_tenant_and_workload_labels_as_text(hostile_db, use, tmp_path):
    db = use(Path(shutil.copy(hostile_db, tmp_path / "s.duckdb")))
    rows = ["timestamp_s,input_tokens,output_tokens,workload,shard"]
    for i in range(60):  # two tenants, one named as a link and one as an image; a workload named like a link
        tenant, wl = (LINK, "code") if i % 2 else (IMAGE, f"**{LINK}**")
        rows.append(f"{i * 0.5},{200 + i},{100 + i},\"{wl}\",\"{tenant}\"")
    at = open_page("views/traffic.py", {"fam": "Qwen", "gpu": "MI300X"})
    at.file_uploader(key="traffic.upload").set_value(("[x](http://127.0.0.1:9/f).csv", "\n".join(rows).encode(),
                                                      "text/csv")).run()
    assert not at.exception, [e.message for e in at.exception]
    assert db.exists() and at.code  # scored: the deploy section is on the page
    text = check_inert(at)
    assert f"{LINK}:" in text and f"{IMAGE}:" in text  # each tenant's recommendation, named literally


def test_traffic_link_to_a_family_and_gpu_without_cells_says_so(hostile_db, use, tmp_path):
    use(Path(shutil.copy(hostile_db, tmp_path / "s.duckdb")))
    at = open_page("views/traffic.py", {"fam": "Qwen"})
    at.selectbox(key="traffic.sample")  # the bundled sample gives a stored trace to re-score
    at.button(key="traffic.load_sample").click().run()
    tid = at.selectbox(key="traffic.trace").value
    assert tid
    # Qwen was never measured on the imported file's GPU: an ordinary link, not a crash
    at = open_page("views/traffic.py", {"fam": "Qwen", "gpu": IMAGE, "trace": tid})
    assert at.selectbox(key="traffic.gpu").value == IMAGE
    said = [w.value for w in at.warning if "Nothing to score" in w.value]
    assert said and "no measured cells" in said[0] and not at.code
    check_inert(at)


def test_a_workload_with_a_pipe_opens_in_the_drill_down(default_db, use, tmp_path):
    db = use(Path(shutil.copy(default_db, tmp_path / "s.duckdb")))
    _import(db, workload=PIPE_WORKLOAD, family="Qwen", gpu="MI300X", model="org/piped")
    at = open_page(query={"conc": "16"})
    cell = drill.cell_id("MI300X", "Qwen", PIPE_WORKLOAD, "org/piped", "")
    at.selectbox(key="winners.cell").set_value(cell).run()
    assert not at.exception, [e.message for e in at.exception]
    assert any(PIPE_WORKLOAD in shown(m.value) for m in at.markdown)  # the group named with its real workload
    assert drill.parts(at.selectbox(key="winners.cell").value)[2] == PIPE_WORKLOAD
    # the page's link (the URL it writes) opens the same cell in a new session
    linked = open_page(query={"conc": "16", "cell": at.query_params["cell"]})
    assert linked.selectbox(key="winners.cell").value == cell


def test_old_drill_down_links_still_open(use, default_db):
    use(default_db)
    at = open_page(query={"conc": "1", "cell": "MI300X|Qwen|code"})  # before groups were per model
    assert drill.parts(at.selectbox(key="winners.cell").value)[:3] == ("MI300X", "Qwen", "code")
    value = at.selectbox(key="winners.cell").value  # today's five-part value, as links carry it
    again = open_page(query={"conc": "1", "cell": value})
    assert again.selectbox(key="winners.cell").value == value and again.subheader
