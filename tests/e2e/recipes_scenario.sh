#!/usr/bin/env bash
# End to end: the recipe-comparison scenario shortened (recipes x formats on stories260K with a
# calibration slice and a disjoint held-out accuracy slice), then a .cbq quantised by
# `cibench quantize` run as a scenario's model against its FP32 source; a source-model hash
# mismatch and an overlapping calibration slice are refused before anything is stored.
# Usage: recipes_scenario.sh PATH-TO-CIBENCH SHARED-DIR
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
text=$CIBENCH_SHARED/data/tinystories-validation-1000/tinystories_val_first1000.txt
short=(--set run.min_duration_ms=200 --set run.min_queries=4 --set run.warmup_queries=1
       --set workload.gen_tokens=8 --set accuracy.max_tokens=512 --set accuracy.window=64
       --set calibration.samples=8 --set calibration.seq_len=64)

"$CIBENCH" run "$here/scenarios/recipes-stories260k.toml" --db "$db" \
  --set 'matrix.format=["w8a8_static","int4_g32"]' --set 'matrix.recipe=["rtn","gptq","smoothquant:alpha=0.6"]' \
  --set 'matrix.sparsity=[0.0]' "${short[@]}" >"$tmp/run.txt" 2>&1 || { cat "$tmp/run.txt"; fail "recipes run"; }

grep -q "skipped (not run): smoothquant:alpha=0.6 x int4_g32: smoothquant" "$tmp/run.txt" || fail "skip reason not stated"
[ "$(q 'SELECT status FROM runs')" = "complete" ] || fail "run status"
[ "$(q "SELECT COUNT(*) FROM variants WHERE status = 'ok'")" = "5" ] || fail "5 variants ok"
[ "$(q "SELECT GROUP_CONCAT(recipe || '/' || format, ' ') FROM (SELECT recipe, format FROM variants ORDER BY variant_index)")" = \
  "rtn/w8a8_static gptq/w8a8_static smoothquant/w8a8_static rtn/int4_g32 gptq/int4_g32" ] || fail "recipe per variant"
[ "$(q "SELECT json_extract(recipe_params, '\$.alpha') FROM variants WHERE recipe = 'smoothquant'")" = "0.6" ] || fail "params"
[ "$(q "SELECT json_extract(recipe_params, '\$.damp') FROM variants WHERE recipe = 'gptq' AND format = 'int4_g32'")" = "0.01" ] \
  || fail "default params recorded"
[ "$(q "SELECT COUNT(DISTINCT json_extract(calibration, '\$.token_hash')) FROM variants")" = "1" ] || fail "one calibration"
q "SELECT json_extract(calibration, '\$.slice') FROM variants LIMIT 1" | grep -q "tinystories_val_first1000.txt:0-500" \
  || fail "calibration slice"
[ "$(q "SELECT label FROM variants WHERE recipe = 'gptq' AND format = 'int4_g32'")" = "int4_g32 gptq t1 w1" ] || fail "label"
[ "$(q "SELECT COUNT(*) FROM variants WHERE kl_mean > 0 AND top1_agreement > 0.5 AND ppl_ratio > 0.9 AND quality_verdict IN ('pass','fail')")" = "5" ] \
  || fail "accuracy per variant"
q "SELECT acc_eval_set FROM variants LIMIT 1" | grep -q ":500-1000" || fail "held-out slice"
# GPTQ beats RTN at int4 on held-out text (mean KL), as in docs/recipes.md.
[ "$(q "SELECT (SELECT kl_mean FROM variants WHERE recipe='gptq' AND format='int4_g32') < (SELECT kl_mean FROM variants WHERE recipe='rtn' AND format='int4_g32')")" = "1" ] \
  || fail "gptq int4 KL not below rtn"

# A .cbq as the model, checked against its FP32 source.
"$CIBENCH" quantize -m "$CIBENCH_SHARED/models/stories260K/stories260K.bin" -z "$CIBENCH_SHARED/models/stories260K/tok512.bin" \
  -r smoothquant -f w8a8_static --calib "$text:0-200" --eval "$text:500-1000" --samples 8 --seq-len 64 \
  --out "$tmp/sq.cbq" >/dev/null || fail "quantize"
