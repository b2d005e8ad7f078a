#!/usr/bin/env bash
# `bench`, `recipes` and `bert-recipes` with --db: each stores one run (kind, command line,
# provenance) with a row per printed result, the stored figures are the printed ones, `show` and
# `report` read them back (the classifier's accuracy-drop floor included), and a bad variant
# fails before anything is written while earlier runs stay intact.
# Usage: commands_store.sh PATH-TO-CIBENCH SHARED-DIR
set -euo pipefail
CIBENCH=$1
SHARED=${2:-${CIBENCH_SHARED:-}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
db=$tmp/r.sqlite
q() { sqlite3 "$db" "$1"; }

# bench: JSON on stdout and the store agree row for row.
"$CIBENCH" bench --models synthetic:stories260k -f f32 int8 -T 1 --prompt 8 --decode 8 --reps 3 \
  --probe-mib 16 -o json --db "$db" > "$tmp/bench.json"
[ "$(q "SELECT kind || '|' || status || '|' || model_spec FROM runs WHERE run_id = 1")" = "bench|complete|synthetic:stories260k" ] \
  || fail "bench run row: $(q 'SELECT kind, status, model_spec FROM runs')"
q "SELECT command FROM runs WHERE run_id = 1" | grep -q -- "cibench bench --models synthetic:stories260k -f f32 int8" \
  || fail "bench command line: $(q 'SELECT command FROM runs')"
[ "$(q "SELECT COUNT(*) FROM variants WHERE run_id = 1 AND status = 'ok'")" = "2" ] || fail "two bench rows"
for i in 0 1; do
  j() { sqlite3 :memory: "SELECT json_extract(readfile('$tmp/bench.json'), '\$.results[$i].$1')"; }
  # (sqlite3 prints 15 significant digits: equal to 1e-12)
  same() { echo "abs($1 / $2 - 1) < 1e-12"; }
  [ "$(q "SELECT $(same decode_tokens_per_s "$(j decode_tokens_per_s_median)") AND $(same prefill_tokens_per_s "$(j prefill_tokens_per_s_median)") AND $(same roofline_fraction "$(j decode_fraction_of_roofline)") AND weight_bytes = $(j weight_bytes) FROM variants WHERE run_id = 1 AND variant_index = $i")" = "1" ] \
    || fail "bench row $i: stored figures differ from the printed ones"
done
[ "$(q "SELECT COUNT(*) FROM variants WHERE run_id = 1 AND kl_mean IS NULL AND acc_unavailable_reason LIKE 'bench measures speed only%'")" = "2" ] \
  || fail "bench rows: accuracy is unmeasured with a reason"
"$CIBENCH" show 1 --db "$db" > "$tmp/show1"
grep -q "^command    cibench bench" "$tmp/show1" || fail "show: the command line"
grep -q "decode tok/s" "$tmp/show1" || fail "show: the bench columns"

if [ -z "$SHARED" ] || [ ! -d "$SHARED/models/stories260K" ]; then
  echo "commands_store: the shared folder is needed for recipes and bert-recipes (got '$SHARED')" >&2
  exit 1
fi
S260=$SHARED/models/stories260K
TXT=$SHARED/data/tinystories-validation-1000/tinystories_val_first1000.txt
SST=$SHARED/data/sst2-validation/SST-2-val.tsv

# recipes: the printed KL mean of each row is the stored one (5 decimals).
"$CIBENCH" recipes --model "$S260/stories260K.bin" --tokenizer "$S260/tok512.bin" --calib "$TXT:0-100" \
  --eval "$TXT:500-600" --eval-tokens 512 --samples 8 --variants rtn:int8,gptq:int4_g32 --db "$db" > "$tmp/recipes.md"
grep -q "stored as run 2" "$tmp/recipes.md" || fail "recipes: run 2 announced"
[ "$(q "SELECT COUNT(*) FROM variants WHERE run_id = 2")" = "3" ] || fail "recipes: fp32 + 2 rows"
for r in rtn gptq; do
  printed=$(grep "^| $r |" "$tmp/recipes.md" | awk -F'|' '{gsub(/ /, "", $5); print $5}')
  stored=$(q "SELECT printf('%.5f', kl_mean) FROM variants WHERE run_id = 2 AND recipe = '$r'")
  [ "$printed" = "$stored" ] || fail "recipes $r: printed KL mean $printed, stored $stored"
done
[ "$(q "SELECT json_extract(recipe_params, '\$.damp') FROM variants WHERE run_id = 2 AND recipe = 'gptq'")" = "0.01" ] \
  || fail "recipes: gptq parameters stored"
[ "$(q "SELECT json_extract(calibration, '\$.slice') FROM variants WHERE run_id = 2 AND recipe = 'gptq'")" = "$TXT:0-100" ] \
  || fail "recipes: calibration slice stored: $(q "SELECT calibration FROM variants WHERE run_id = 2 AND recipe = 'gptq'")"
[ "$(q "SELECT calib_rel_err < rtn_calib_rel_err FROM variants WHERE run_id = 2 AND recipe = 'gptq'")" = "1" ] \
  || fail "recipes: gptq's calibration error below RTN's"

# bert-recipes: rows, the floor as a typed floor of the run, and the report judging by it.
"$CIBENCH" bert-recipes -m "$SHARED/models/bert-tiny-sst2" --calib "$SST:perm=1234:0-32" \
  --eval "$SST:perm=1234:128-228" --variants rtn:int8 --sparsities 0.7 --sparse-variants prune:f32 \
  --reps 1 --warmup 2 --resamples 1000 --max-drop 1 --db "$db" > "$tmp/bert.md"
[ "$(q "SELECT kind FROM runs WHERE run_id = 3")" = "bert-recipes" ] || fail "bert-recipes kind"
[ "$(q "SELECT json_extract(floors_json, '\$[0].key') || ' ' || json_extract(floors_json, '\$[0].bound') FROM runs WHERE run_id = 3")" = "max_accuracy_drop -0.01" ] \
  || fail "bert-recipes floor: $(q 'SELECT floors_json FROM runs WHERE run_id = 3')"
[ "$(q "SELECT COUNT(*) FROM variants WHERE run_id = 3 AND task_accuracy IS NOT NULL AND accuracy_delta_lo <= accuracy_delta AND accuracy_delta <= accuracy_delta_hi AND latency_p50_ms > 0 AND ref_latency_p50_ms > 0")" = "3" ] \
  || fail "bert-recipes: 3 rows with accuracy, interval and timings"
[ "$(q "SELECT recipe IS NULL AND sparsity = 0.7 FROM variants WHERE run_id = 3 AND label = 'prune f32 sp0.7'")" = "1" ] \
  || fail "bert-recipes: pruning alone stored without a recipe"
printed=$(grep "^| rtn | int8 |" "$tmp/bert.md" | awk -F'|' '{gsub(/ /, "", $15); print $15}')
[ "$printed" = "$(q "SELECT quality_verdict FROM variants WHERE run_id = 3 AND recipe = 'rtn'")" ] \
  || fail "bert-recipes: printed verdict $printed differs from the stored one"
"$CIBENCH" report 3 --db "$db" --out "$tmp/rep" > /dev/null
grep -q "quality floor accuracy_delta &gt;= -0.01 (max_accuracy_drop = 0.01): [0-9]* of [0-9]* variants meet it" "$tmp/rep/report.md" \
  || fail "report: the stored floor on the accuracy delta: $(grep -m1 -i 'quality floor' "$tmp/rep/report.md")"
grep -q '`cibench bert-recipes -m' "$tmp/rep/report.md" || fail "report: the command line names the run"

# A bad variant: an error naming it, nothing new stored, earlier runs intact.
before=$(q "SELECT COUNT(*) || '/' || (SELECT COUNT(*) FROM variants) FROM runs")
if "$CIBENCH" recipes --model "$S260/stories260K.bin" --tokenizer "$S260/tok512.bin" --calib "$TXT:0-100" \
     --eval "$TXT:500-600" --variants rtn:int8,optq:int4_g32 --db "$db" > "$tmp/o" 2> "$tmp/e"; then
  fail "an unknown recipe was accepted"
fi
grep -q "variant 'optq:int4_g32'" "$tmp/e" || fail "the error names the variant: $(cat "$tmp/e")"
[ "$(q "SELECT COUNT(*) || '/' || (SELECT COUNT(*) FROM variants) FROM runs")" = "$before" ] || fail "a failed command wrote rows"
echo "commands_store: ok"
