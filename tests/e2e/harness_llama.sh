#!/usr/bin/env bash
# End to end on the real engine: a short format sweep of stories260K (f32 and int8) on TinyStories
# text. Checks the stored rows: status, accuracy against the f32 build (f32: KL 0 and top-1 1;
# int8: KL > 0), counters stored as values or as unavailable with a reason (never both, never a
# silent zero), request rows, provenance; then show/compare/export on the result, and the
# quickstart scenario (synthetic default) shortened with --set.
# Usage: harness_llama.sh PATH-TO-CIBENCH SHARED-DIR
set -euo pipefail
CIBENCH=$1
export CIBENCH_SHARED=${2:-${CIBENCH_SHARED:-}}
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/r.sqlite
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { sqlite3 "$db" "$1"; }

if [ ! -e "$CIBENCH_SHARED/models/stories260K/stories260K.bin" ]; then
  [ -n "${CI:-}" ] && fail "missing $CIBENCH_SHARED/models/stories260K"
  echo "skip: no shared models"; exit 0
fi

"$CIBENCH" run "$here/scenarios/format-sweep.toml" --db "$db" -q \
  --set model.source=models/stories260K/stories260K.bin --set model.tokenizer=models/stories260K/tok512.bin \
  --set 'matrix.format=["f32","int8"]' --set run.min_duration_ms=300 --set run.min_queries=4 \
  --set run.warmup_queries=1 --set accuracy.max_tokens=256 --set accuracy.window=64 \
  --set 'workload.gen_tokens=8'

[ "$(q 'SELECT status FROM runs')" = "complete" ] || fail "run status"
[ "$(q "SELECT COUNT(*) FROM variants WHERE status = 'ok'")" = "2" ] || fail "variants ok"
[ "$(q "SELECT acc_kind FROM variants WHERE format = 'f32'")" = "f32 reference on eval text" ] || fail "acc_kind"
[ "$(q "SELECT kl_mean = 0 AND top1_agreement = 1 AND ppl_ratio = 1 FROM variants WHERE format = 'f32'")" = "1" ] \
  || fail "f32 against itself"
[ "$(q "SELECT kl_mean > 0 AND top1_agreement <= 1 AND ppl > 1 FROM variants WHERE format = 'int8'")" = "1" ] \
  || fail "int8 accuracy"
[ "$(q "SELECT quality_verdict IN ('pass','fail') FROM variants WHERE format = 'int8'")" = "1" ] || fail "verdict"
[ "$(q "SELECT COUNT(*) FROM requests r JOIN variants v USING (variant_id) WHERE v.format = 'int8'")" = \
  "$(q "SELECT queries FROM variants WHERE format = 'int8'")" ] || fail "request rows"
[ "$(q "SELECT COUNT(*) FROM variants WHERE ttft_p50_ms > 0 AND tpot_p50_ms > 0 AND tokens_per_s > 0")" = "2" ] \
  || fail "generation metrics"
[ "$(q "SELECT COUNT(*) FROM counters WHERE (value IS NULL) = (unavailable_reason IS NULL)")" = "0" ] \
  || fail "counter rows with both or neither of value and reason"
[ "$(q "SELECT COUNT(*) FROM counters WHERE phase = 'decode' AND name = 'task_clock_ms'")" -ge 1 ] || fail "phases"
if [ "$(q "SELECT COUNT(*) FROM counters WHERE name = 'cycles' AND value IS NULL")" -ge 1 ]; then
  q "SELECT unavailable_reason FROM counters WHERE name = 'cycles' AND scope = 'total' LIMIT 1" | grep -q . \
    || fail "cycles unavailable without a reason"
fi
[ "$(q "SELECT model_hash IS NOT NULL AND cibench_commit IS NOT NULL AND cpu_model IS NOT NULL AND kernel IS NOT NULL FROM runs")" = "1" ] \
  || fail "provenance"
[ "$(q "SELECT COUNT(*) FROM variants WHERE isa_used IS NOT NULL AND weight_bytes > 0")" = "2" ] || fail "isa/weights"

"$CIBENCH" show last --db "$db" >"$tmp/show.txt" || fail "show"
grep -q "int8 t1 w1" "$tmp/show.txt" || fail "show output"
"$CIBENCH" export last --db "$db" --format csv >"$tmp/v.csv"
[ "$(wc -l <"$tmp/v.csv")" = "3" ] || fail "csv rows"
"$CIBENCH" export last --db "$db" --format json >"$tmp/v.json"
grep -q '"acc_kind"' "$tmp/v.json" || fail "json export"

# The synthetic default, shortened: runs without any file.
"$CIBENCH" run "$here/scenarios/quickstart.toml" --db "$db" -q --json \
  --set 'matrix.threads=[1]' --set run.min_duration_ms=300 --set run.max_duration_ms=5000 --set run.min_queries=2 \
  --set run.warmup_queries=0 --set load.target_qps=4 --set workload.gen_tokens=4 --set accuracy.max_tokens=16 \
  --set accuracy.window=16 >"$tmp/quick.json"
grep -q '"acc_kind": "fidelity on random weights"' "$tmp/quick.json" || fail "synthetic accuracy kind"
"$CIBENCH" compare last last --db "$db" --json >"$tmp/cmp.json" || fail "compare"
grep -q '"verdict": "no significant difference"' "$tmp/cmp.json" || fail "compare of a run with itself"
echo "harness_llama: ok"
