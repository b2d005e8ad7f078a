#!/usr/bin/env bash
# `cibench logits` as a reference check: stories260K's teacher-forced log-probabilities on the
# shared folder's 64 reference tokens match the float64 reference logits shipped beside the model
# (max |diff| of the log-probabilities below 1e-4, every top-1 the same), an int4 build is seen to
# differ, the .npy it writes reads back (a self-compare within float32 storage rounding), and a
# reference of another shape is refused naming both shapes.
# Usage: logits_reference.sh PATH-TO-CIBENCH SHARED-DIR
set -euo pipefail
CIBENCH=$1
M=${2:-}/models/stories260K
[ -f "$M/ref_logits_64x512.f32" ] || { echo "no stories260K reference logits under '${2:-}'" >&2; exit 77; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["compare"][sys.argv[2]])' "$1" "$2"; }

"$CIBENCH" logits -m "$M/stories260K.bin" --ids-file "$M/ref_tokens_64.i32" --compare "$M/ref_logits_64x512.f32" \
  --json >"$tmp/f32.json" || fail "logits --compare"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["compare"]; sys.exit(0 if c["max_abs_logprob"] < 1e-4 and c["top1_agreement"] == 1.0 and c["positions"] == 64 else 1)' "$tmp/f32.json" ||
  fail "f32 against the reference: $(cat "$tmp/f32.json" | tail -12)"
"$CIBENCH" logits -m "$M/stories260K.bin" -f int4_g32 --ids-file "$M/ref_tokens_64.i32" --compare "$M/ref_logits_64x512.f32" \
  --json >"$tmp/int4.json" || fail "int4 logits"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["compare"]; sys.exit(0 if c["max_abs_logprob"] > 0.1 else 1)' "$tmp/int4.json" ||
  fail "int4_g32 should differ from the f32 reference"
"$CIBENCH" logits -m "$M/stories260K.bin" -z "$M/tok512.bin" --text "Once upon a time" --top-k 3 --npy "$tmp/l.npy" >"$tmp/text.txt" ||
  fail "logits --text"
grep -q "next 403 'Once'" "$tmp/text.txt" || fail "the text's positions: $(cat "$tmp/text.txt")"
"$CIBENCH" logits -m "$M/stories260K.bin" -z "$M/tok512.bin" --text "Once upon a time" --compare "$tmp/l.npy" --json \
  >"$tmp/self.json" || fail "self compare"
python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["compare"]; sys.exit(0 if c["max_abs_logprob"] < 1e-5 and c["positions"] == 5 else 1)' "$tmp/self.json" ||
  fail "the .npy read back: $(cat "$tmp/self.json" | tail -10)"
set +e
"$CIBENCH" logits -m "$M/stories260K.bin" --ids 1,403,407 --compare "$M/ref_logits_64x512.f32" >"$tmp/err.txt" 2>&1
st=$?
set -e
[ "$st" != 0 ] || fail "a reference of 64 positions for 3 tokens was accepted"
grep -q "ref_logits_64x512.f32: 64 positions; 3 tokens were scored" "$tmp/err.txt" || fail "shape error: $(cat "$tmp/err.txt")"
echo "PASS (f32 max |dlogprob| $(field "$tmp/f32.json" max_abs_logprob))"
