#!/usr/bin/env bash
# `cibench bench --batch` end to end on a small synthetic model: one row per batch size in the
# order given, each row's aggregate tokens/s, step latency and speed-up over B = 1 consistent
# with each other (one repetition, so the medians are single values), the KV pool sized for B
# sequences, and bad batch sizes or --db refused with the option named.
# Usage: bench_batch.sh PATH-TO-CIBENCH [SHARED-DIR]
set -euo pipefail
CIBENCH=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
j() { sqlite3 :memory: "SELECT $1 FROM (SELECT readfile('$tmp/out.json') AS d)"; }

"$CIBENCH" bench --models synthetic:tinystories-15m -f w8a8 -T 1 --batch 1,2,4 --prompt 5 --decode 3 \
  --reps 1 -o json > "$tmp/out.json"

[ "$(j "json_array_length(d, '$.results')")" = "3" ] || fail "three result rows"
b=1
for i in 0 1 2; do
  r="\$.results[$i]"
  [ "$(j "json_extract(d, '$r.batch')")" = "$b" ] || fail "row $i: batch $b"
  [ "$(j "json_extract(d, '$r.decode_steps')")" = "3" ] || fail "row $i: 3 decode steps"
  # tokens/s over all B = B sequences x 1000 / step ms (the same timing, one repetition)
  [ "$(j "abs(json_extract(d, '$r.decode_tokens_per_s_median') * json_extract(d, '$r.step_latency_ms_median') / (1000.0 * $b) - 1) < 1e-9")" = "1" ] \
    || fail "row $i: tokens/s and step latency disagree"
  [ "$(j "abs(json_extract(d, '$r.speedup_vs_batch_1') * json_extract(d, '\$.results[0].decode_tokens_per_s_median') / json_extract(d, '$r.decode_tokens_per_s_median') - 1) < 1e-9")" = "1" ] \
    || fail "row $i: speed-up is tokens/s over B = 1's"
  # the pool holds B sequences of prompt + decode + 1 = 9 positions: one block of 16 each
  [ "$(j "json_extract(d, '$r.kv_pool_bytes') = $b * json_extract(d, '\$.results[0].kv_pool_bytes')")" = "1" ] \
    || fail "row $i: KV pool sized for $b sequences"
  b=$((b * 2))
done
[ "$(j "json_extract(d, '\$.results[0].speedup_vs_batch_1')")" = "1.0" ] || fail "B = 1 is 1x"

"$CIBENCH" bench --models synthetic:tinystories-15m -f w8a8 -T 1 --batch 2,1 --prompt 4 --decode 2 \
  --reps 1 > "$tmp/md"
grep -q "| 2 | .* | n/a |" "$tmp/md" || fail "B = 2 before B = 1 has no speed-up yet: $(cat "$tmp/md")"
grep -q "batched decode: B sequences" "$tmp/md" || fail "markdown footer: $(tail -1 "$tmp/md")"

if "$CIBENCH" bench --models synthetic:tinystories-15m --batch 0 > "$tmp/o" 2> "$tmp/e"; then
  fail "--batch 0 accepted"
fi
grep -q -- "--batch" "$tmp/e" || fail "--batch error names the option: $(cat "$tmp/e")"
if "$CIBENCH" bench --models synthetic:tinystories-15m --batch 1 --db "$tmp/x.db" > "$tmp/o" 2> "$tmp/e"; then
  fail "--batch with --db accepted"
fi
grep -q -- "--db" "$tmp/e" || fail "--db error names the option: $(cat "$tmp/e")"
echo "bench_batch: ok"
