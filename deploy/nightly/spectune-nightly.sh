#!/usr/bin/env bash
# spectune nightly re-evaluation: run the matrix (or a trace replay), compare with the previous run of the same
# matrix, write the drift report (JSON + markdown), alert when a winner changed. See docs/nightly.md.
#
# Exit codes: 0 no winner changed (or first run: nothing to compare), 3 a winner changed (alert sent),
#             2 bad input/usage, 1 unexpected failure. Scheduler units treat 3 as a failure on purpose.
set -euo pipefail

SPECTUNE_HOME="${SPECTUNE_HOME:-/opt/spectune}"                  # the spectune checkout
SPECTUNE_PYTHON="${SPECTUNE_PYTHON:-python3}"                    # interpreter with requirements.txt installed
SPECTUNE_MATRIX="${SPECTUNE_MATRIX:-runner/matrices/default.toml}" # a matrix; a trace replay is a matrix whose
                                                                  # [workloads.X] source = "your-trace.jsonl"
SPECTUNE_BACKEND="${SPECTUNE_BACKEND:-vllm}"                      # vllm on GPU hosts; sim for a dry run
SPECTUNE_REPORTS="${SPECTUNE_REPORTS:-/var/lib/spectune/reports}" # one dated folder per night + `latest`
SPECTUNE_METRIC="${SPECTUNE_METRIC:-output_throughput}"           # winners decided on this metric
SPECTUNE_ALERT_CMD="${SPECTUNE_ALERT_CMD:-}"                      # shell command run when a winner changed;
                                                                  # sees $SPECTUNE_DRIFT_MD and $SPECTUNE_DRIFT_JSON
SPECTUNE_RUN_ARGS="${SPECTUNE_RUN_ARGS:-}"                        # extra `runner run` flags, e.g. --ray auto
# SPECTUNE_DB (the store) is read by every spectune command; default data/spectune.duckdb in SPECTUNE_HOME.

cd "$SPECTUNE_HOME"
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
out="$SPECTUNE_REPORTS/$stamp"
mkdir -p "$out"
log() { printf '%s spectune-nightly: %s\n' "$(date -u +%FT%TZ)" "$*"; }

log "running $SPECTUNE_MATRIX on backend $SPECTUNE_BACKEND"
# shellcheck disable=SC2086  # SPECTUNE_RUN_ARGS is a list of flags
"$SPECTUNE_PYTHON" -m runner run --matrix "$SPECTUNE_MATRIX" --backend "$SPECTUNE_BACKEND" --json \
    $SPECTUNE_RUN_ARGS >"$out/run.json"
run_id="$("$SPECTUNE_PYTHON" -c 'import json, sys; print(json.load(sys.stdin)["run_id"])' <"$out/run.json")"
log "run $run_id finished: $(cat "$out/run.json")"

set +e
"$SPECTUNE_PYTHON" -m analysis compare previous "$run_id" --metric "$SPECTUNE_METRIC" \
    --out "$out/drift.json" --markdown "$out/drift.md" >"$out/compare.txt" 2>"$out/compare.err"
rc=$?
set -e
case "$rc" in
    0) log "no winner changed ($out/drift.md)" ;;
    3)
        log "winners changed: re-tune the shards in $out/drift.md"
        if [ -n "$SPECTUNE_ALERT_CMD" ]; then
            SPECTUNE_DRIFT_MD="$out/drift.md" SPECTUNE_DRIFT_JSON="$out/drift.json" bash -c "$SPECTUNE_ALERT_CMD" \
                || log "alert command failed"
        fi
        ;;
    2)
        if grep -q "no run before" "$out/compare.err"; then
            log "first run of this matrix: nothing to compare yet"
            rc=0
        else
            cat "$out/compare.err" >&2
        fi
        ;;
    *) cat "$out/compare.err" >&2 ;;
esac
ln -sfn "$out" "$SPECTUNE_REPORTS/latest"
cat "$out/compare.txt"
exit "$rc"
