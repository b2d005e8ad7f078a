#!/usr/bin/env bash
# `cibench bench --speculative` end to end on the real stories5M (target) and stories260K (draft):
# one row per drafter x draft length in the order given, speculative tokens equal to plain ones
# (the command fails otherwise), acceptance and mean accepted length consistent with the counts
# by draft position, the speed-up the ratio of the two rates; a bad drafter, a draft of another
# vocabulary and --db refused with the option or sizes named.
# Usage: bench_speculative.sh PATH-TO-CIBENCH SHARED-DIR
set -euo pipefail
CIBENCH=$1
SHARED=${2:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
j() { sqlite3 :memory: "SELECT $1 FROM (SELECT readfile('$tmp/out.json') AS d)"; }
target="$SHARED/models/stories5M/stories5M.bin"
draft="$SHARED/models/stories260K/stories260K.bin"
[ -f "$target" ] && [ -f "$draft" ] || fail "stories5M / stories260K not found under '$SHARED'/models"

"$CIBENCH" bench --models "$target" -f w8a8 -T 1 --speculative "self:int4_g32_a8,draft:$draft,lookup" \
  --draft-tokens 2,4 --prompt 8 --decode 24 --reps 1 -o json > "$tmp/out.json"
[ "$(j "json_array_length(d, '$.results')")" = "6" ] || fail "six result rows"
i=0
for want in "int4_g32_a8:2" "int4_g32_a8:4" "stories260K:2" "stories260K:4" "prompt-lookup:2" "prompt-lookup:4"; do
  r="\$.results[$i]"
  name=${want%:*}; k=${want#*:}
  j "json_extract(d, '$r.drafter')" | grep -q "$name" || fail "row $i: drafter $name"
  [ "$(j "json_extract(d, '$r.draft_tokens')")" = "$k" ] || fail "row $i: k = $k"
  [ "$(j "json_array_length(d, '$r.accepted_by_position')")" = "$k" ] || fail "row $i: acceptance by position has k entries"
  # acceptance = sum accepted / sum drafted over the positions
  [ "$(j "abs(json_extract(d, '$r.acceptance_rate') - (SELECT SUM(value) FROM json_each(d, '$r.accepted_by_position')) * 1.0 / (SELECT SUM(value) FROM json_each(d, '$r.drafted_by_position'))) < 1e-9")" = "1" ] \
    || fail "row $i: acceptance rate from the counts by position"
  [ "$(j "json_extract(d, '$r.mean_accepted_length') >= 1 AND json_extract(d, '$r.mean_accepted_length') <= 1 + $k")" = "1" ] \
    || fail "row $i: mean accepted length in [1, 1 + k]"
  [ "$(j "abs(json_extract(d, '$r.speedup') * json_extract(d, '$r.plain_tokens_per_s_median') / json_extract(d, '$r.speculative_tokens_per_s_median') - 1) < 1e-9")" = "1" ] \
    || fail "row $i: speed-up is speculative over plain tokens/s"
  [ "$(j "abs(json_extract(d, '$r.decode_speedup') * json_extract(d, '$r.plain_decode_tokens_per_s_median') / json_extract(d, '$r.speculative_decode_tokens_per_s_median') - 1) < 1e-9")" = "1" ] \
    || fail "row $i: decode speed-up is speculative over plain decode tokens/s"
  # the prompt's prefill, then at most one verification per generated token
  [ "$(j "json_extract(d, '$r.target_forwards') <= 25")" = "1" ] || fail "row $i: at most 1 + 24 target forwards"
  i=$((i + 1))
done
# the int4 copy of a trained model agrees with it often: fewer verifications than tokens
[ "$(j "json_extract(d, '\$.results[1].target_forwards') < 20")" = "1" ] || fail "self-speculation saved no target forward"
[ "$(j "json_extract(d, '\$.results[0].draft_forwards') > 0 AND json_extract(d, '\$.results[4].draft_forwards') = 0")" = "1" ] \
  || fail "a model drafter runs forwards, prompt lookup none"

if "$CIBENCH" bench --models "$target" --speculative nonsense > "$tmp/o" 2> "$tmp/e"; then fail "bad drafter accepted"; fi
grep -q -- "--speculative: drafter 'nonsense'" "$tmp/e" || fail "bad drafter named: $(cat "$tmp/e")"
if "$CIBENCH" bench --models "$target" --speculative draft:synthetic:tinystories-15m --decode 4 > "$tmp/o" 2> "$tmp/e"; then
  fail "a draft of another vocabulary accepted"
fi
grep -q "32000" "$tmp/e" && grep -q "512" "$tmp/e" || fail "vocabulary sizes named: $(cat "$tmp/e")"
if "$CIBENCH" bench --models "$target" --speculative lookup --db "$tmp/x.db" > "$tmp/o" 2> "$tmp/e"; then
  fail "--speculative with --db accepted"
fi
grep -q -- "--db" "$tmp/e" || fail "--db error names the option: $(cat "$tmp/e")"
echo "bench_speculative: ok"
