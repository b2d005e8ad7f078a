#!/usr/bin/env bash
# `cibench bench` end to end on a small synthetic model: the decode roofline is re-measured before
# every repetition, each row carries its per-repetition bandwidths and fractions, the reported
# fraction is the median of those, the roofline equals bandwidth / streamed bytes per token, and
# --no-roofline / a bad --probe-mib behave. JSON is read with sqlite3's JSON functions.
# Usage: bench_roofline.sh PATH-TO-CIBENCH [SHARED-DIR]
set -euo pipefail
CIBENCH=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
j() { sqlite3 :memory: "SELECT $1 FROM (SELECT readfile('$tmp/out.json') AS d)"; }

"$CIBENCH" bench --models synthetic:tinystories-15m -f f32 int8 -T 1 --prompt 8 --decode 8 \
  --reps 3 --probe-mib 64 -o json > "$tmp/out.json"

[ "$(j "json_array_length(d, '$.results')")" = "2" ] || fail "two result rows"
[ "$(j "json_extract(d, '$.roofline_probe.buffer_mib')")" = "64.0" ] || fail "probe buffer 64 MiB"
for i in 0 1; do
  r="\$.results[$i]"
  [ "$(j "json_array_length(d, '$r.read_bandwidth_gb_per_s_reps')")" = "3" ] || fail "row $i: 3 bandwidth probes"
  [ "$(j "json_array_length(d, '$r.decode_fraction_of_roofline_reps')")" = "3" ] || fail "row $i: 3 fractions"
  # every probe read something plausible (> 0.1 GB/s) and the row's bandwidth is their median
  [ "$(j "(SELECT COUNT(*) FROM json_each(d, '$r.read_bandwidth_gb_per_s_reps') WHERE value > 0.1)")" = "3" ] \
    || fail "row $i: positive bandwidths"
  [ "$(j "(SELECT value FROM json_each(d, '$r.read_bandwidth_gb_per_s_reps') ORDER BY value LIMIT 1 OFFSET 1) = json_extract(d, '$r.read_bandwidth_gb_per_s')")" = "1" ] \
    || fail "row $i: bandwidth is the median probe"
  [ "$(j "(SELECT value FROM json_each(d, '$r.decode_fraction_of_roofline_reps') ORDER BY value LIMIT 1 OFFSET 1) = json_extract(d, '$r.decode_fraction_of_roofline')")" = "1" ] \
    || fail "row $i: fraction is the median of the per-repetition fractions"
  # roofline tokens/s = bandwidth / streamed bytes per token
  [ "$(j "abs(json_extract(d, '$r.decode_roofline_tokens_per_s') * json_extract(d, '$r.streamed_bytes_per_token') / 1e9 / json_extract(d, '$r.read_bandwidth_gb_per_s') - 1) < 1e-9")" = "1" ] \
    || fail "row $i: roofline = bandwidth / bytes per token"
  [ "$(j "json_extract(d, '$r.decode_fraction_of_roofline') > 0")" = "1" ] || fail "row $i: fraction > 0"
done
# int8 streams fewer bytes per token than f32
[ "$(j "json_extract(d, '\$.results[1].streamed_bytes_per_token') < json_extract(d, '\$.results[0].streamed_bytes_per_token')")" = "1" ] \
  || fail "int8 streams fewer bytes than f32"

"$CIBENCH" bench --models synthetic:tinystories-15m -f f32 -T 1 --prompt 4 --decode 4 --reps 1 \
  --no-roofline -o json > "$tmp/out.json"
[ "$(j "json_type(d, '\$.results[0].decode_fraction_of_roofline')")" = "" ] || fail "--no-roofline has no fraction"
[ "$(j "json_type(d, '\$.roofline_probe')")" = "" ] || fail "--no-roofline has no probe"

if "$CIBENCH" bench --models synthetic:tinystories-15m --probe-mib 0 > "$tmp/o" 2> "$tmp/e"; then
  fail "--probe-mib 0 accepted"
fi
grep -q -- "--probe-mib" "$tmp/e" || fail "--probe-mib error names the option: $(cat "$tmp/e")"

"$CIBENCH" bench --models synthetic:tinystories-15m -f int8 -T 1 --prompt 4 --decode 4 --reps 2 \
  --probe-mib 64 > "$tmp/md"
grep -q "1 thread [0-9.]* GB/s median" "$tmp/md" || fail "markdown footer: $(tail -1 "$tmp/md")"
echo "bench_roofline: ok"
