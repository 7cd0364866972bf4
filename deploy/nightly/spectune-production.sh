#!/usr/bin/env bash
# spectune production drift: (optionally) one fresh watch round, then `analysis drift` over the last day of
# production counters, a report (JSON + text), and an alert when a segment's winner changed or its production
# acceptance left the benchmark band (the JSON's "alert" lists both). See docs/nightly.md
# and docs/watch.md. The watcher itself runs continuously (spectune-watch.service), or here with --once.
#
# Exit codes: 0 no alert, 3 a winner changed or acceptance left the band (alert sent), 2 bad input/usage,
# 1 unexpected failure.
set -euo pipefail

SPECTUNE_HOME="${SPECTUNE_HOME:-/opt/spectune}"
SPECTUNE_PYTHON="${SPECTUNE_PYTHON:-python3}"
SPECTUNE_TARGETS="${SPECTUNE_TARGETS:-}"                            # targets file; empty: no watch round here
SPECTUNE_REPORTS="${SPECTUNE_REPORTS:-/var/lib/spectune/reports}"
SPECTUNE_PRODUCTION_SINCE="${SPECTUNE_PRODUCTION_SINCE:-$(date -u -d '24 hours ago' +%s)}"  # ISO 8601 or unix s
SPECTUNE_PRODUCTION_WINDOW_S="${SPECTUNE_PRODUCTION_WINDOW_S:-3600}"
SPECTUNE_METRIC="${SPECTUNE_METRIC:-output_throughput}"
SPECTUNE_ALERT_CMD="${SPECTUNE_ALERT_CMD:-}"   # sees $SPECTUNE_DRIFT_JSON and $SPECTUNE_DRIFT_TXT (and _MD = _TXT)

cd "$SPECTUNE_HOME"
stamp="$(date -u +%Y%m%dT%H%M%SZ)"
out="$SPECTUNE_REPORTS/production-$stamp"
mkdir -p "$out"
log() { printf '%s spectune-production: %s\n' "$(date -u +%FT%TZ)" "$*"; }

if [ -n "$SPECTUNE_TARGETS" ]; then
    log "one watch round over $SPECTUNE_TARGETS"
    # A dead target is a warning, not a failure: the round lands what the others gave.
    "$SPECTUNE_PYTHON" -m ingest watch "$SPECTUNE_TARGETS" --once --json >"$out/watch.json" 2>"$out/watch.err"
fi

set +e
"$SPECTUNE_PYTHON" -m analysis drift --since "$SPECTUNE_PRODUCTION_SINCE" --window "$SPECTUNE_PRODUCTION_WINDOW_S" \
    --metric "$SPECTUNE_METRIC" --json >"$out/production.json" 2>"$out/drift.err"
rc=$?
if [ "$rc" = 0 ] || [ "$rc" = 3 ]; then  # the same report as text, from the JSON (no second re-scoring)
    "$SPECTUNE_PYTHON" -c 'import json, sys; from spectune.commands.production import print_drift
print_drift(json.load(open(sys.argv[1])))' "$out/production.json" >"$out/production.txt"
fi
set -e
case "$rc" in
    0) log "no segment's winner changed and acceptance is within the benchmark band ($out/production.txt)" ;;
    3)
        log "alert: a segment's winner changed, or its acceptance left the benchmark band: $out/production.txt"
        if [ -n "$SPECTUNE_ALERT_CMD" ]; then
            SPECTUNE_DRIFT_JSON="$out/production.json" SPECTUNE_DRIFT_TXT="$out/production.txt" \
                SPECTUNE_DRIFT_MD="$out/production.txt" bash -c "$SPECTUNE_ALERT_CMD" || log "alert command failed"
        fi
        ;;
    *) cat "$out/drift.err" >&2 ;;
esac
ln -sfn "$out" "$SPECTUNE_REPORTS/production-latest"
cat "$out/production.txt" 2>/dev/null || true
exit "$rc"
