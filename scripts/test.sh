#!/usr/bin/env bash
# Set up everything the test suite needs, then run it. Idempotent; safe to rerun.
#   bash scripts/test.sh            # full suite (real vLLM on CPU, real Chromium, everything)
#   bash scripts/test.sh -k winners # extra args go to pytest
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m pip install -q -r requirements-dev.txt

# Real headless Chromium for the end-to-end tests (Debian's package; Playwright cannot download browsers here).
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  apt-get update -qq && apt-get install -y -qq chromium >/dev/null
fi
# A real Prometheus for the watch tests (ingest watch's Prometheus path; tests run the binary on a loopback port).
if ! command -v prometheus >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  apt-get update -qq && apt-get install -y -qq prometheus >/dev/null
fi

# Report tests: pdftoppm (poppler-utils) renders the PDF reports' pages; DejaVu is the PDF reports' font when
# installed (without it they use the Vera fonts inside the reportlab wheel; tests cover both).
if { ! command -v pdftoppm >/dev/null 2>&1 || [ ! -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ]; } \
    && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = "0" ]; then
  apt-get update -qq && apt-get install -y -qq poppler-utils fonts-dejavu-core >/dev/null
fi

# A real vLLM server on this CPU (separate venv, tiny random Llama made offline): ~1.5 min the first time.
bash scripts/setup_vllm_cpu.sh "$PWD/.vllm-cpu"
export SPECTUNE_VLLM_ENV="$PWD/.vllm-cpu"

python3 -m ruff check .
# Two workers, one test file per worker at a time (module fixtures such as a vLLM server or a browser are shared
# within a file), the slowest files first (tests/conftest.py SLOWEST_FILES; --no-loadscope-reorder keeps that order
# instead of xdist's most-tests-first); the slowest tests are listed, to keep CI well inside its time.
python3 -m pytest -n "${SPECTUNE_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder --durations=25 "$@"
