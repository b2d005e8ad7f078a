#!/usr/bin/env bash
# End to end on a real classifier: the sweep scenario shortened to bert-tiny-sst2 (f32 and int8,
# 1x2 and 2x1, cache off and on) at one server rate, and a padded + batched variant. Checks the
# stored rows with sqlite3: status, accuracy per format (f32 against itself: delta 0, agreement
# 1; int8: an interval around its delta), cache counts (off: NULL, on: hits + misses = queries),
# the duplicate rate of the issued Zipf traffic, and the classifier table of `cibench show`.
# Usage: classifier_tiny.sh PATH-TO-CIBENCH SHARED-DIR
set -euo pipefail
CIBENCH=$1
export CIBENCH_SHARED=${2:-${CIBENCH_SHARED:-}}
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/r.sqlite
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { sqlite3 "$db" "$1"; }

if [ ! -e "$CIBENCH_SHARED/models/bert-tiny-sst2/model.safetensors" ] || \
   [ ! -e "$CIBENCH_SHARED/data/sst2-validation/SST-2-val.tsv" ]; then
  [ -n "${CI:-}" ] && fail "missing $CIBENCH_SHARED/models/bert-tiny-sst2 or data/sst2-validation"
  echo "skip: no shared models"; exit 0
fi

"$CIBENCH" run "$here/scenarios/classifier-sweep.toml" --db "$db" -q \
  --set model.source=models/bert-tiny-sst2 --set 'matrix.format=["f32","int8"]' \
  --set load.pattern=server --set load.target_qps=100 --set 'load.rates_qps=[]' --set run.min_duration_ms=600 \
  --set run.min_queries=60 --set accuracy.bootstrap_resamples=200 \
  --set 'slo.p99_ms=10000' --set 'slo.p50_ms=10000'

[ "$(q 'SELECT status FROM runs')" = "complete" ] || fail "run status"
[ "$(q "SELECT COUNT(*) FROM variants WHERE status = 'ok'")" = "8" ] || fail "8 variants ok"
[ "$(q "SELECT COUNT(DISTINCT workers || 'x' || threads) FROM variants")" = "2" ] || fail "layouts"
# Accuracy per format: all 872 labelled sentences; f32 is the reference.
[ "$(q "SELECT COUNT(*) FROM variants WHERE acc_tokens = 872 AND task_accuracy BETWEEN 0.5 AND 1 AND macro_f1 > 0")" = "8" ] \
  || fail "task accuracy on 872 sentences"
[ "$(q "SELECT COUNT(*) FROM variants WHERE format = 'f32' AND accuracy_delta = 0 AND accuracy_delta_lo = 0 AND accuracy_delta_hi = 0 AND top1_agreement = 1")" = "4" ] \
  || fail "f32 against itself"
[ "$(q "SELECT COUNT(*) FROM variants WHERE format = 'int8' AND accuracy_delta_lo <= accuracy_delta AND accuracy_delta <= accuracy_delta_hi AND task_accuracy_lo < task_accuracy_hi AND bootstrap_resamples = 200")" = "4" ] \
  || fail "int8 intervals"
[ "$(q "SELECT COUNT(*) FROM variants WHERE quality_verdict IN ('pass', 'fail') AND quality_reasons LIKE '%accuracy drop%'")" = "8" ] \
  || fail "verdict against max_accuracy_drop"
# The same accuracy for every variant of a format.
[ "$(q "SELECT COUNT(DISTINCT task_accuracy) FROM variants GROUP BY format" | sort -u)" = "1" ] || fail "accuracy per format"
# Cache: off -> NULL counts; on -> hits + misses = queries, some hits under Zipf traffic.
[ "$(q "SELECT COUNT(*) FROM variants WHERE cache_enabled = 0 AND cache_hits IS NULL AND cache_hit_rate IS NULL")" = "4" ] \
  || fail "cache off"
[ "$(q "SELECT COUNT(*) FROM variants WHERE cache_enabled = 1 AND cache_hits + cache_misses = queries AND cache_hits > 0 AND cache_entries <= 512 AND cache_bytes > 0")" = "4" ] \
  || fail "cache on"
# Traffic: Zipf duplicates, measured and expected both recorded and close.
[ "$(q "SELECT COUNT(*) FROM variants WHERE traffic LIKE 'zipf s=1.1%' AND duplicate_rate > 0.2 AND abs(duplicate_rate - expected_duplicate_rate) < 0.1")" = "8" ] \
  || fail "duplicate rate"
[ "$(q "SELECT COUNT(*) FROM requests r JOIN variants v USING (variant_id) WHERE r.prompt_tokens < 3")" = "0" ] \
  || fail "request rows carry the sentence's token count"
"$CIBENCH" show last --db "$db" >"$tmp/show.txt" || fail "show"
grep -q "hit rate" "$tmp/show.txt" || fail "show: classifier table"
grep -q "int8 t1 w2 cache=512" "$tmp/show.txt" || fail "show: labels"

# Padded shapes and harness-formed batches on the same model, offline.
"$CIBENCH" run "$here/scenarios/classifier-sweep.toml" --db "$db" -q \
  --set model.source=models/bert-tiny-sst2 --set 'matrix.format=["f32"]' --set 'matrix.layout=["1x2"]' \
  --set 'matrix.shapes=["padded"]' --set 'matrix.max_batch=[4]' --set 'matrix.cache=[false]' \
  --set classifier.pad_to=80 --set classifier.max_wait_ms=2 --set load.pattern=offline --set 'load.rates_qps=[]' \
  --set run.min_queries=40 --set run.min_duration_ms=0 --set accuracy.bootstrap_resamples=50
[ "$(q "SELECT shape || ' ' || pad_to || ' ' || max_batch || ' ' || (batches = 10) FROM variants WHERE run_id = 2")" = "padded 80 4 1" ] \
  || fail "padded batches: $(q "SELECT shape, pad_to, max_batch, batches FROM variants WHERE run_id = 2")"
# A pad_to shorter than the longest sentence is refused before anything is written.
if "$CIBENCH" run "$here/scenarios/classifier-sweep.toml" --db "$db" -q --set model.source=models/bert-tiny-sst2 \
  --set 'matrix.shapes=["padded"]' --set classifier.pad_to=16 2>"$tmp/err.txt"; then fail "pad_to 16 accepted"; fi
grep -q "classifier.pad_to" "$tmp/err.txt" || fail "pad_to error: $(cat "$tmp/err.txt")"
[ "$(q 'SELECT COUNT(*) FROM runs')" = "2" ] || fail "a refused scenario wrote a run"
echo "ok"
