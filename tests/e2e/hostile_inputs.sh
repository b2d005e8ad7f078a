#!/usr/bin/env bash
# Hostile inputs to the command line, each refused with a clear error naming what is wrong, fast,
# without a crash, a hang or a change to a stored run: deep TOML, FIFOs and folders as files,
# another program's database, bad run references, generation past the context, negative limits.
# Usage: hostile_inputs.sh PATH-TO-CIBENCH [SHARED-DIR]
set -uo pipefail
CIBENCH=$1
SHARED=${2:-${CIBENCH_SHARED:-}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fails=0
# expect_error NAME PATTERN -- command...: a failing exit status that is not a signal (1, or CLI11's
# codes for a bad option), within 20 s, with stderr matching PATTERN.
expect_error() {
  local name=$1 pattern=$2
  shift 3
  timeout 20 "$@" > "$tmp/out" 2> "$tmp/err"
  local rc=$?
  if [ $rc -eq 124 ]; then echo "FAIL $name: hung (killed after 20 s)"; fails=$((fails + 1)); return; fi
  if [ $rc -eq 0 ] || [ $rc -ge 128 ]; then echo "FAIL $name: exit $rc: $(head -c 300 "$tmp/err")"; fails=$((fails + 1)); return; fi
  if ! grep -q -- "$pattern" "$tmp/err" "$tmp/out"; then
    echo "FAIL $name: no '$pattern' in: $(head -c 300 "$tmp/err")"; fails=$((fails + 1)); return
  fi
  echo "ok   $name"
}
db=$tmp/r.sqlite
"$CIBENCH" run "$(dirname "$0")/../../scenarios/quickstart.toml" --db "$db" --set model.source=sut:null \
  --set run.min_duration_ms=50 --set run.min_queries=2 > /dev/null 2>&1 || { echo "FAIL setup run"; exit 1; }
before=$(sqlite3 "$db" "SELECT COUNT(*), MAX(run_id) FROM runs; SELECT COUNT(*) FROM variants")

python3 -c "print('[' + '.'.join(['t'] * 40000) + ']\nx = 1')" > "$tmp/deep.toml"
expect_error deep-header "deep.toml:1:33: a key or table header of more than 16 dotted parts" -- "$CIBENCH" run "$tmp/deep.toml" --db "$db"
expect_error deep-set "more than 16 dotted parts" -- "$CIBENCH" run "$tmp/deep.toml" --db "$db" --set "$(python3 -c "print('.'.join(['a'] * 40000))")=1"
python3 -c "print('x = ' + '[' * 100000 + ']' * 100000)" > "$tmp/nest.toml"
expect_error deep-arrays "nested more than 32 deep" -- "$CIBENCH" run "$tmp/nest.toml" --db "$db"
mkfifo "$tmp/fifo.toml" "$tmp/fifo.bin" "$tmp/fifo.sqlite"
expect_error fifo-scenario "fifo.toml: not a regular file (a FIFO" -- "$CIBENCH" run "$tmp/fifo.toml" --db "$db"
expect_error folder-scenario "not a regular file (a folder)" -- "$CIBENCH" run "$tmp" --db "$db"
expect_error fifo-model "fifo.bin: is a FIFO, expected a regular file" -- "$CIBENCH" generate -m "$tmp/fifo.bin" -n 4
expect_error fifo-db "not a regular file" -- "$CIBENCH" list --db "$tmp/fifo.sqlite"
sqlite3 "$tmp/other.sqlite" "CREATE TABLE people (name TEXT); INSERT INTO people VALUES ('a');"
expect_error foreign-db "not a cibench results database (schema version 0 with tables people)" -- "$CIBENCH" list --db "$tmp/other.sqlite"
[ "$(sqlite3 "$tmp/other.sqlite" "SELECT group_concat(name) FROM sqlite_master; PRAGMA journal_mode")" = "$(printf 'people\ndelete')" ] \
  || { echo "FAIL foreign-db: the other database was changed"; fails=$((fails + 1)); }
sqlite3 "$tmp/neg.sqlite" "PRAGMA user_version = -1; CREATE TABLE runs (x);"
expect_error negative-version "user_version is -1, which no cibench writes" -- "$CIBENCH" list --db "$tmp/neg.sqlite"
expect_error show-last-negative "expected a run id, 'last' or 'last~N' with N >= 0" -- "$CIBENCH" show 'last~-1' --db "$db"
expect_error show-zero "expected a run id" -- "$CIBENCH" show 0 --db "$db"
expect_error report-last-word "expected a run id" -- "$CIBENCH" report 'last~x' --db "$db" --out "$tmp/rep"
expect_error list-limit "limit" -- "$CIBENCH" list --limit -1 --db "$db"
expect_error max-context "max-context" -- "$CIBENCH" generate -m synthetic:stories260k --max-context -5 -n 4
expect_error generate-past-context "is past the model's context of 512 positions" -- "$CIBENCH" generate -m synthetic:stories260k -n 2000
expect_error gen-tokens-past-context "key 'workload.gen_tokens': up to 600 generated tokens do not fit the model's context of 512" -- \
  "$CIBENCH" run "$(dirname "$0")/../../scenarios/quickstart.toml" --db "$db" --set model.source=synthetic:stories260k --set workload.gen_tokens=600

"$CIBENCH" quantize -m synthetic:stories260k -f int8 -o "$tmp/m.cbq" > /dev/null 2>&1 || { echo "FAIL setup quantize"; fails=$((fails + 1)); }
expect_error cbq-as-fp32 "m.cbq: a cibench quantised model (.cbq), not an FP32 source" -- "$CIBENCH" bench --models "$tmp/m.cbq" --reps 1 --no-roofline
expect_error cbq-other-format "holds int8,output=f32 weights; --format int4_g32 cannot apply" -- "$CIBENCH" generate -m "$tmp/m.cbq" -n 8 -f int4_g32
if timeout 20 "$CIBENCH" generate -m "$tmp/m.cbq" -n 8 -t 0 --json > "$tmp/gen.json" 2> "$tmp/err" && grep -q '"format":"int8,output=f32"' "$tmp/gen.json"; then
  echo "ok   cbq-generates"
else
  echo "FAIL cbq-generates: $(head -c 300 "$tmp/err")"; fails=$((fails + 1))
fi

: > "$tmp/empty.tsv"
expect_error classify-empty "empty.tsv: no sentences to classify" -- "$CIBENCH" classify -m synthetic:bert-tiny -i "$tmp/empty.tsv"
expect_error classify-folder "is a directory, expected a regular file" -- "$CIBENCH" classify -m synthetic:bert-tiny -i "$tmp"

if [ -n "$SHARED" ] && [ -f "$SHARED/models/bert-tiny-sst2/vocab.txt" ]; then
  mkdir -p "$tmp/bert"
  cp "$SHARED/models/bert-tiny-sst2/config.json" "$SHARED/models/bert-tiny-sst2/model.safetensors" "$tmp/bert/"
  head -1000 "$SHARED/models/bert-tiny-sst2/vocab.txt" > "$tmp/bert/vocab.txt"
  if timeout 20 "$CIBENCH" classify -m "$tmp/bert" --text "a fine film" > "$tmp/out" 2> "$tmp/err" &&
     grep -q "warning: the vocabulary ($tmp/bert/vocab.txt) has 1000 pieces but the model's embedding has 30522 rows" "$tmp/err"; then
    echo "ok   classify-short-vocab-warns"
  else
    echo "FAIL classify-short-vocab-warns: $(head -c 300 "$tmp/err")"; fails=$((fails + 1))
  fi
fi

expect_error compare-resamples "resamples" -- "$CIBENCH" compare 1 1 --db "$db" --resamples 2000000000
expect_error huge-list "1000 values; a list holds at most 256" -- "$CIBENCH" run "$(dirname "$0")/../../scenarios/quickstart.toml" \
  --db "$db" --set "matrix.threads=[$(seq -s, 1 1000)]"
expect_error huge-matrix "the matrix expands to 65536 variants; a suite runs at most 4096" -- "$CIBENCH" run \
  "$(dirname "$0")/../../scenarios/quickstart.toml" --db "$db" --set "matrix.threads=[$(seq -s, 1 256)]" --set "matrix.workers=[$(seq -s, 1 256)]"

expect_error memory-7b-f32 "needs ~29.6 GiB (weights 25.6 GiB in f32, 1 session of 4 GiB (KV cache for 4096 positions))" -- env CIBENCH_MEMORY_AVAILABLE_BYTES=25769803776 \
  "$CIBENCH" generate -m synthetic:llama2-7b -f f32 -n 2
expect_error memory-scenario "key 'matrix.format': variant f32 t1 w1 needs" -- env CIBENCH_MEMORY_AVAILABLE_BYTES=10000000 \
  "$CIBENCH" run "$(dirname "$0")/../../scenarios/quickstart.toml" --db "$db"
expect_error qps-1e9 "key 'load.target_qps': 1e+09 queries/s" -- "$CIBENCH" run "$(dirname "$0")/../../scenarios/quickstart.toml" \
  --db "$db" --set load.target_qps=1e9

# Files the user names as outputs are written beside and renamed over: the target of a symlink at
# the path is never written through, a missing folder is named.
echo "keep me" > "$tmp/precious"
for out in export.csv model.cbq; do ln -s "$tmp/precious" "$tmp/$out"; done
"$CIBENCH" export last --db "$db" -o "$tmp/export.csv" > /dev/null 2>&1
"$CIBENCH" quantize -m synthetic:stories260k -f int8 -o "$tmp/model.cbq" > /dev/null 2>&1
if [ "$(cat "$tmp/precious")" = "keep me" ] && [ ! -L "$tmp/export.csv" ] && [ ! -L "$tmp/model.cbq" ] &&
   head -1 "$tmp/export.csv" | grep -q variant_id; then
  echo "ok   outputs-replace-links"
else
  echo "FAIL outputs-replace-links: $(cat "$tmp/precious" | head -c 100)"; fails=$((fails + 1))
fi
expect_error export-missing-folder "cannot write the export: the folder $tmp/no does not exist" -- \
  "$CIBENCH" export last --db "$db" -o "$tmp/no/e.csv"

# A full disk (a 4 MiB tmpfs, where this user may mount one): a run fails saying the disk is full,
# the runs stored before stay readable (list works while the disk is full), no partial output
# files are left, and after space is freed the store holds what it held.
full=$tmp/full
mkdir -p "$full"
if mount -t tmpfs -o size=4m tmpfs "$full" 2> /dev/null; then
  "$CIBENCH" run "$(dirname "$0")/../../scenarios/quickstart.toml" --db "$full/c.sqlite" --set model.source=sut:null \
    --set run.min_duration_ms=50 --set run.min_queries=2 > /dev/null 2>&1
  stored=$(sqlite3 "$full/c.sqlite" "SELECT COUNT(*) FROM variants")
  free=$(( $(stat -f -c '%a * %S' "$full") ))
  head -c $((free - 24576)) /dev/zero > "$full/filler" 2> /dev/null
  expect_error full-disk-run "is the disk full?" -- "$CIBENCH" run "$(dirname "$0")/../../scenarios/quickstart.toml" \
    --db "$full/c.sqlite" --set model.source=sut:null --set run.min_duration_ms=300 --set run.min_queries=20000
  if timeout 20 "$CIBENCH" list --db "$full/c.sqlite" > "$tmp/out" 2>&1 && grep -q "complete  " "$tmp/out"; then
    echo "ok   full-disk-list"
  else
    echo "FAIL full-disk-list: $(head -c 300 "$tmp/out")"; fails=$((fails + 1))
  fi
  expect_error full-disk-quantize "m.cbq: cannot write the quantised model file" -- "$CIBENCH" quantize -m synthetic:stories260k -f int8 -o "$full/m.cbq"
  ls "$full" | grep -q '\.tmp\.' && { echo "FAIL full-disk: partial files left: $(ls "$full")"; fails=$((fails + 1)); }
  rm -f "$full/filler"
  [ "$(sqlite3 "$full/c.sqlite" "SELECT COUNT(*) FROM variants")" = "$stored" ] && echo "ok   full-disk-store-intact" \
    || { echo "FAIL full-disk: the store changed"; fails=$((fails + 1)); }
  umount -l "$full"
else
  echo "note full-disk cases not run: this user cannot mount a tmpfs (run as root outside a container to include them)"
fi

# --dry-run: the matrix and its duration bounds, nothing stored.
if timeout 60 "$CIBENCH" run "$(dirname "$0")/../../scenarios/quickstart.toml" --db "$db" --dry-run > "$tmp/dry" 2>&1 &&
   grep -q "^scenario 'quickstart' .*: 2 variants" "$tmp/dry" && grep -q "^  2\. " "$tmp/dry" &&
   grep -q "nothing was run or stored" "$tmp/dry"; then
  echo "ok   dry-run"
else
  echo "FAIL dry-run: $(head -c 400 "$tmp/dry")"; fails=$((fails + 1))
fi

after=$(sqlite3 "$db" "SELECT COUNT(*), MAX(run_id) FROM runs; SELECT COUNT(*) FROM variants")
[ "$before" = "$after" ] || { echo "FAIL: a refused command changed the store ($before -> $after)"; fails=$((fails + 1)); }
[ $fails -eq 0 ] || { echo "hostile_inputs: $fails failed"; exit 1; }
echo "hostile_inputs: ok"
