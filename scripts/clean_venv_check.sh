#!/usr/bin/env bash
# A new user's install, checked: a fresh virtualenv (temp folder) gets requirements.txt ALONE, then
#   1. every command of the README's "CLI at a glance" runs (`python -m …`, default data + bundled samples,
#      a small simulated run), each --json output parsed as one JSON document;
#   2. the dashboard's AppTest smoke (streamlit.testing, no pytest: nothing beyond requirements.txt), and a PDF
#      and an HTML report rendered with the fonts inside the reportlab wheel;
#   3. `pip install .` into the same venv, then from outside the checkout: `spectune --version`, `winners --json`,
#      `plan --matrix runner/matrices/default.toml`, `rescore data/samples/traces/azure_code.csv --json`, and
#      `spectune dashboard` answering /_stcore/health.
# A runtime dependency missing from requirements.txt, or a file the wheel lacks, fails here. pip reuses the
# machine's wheel cache. Usage: bash scripts/clean_venv_check.sh   (prints the seconds it took)
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$PWD"
T="$(mktemp -d)"
DASH_PID=""
cleanup() {
  if [ -n "$DASH_PID" ]; then kill -- "-$DASH_PID" 2>/dev/null || true; fi
  rm -rf "$T"
}
trap cleanup EXIT
start=$SECONDS
step() { echo "clean-venv: $*" >&2; }

python3 -m venv "$T/venv"
PY="$T/venv/bin/python"
pip_quiet() {  # pip's output only when it fails
  "$PY" -m pip install --disable-pip-version-check "$@" >"$T/pip.log" 2>&1 || { tail -30 "$T/pip.log" >&2; exit 1; }
}
pip_quiet -r requirements.txt
step "venv with requirements.txt: $((SECONDS - start)) s"
export SPECTUNE_DB="$T/store.duckdb" XDG_DATA_HOME="$T/xdg" PYTHONDONTWRITEBYTECODE=1
unset PYTHONPATH

json() {  # run a command; its stdout must be exactly one JSON document (exit 3 allowed only for compare)
  local allowed="$1"; shift
  local rc=0
  "$@" >"$T/out.json" 2>"$T/err.txt" || rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != "$allowed" ]; then
    step "FAILED (exit $rc): $*"; cat "$T/err.txt" >&2; exit 1
  fi
  "$PY" -c "import json,sys; json.load(open(sys.argv[1]))" "$T/out.json" \
    || { step "not one JSON document on stdout: $*"; head -c 400 "$T/out.json" >&2; exit 1; }
}

step "README 'CLI at a glance' with requirements.txt only"
cat >"$T/small.toml" <<'TOML'
name = "clean-venv"
gpus = ["MI355X"]
[methods.none]
[methods.mtp]
depths = [2, 3]
[families.Qwen]
model = "Qwen/Qwen3.5-397B-A17B"
[workloads.code]
max_tokens = 128
[load]
concurrency = [16]
[run]
requests_per_cell = 40
TOML
json 0 "$PY" -m runner plan --matrix runner/matrices/default.toml --json
json 0 "$PY" -m analysis winners --metric p99_e2e_ms --gpu MI355X --family Qwen --concurrency 16 --json
json 0 "$PY" -m analysis curve --family Qwen --method mtp --workload code --gpu MI355X --json
json 0 "$PY" -m runner run --matrix "$T/small.toml" --backend sim --json
json 0 "$PY" -m runner run --matrix "$T/small.toml" --backend sim --json
json 0 "$PY" -m ingest results data/samples/results/vllm_bench_eagle3_qwen_code.json --set family=Qwen --json
json 0 "$PY" -m ingest trace data/samples/traces/azure_code.csv --json
json 0 "$PY" -m analysis rescore data/samples/traces/azure_code.csv --family Qwen --gpu MI355X --default mtp:3 --json
json 3 "$PY" -m analysis compare previous latest --json
json 0 "$PY" -m ingest export --run "$("$PY" -c "import json;print(json.load(open('$T/out.json'))['run_b']['run_id'])")" \
  --out "$T/export" --json

step "CLI commands done at $((SECONDS - start)) s; dashboard AppTest smoke"
"$PY" - "$REPO/dashboard/app.py" <<'PYEOF'
import sys
from streamlit.testing.v1 import AppTest

at = AppTest.from_file(sys.argv[1], default_timeout=180).run()
if at.exception:
    sys.exit(f"dashboard raised: {[e.message for e in at.exception]}")
if not at.get("vega_lite_chart"):
    sys.exit("dashboard drew no chart on the Winners page")
PYEOF

step "a PDF and an HTML report with requirements.txt only (ReportLab and the fonts its wheel ships)"
(cd "$REPO" && "$PY" - <<'PYEOF'
import polars as pl

from analysis.report.document import Answer, Summary
from dashboard import report

cmd = "vllm serve m --speculative-config '{\"method\":\"dflash\",\"num_speculative_tokens\":5}'"
s = Summary(question="q", answers=(Answer("MI355X · Qwen–Müller", "dflash·5", "+3 %", "tie ≈", cmd),), sources=("s",))
r = report.Report(title="t", filters={}, tables=[("T", pl.DataFrame({"family": ["Qwen–Müller"]}))], summary=s,
                  fonts="bundled")
assert report.to_pdf(r)[:5] == b"%PDF-" and "dflash·5".encode() in report.to_html(r)
PYEOF
)

step "pip install . and the spectune command, outside the checkout"
t_install=$SECONDS
pip_quiet "$REPO"
step "pip install .: $((SECONDS - t_install)) s"
BIN="$T/venv/bin"
unset SPECTUNE_DB  # the installed copy's own default store (under XDG_DATA_HOME), built from its packaged data
cd "$T"
"$BIN/spectune" --version | grep -q "^spectune "
json 0 "$BIN/spectune" winners --json
"$BIN/spectune" plan --matrix "$REPO/runner/matrices/default.toml" >/dev/null
json 0 "$BIN/spectune" rescore "$REPO/data/samples/traces/azure_code.csv" --json
test -f "$XDG_DATA_HOME/spectune/spectune.duckdb" || { step "installed copy did not build its default store"; exit 1; }
PORT="$("$PY" -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")"
setsid "$BIN/spectune" dashboard --server.port "$PORT" >"$T/dash.log" 2>&1 &
DASH_PID=$!
for _ in $(seq 120); do
  if "$PY" -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:$PORT/_stcore/health', timeout=2).read() != b'ok')" 2>/dev/null; then
    step "ok in $((SECONDS - start)) s"
    exit 0
  fi
  sleep 1
done
step "spectune dashboard never answered /_stcore/health"; cat "$T/dash.log" >&2
exit 1
