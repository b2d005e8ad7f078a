#!/usr/bin/env bash
# A decoder scenario with a task file ([accuracy] task = ...): stories260K in f32 and int4_g32 on
# the first 40 items of the shipped TinyStories cloze; every variant stores the task metric with
# its bootstrap interval, the f32 reference none of the paired columns, int4_g32 its delta with a
# paired interval and McNemar's p; `cibench show` prints them. Then bad task files: a malformed
# line, an answer outside the choices, an empty file, an item longer than the model's context,
# a metric of the wrong kind: each refused naming file:line (or the key) and nothing stored.
# Usage: task_accuracy.sh PATH-TO-CIBENCH SHARED-DIR
set -euo pipefail
CIBENCH=$1
SHARED=${2:-}
[ -n "$SHARED" ] && [ -f "$SHARED/models/stories260K/stories260K.bin" ] || { echo "no stories260K in '$SHARED'" >&2; exit 77; }
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
db=$tmp/r.sqlite
scenario() {  # TASK [EXTRA accuracy lines]
  cat >"$tmp/s.toml" <<EOF
[scenario]
name = "task-e2e"
[model]
source = "$SHARED/models/stories260K/stories260K.bin"
tokenizer = "$SHARED/models/stories260K/tok512.bin"
[matrix]
format = ["f32", "int4_g32"]
[workload]
source = "synthetic"
prompt_tokens = { dist = "uniform", min = 8, max = 16 }
gen_tokens = 8
[load]
pattern = "closed_loop"
[run]
min_queries = 4
min_duration_ms = 200
max_duration_ms = 4000
[accuracy]
max_tokens = 64
window = 32
task = "$1"
task_limit = 40
max_accuracy_drop = 0.05
$2
[counters]
enabled = false
EOF
}
q() { python3 -c 'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); print("\n".join("|".join("" if v is None else str(v) for v in r) for r in c.execute(sys.argv[2])))' "$db" "$1"; }

scenario "$repo/scenarios/tasks/tinystories-cloze.jsonl" 'task_metric = "acc"'
"$CIBENCH" run "$tmp/s.toml" --db "$db" -q || fail "run"
rows=$(q "SELECT format, task_metric, task_items, task_format, task_accuracy IS NOT NULL, task_accuracy_lo <= task_accuracy AND task_accuracy <= task_accuracy_hi, accuracy_delta IS NULL, task_mcnemar_p IS NULL, task_items_per_s > 0 FROM variants ORDER BY variant_index")
expect=$'f32|acc|40|cibench-mc|1|1|1|1|1\nint4_g32|acc|40|cibench-mc|1|1|0|0|1'
[ "$rows" = "$expect" ] || fail "stored task columns: got
$rows
expected
$expect"
[ "$(q "SELECT accuracy_delta_lo <= accuracy_delta AND accuracy_delta <= accuracy_delta_hi AND task_mcnemar_p > 0 AND task_mcnemar_p <= 1 AND ref_task_accuracy = (SELECT task_accuracy FROM variants WHERE format = 'f32') FROM variants WHERE format = 'int4_g32'")" = 1 ] ||
  fail "int4_g32's delta, interval and p"
"$CIBENCH" show last --db "$db" >"$tmp/show.txt" || fail "show"
grep -q "^task (acc, 40 items of" "$tmp/show.txt" || fail "show: no task table: $(cat "$tmp/show.txt")"
grep -q "McNemar p" "$tmp/show.txt" || fail "show: no McNemar column"
# The report: the task delta as the trade-off's quality axis, the task table with its metric and p.
"$CIBENCH" report last --db "$db" --out "$tmp/report" >/dev/null || fail "report"
grep -q "task accuracy delta vs the reference" "$tmp/report/report.md" || fail "report: not the task delta as quality axis"
grep -qF '| variant | task accuracy \[95% CI\] | reference accuracy | delta vs reference \[95% CI\] | metric | items | McNemar p | top-1 agreement |' "$tmp/report/report.md" ||
  fail "report: the task table: $(grep -n 'task accuracy' "$tmp/report/report.md" | head -3)"

# Bad task files: a clear error naming the file and line, nothing stored.
runs_before=$(q "SELECT COUNT(*) FROM runs")
bad() {  # CONTENT EXPECTED-TEXT [EXTRA]
  printf '%s' "$1" >"$tmp/bad.jsonl"
  scenario "$tmp/bad.jsonl" "${3:-}"
  set +e
  "$CIBENCH" run "$tmp/s.toml" --db "$db" -q >"$tmp/err.txt" 2>&1
  local st=$?
  set -e
  [ "$st" != 0 ] || fail "a bad task file ran: $1"
  grep -qF "$2" "$tmp/err.txt" || fail "expected '$2' in: $(cat "$tmp/err.txt")"
}
ok='{"context": "Tom has a ball.", "choices": ["He kicks it.", "The sky eats."], "answer": 0}'
bad "$ok"$'\n{"context": "a", "choices": ["b", "c"], "answer": 0'$'\n' "bad.jsonl:2: not a JSON object"
bad '{"context": "a", "choices": ["b", "c"], "answer": 5}'$'\n' "bad.jsonl:1: \"answer\" is 5, outside the 2 choices"
bad '{"context": "a", "choices": ["b", ""], "answer": 0}'$'\n' "bad.jsonl:1: \"choices\"[1] is empty"
bad '' "bad.jsonl: no items (an empty task file)"
long=$(python3 -c 'print("Tom ran far. " * 300)')
bad "$ok"$'\n{"context": "'"$long"'", "choices": ["b", "c"], "answer": 0}'$'\n' "bad.jsonl:2: the item needs"
bad "$ok"$'\n' "'exact_match' is not a metric of a multiple_choice task" 'task_metric = "exact_match"'
[ "$(q "SELECT COUNT(*) FROM runs")" = "$runs_before" ] || fail "a refused scenario stored a run"

# cibench recipes --task: every recipe scored on the items beside KL, ranked by the task delta.
T=$SHARED/data/tinystories-validation-1000/tinystories_val_first1000.txt
head -40 "$repo/scenarios/tasks/tinystories-cloze.jsonl" >"$tmp/cloze40.jsonl"
"$CIBENCH" recipes -m "$SHARED/models/stories260K/stories260K.bin" -z "$SHARED/models/stories260K/tok512.bin" \
  --calib "$T:0-50" --eval "$T:500-550" --eval-tokens 256 --samples 8 --variants rtn:int4_g32,rtn:int8 \
  --task "$tmp/cloze40.jsonl" --task-metric acc --db "$db" >"$tmp/recipes.txt" || fail "recipes --task"
grep -q "recipes ranked by the task delta against fp32 (acc), KL beside" "$tmp/recipes.txt" || fail "no ranking: $(cat "$tmp/recipes.txt")"
[ "$(grep -c '^| [12] | rtn ' "$tmp/recipes.txt")" = 2 ] || fail "two recipes ranked: $(cat "$tmp/recipes.txt")"
[ "$(q "SELECT COUNT(*) FROM variants v JOIN runs r USING (run_id) WHERE r.kind = 'recipes' AND v.task_items = 40 AND v.task_metric = 'acc'")" = 3 ] ||
  fail "the recipes' task columns"
[ "$(q "SELECT COUNT(*) FROM variants v JOIN runs r USING (run_id) WHERE r.kind = 'recipes' AND v.task_mcnemar_p IS NOT NULL")" = 2 ] ||
  fail "McNemar's p of the two recipes"
echo PASS
