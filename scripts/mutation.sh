#!/usr/bin/env bash
# Mutation testing of the pure core with mutmut (config: setup.cfg [mutmut]; figures: docs/testing.md).
#
#   scripts/mutation.sh            # all mutants of the core, then the summary and the survivors
#   scripts/mutation.sh 'analysis.winners*'   # only the mutants whose name matches (mutmut's glob)
#   MUTATION_JOBS=1 scripts/mutation.sh       # parallel mutants (default 2); runs under nice
#
# mutmut copies the sources and tests into ./mutants/ (git-ignored) and keeps its results there: a second run
# re-tests only mutants whose function or tests changed. `mutmut show NAME` prints one mutant's diff.
set -euo pipefail
cd "$(dirname "$0")/.."
MUTMUT_VERSION=$(sed -n 's/^mutmut==//p' requirements-dev.txt)
if python3 -c "import importlib.metadata as m, sys; sys.exit(m.version('mutmut') != '$MUTMUT_VERSION')" 2>/dev/null; then
  MUTMUT=(python3 -m mutmut)
else  # not installed (requirements-dev.txt pins it): a side venv, so its dependencies leave the project's alone
  VENV=${MUTATION_VENV:-.venv-mutation}
  [ -x "$VENV/bin/mutmut" ] || { python3 -m venv --system-site-packages "$VENV"
    "$VENV/bin/pip" install -q "mutmut==$MUTMUT_VERSION"; }
  MUTMUT=("$VENV/bin/mutmut")
fi
# The pure core: the functions whose mutants are run (mutmut names: module.x_function, module.xǁClassǁmethod).
# Store- and server-bound callers (winners.winners, goodput_frame, rescore.rescore, execute._run) are left to
# their own tests, which need a built store or a server per mutant.
CORE=(
  'analysis.winners.x_decide__*' 'analysis.gains.x_intervals__*' 'analysis.gains.x_interval__*'
  'analysis.winners.x__interval_list__*'
  'analysis.metrics.*'
  'analysis.rescore.summary.x_candidates__*' 'analysis.rescore.summary.x_tax__*'
  'analysis.rescore.core.x__gain__*'
  'ingest.cellstats.x_derive__*' 'ingest.cellstats.x_bootstrap_arrays__*' 'ingest.cellstats.x_poisson1__*'
  'ingest.traces.mapping.*' 'ingest.traces.checks.x_check_timestamps__*' 'ingest.traces.checks.x_resolve_auto_unit__*'
  'runner.execute.x_resolve_run_id__*' 'runner.execute.x_pending_cells__*' 'runner.execute.x_pending_cells_detail__*'
)
[ $# -gt 0 ] && CORE=("$@")
export POLARS_MAX_THREADS=${POLARS_MAX_THREADS:-1} OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
# a mutant whose tests hang (a loop bound mutated) is a timeout, which mutmut counts as killed
mkdir -p mutants
nice -n 10 "${MUTMUT[@]}" run --max-children "${MUTATION_JOBS:-2}" "${CORE[@]}" >mutants/run.log 2>&1 || {
  tail -c 2000 mutants/run.log; exit 1; }
python3 scripts/mutation_report.py --only "${CORE[@]}" -- "${MUTMUT[@]}"