if "$CIBENCH" run "$here/scenarios/recipes-stories260k.toml" --db "$db" -q \
    --set "model.source=$tmp/sq.cbq" --set model.source_model=models/stories260K/stories260K.bin \
    --set 'matrix.format=["w8a8_static"]' --set 'matrix.recipe=["none"]' --set 'matrix.sparsity=[0.0]' \
    2>"$tmp/cbq.err"; then
  fail "cbq + [calibration] accepted"
fi
# [calibration] is refused for a .cbq (it records its own): run it without the table.
grep -q "records its own calibration" "$tmp/cbq.err" || { cat "$tmp/cbq.err"; fail "cbq + [calibration] message"; }
sed '/^\[calibration\]/,/^$/d' "$here/scenarios/recipes-stories260k.toml" >"$tmp/cbq.toml"
"$CIBENCH" run "$tmp/cbq.toml" --db "$db" -q \
  --set "model.source=$tmp/sq.cbq" --set model.source_model=models/stories260K/stories260K.bin \
  --set 'matrix.format=["w8a8_static"]' --set 'matrix.recipe=["none"]' --set 'matrix.sparsity=[0.0]' \
  --set run.min_duration_ms=200 --set run.min_queries=4 --set run.warmup_queries=1 \
  --set workload.gen_tokens=8 --set accuracy.max_tokens=512 --set accuracy.window=64 || fail "cbq run"
[ "$(q "SELECT status || ' ' || recipe || ' ' || format FROM variants WHERE quantized_file IS NOT NULL")" = "ok smoothquant w8a8_static" ] \
  || fail "cbq variant"
[ "$(q "SELECT json_extract(recipe_params, '\$.alpha') || ' ' || json_extract(calibration, '\$.samples') FROM variants WHERE quantized_file IS NOT NULL")" = "0.5 8" ] \
  || fail "cbq recipe record"
[ "$(q "SELECT kl_mean > 0 AND acc_kind = 'f32 reference on eval text' FROM variants WHERE quantized_file IS NOT NULL")" = "1" ] \
  || fail "cbq accuracy against the FP32 source"
[ "$(q "SELECT model_hash FROM runs ORDER BY run_id DESC LIMIT 1")" = \
  "$(q "SELECT model_hash FROM runs ORDER BY run_id LIMIT 1")" ] || fail "cbq run records the FP32 source hash"

# Wrong source model: refused naming the file and both hashes; nothing stored.
runs_before=$(q 'SELECT COUNT(*) FROM runs')
if "$CIBENCH" run "$tmp/cbq.toml" --db "$db" -q --set "model.source=$tmp/sq.cbq" \
    --set model.source_model=models/stories5M/stories5M.bin --set 'matrix.format=["w8a8_static"]' \
    --set 'matrix.recipe=["none"]' --set 'matrix.sparsity=[0.0]' 2>"$tmp/err.txt"; then
  fail "hash mismatch accepted"
fi
grep -q "sq.cbq" "$tmp/err.txt" || fail "mismatch message names the file"
[ "$(grep -o 'xxh64:[0-9a-f]*' "$tmp/err.txt" | sort -u | wc -l)" -ge 2 ] || { cat "$tmp/err.txt"; fail "both hashes"; }
[ "$(q 'SELECT COUNT(*) FROM runs')" = "$runs_before" ] || fail "a refused scenario stored a run"

# Calibration overlapping the accuracy slice: refused before anything is stored.
if "$CIBENCH" run "$here/scenarios/recipes-stories260k.toml" --db "$db" -q \
    --set 'calibration.slice="data/tinystories-validation-1000/tinystories_val_first1000.txt:400-600"' \
    2>"$tmp/overlap.txt"; then
  fail "overlap accepted"
fi
grep -q "calibration.slice" "$tmp/overlap.txt" || { cat "$tmp/overlap.txt"; fail "overlap message"; }
[ "$(q 'SELECT COUNT(*) FROM runs')" = "$runs_before" ] || fail "a refused scenario stored a run"
echo "ok"
