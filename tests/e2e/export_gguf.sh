#!/usr/bin/env bash
# End to end: `cibench export-gguf` writes a synthetic model as Q4_0 and `cibench generate` runs
# the file (its own vocabulary included), and a scenario on it stores the conversion error per
# variant; a model whose rows are not whole Q4_0 blocks is refused
# with the tensor named and nothing written. With the shared models: stories260K exported as F32
# with its tokenizer generates the same text from a prompt as the llama2.c .bin.
# Usage: export_gguf.sh PATH-TO-CIBENCH [SHARED-DIR]
set -euo pipefail
CIBENCH=$1
export CIBENCH_SHARED=${2:-${CIBENCH_SHARED:-}}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$CIBENCH" export-gguf synthetic:tinystories-15m@7 --type q4_0 -o "$tmp/m.gguf" > "$tmp/export.txt"
grep -q "wrote $tmp/m.gguf: q4_0, 56 tensors" "$tmp/export.txt" || fail "export summary: $(cat "$tmp/export.txt")"
grep -q "vocabulary 32000 pieces from placeholder" "$tmp/export.txt" || fail "placeholder vocabulary"
[ "$(head -c 4 "$tmp/m.gguf")" = "GGUF" ] || fail "magic"
# 15.2M weights at 18 bytes per 32 (8.55 MB; norms f32) plus the 32000-piece vocabulary.
size=$(stat -c %s "$tmp/m.gguf")
[ "$size" -gt 8550000 ] && [ "$size" -lt 10000000 ] || fail "file size $size"

"$CIBENCH" generate -m "$tmp/m.gguf" -z "$tmp/m.gguf" -i "Once upon" -n 24 --json > "$tmp/gen.json"
python3 - "$tmp/gen.json" <<'PY' || fail "generate output: $(cat "$tmp/gen.json")"
import json, sys
j = json.loads(open(sys.argv[1]).read().strip().splitlines()[-1])
assert j["model"].endswith("m.gguf"), j["model"]
assert j["prompt_tokens"] >= 2 and j["generated_tokens"] >= 1, j
assert all(0 <= t < 32000 for t in j["token_ids"]), j["token_ids"]
PY

# A scenario on the Q4_0 file stores the conversion per variant: int4_g32 copies the Q4_0 rows
# (error 0 in the attention and feed-forward classes), int8 re-quantises them (error > 0).
here=$(cd "$(dirname "$0")/../.." && pwd)
"$CIBENCH" run "$here/scenarios/quickstart.toml" --db "$tmp/r.sqlite" -q \
  --set model.source="$tmp/m.gguf" --set 'matrix.format=["int4_g32","int8"]' --set 'matrix.threads=[1]' \
  --set run.min_duration_ms=200 --set run.max_duration_ms=3000 --set run.min_queries=2 --set run.warmup_queries=0 \
  --set load.target_qps=4 --set workload.gen_tokens=4 --set accuracy.max_tokens=16 --set accuracy.window=16 \
  > /dev/null || fail "scenario on the Q4_0 file"
q() { sqlite3 "$tmp/r.sqlite" "$1"; }
[ "$(q "SELECT COUNT(*) FROM variants WHERE weight_conversion_rel_rms IS NOT NULL AND weight_conversion_reason IS NULL")" = "2" ] \
  || fail "conversion stored for both variants: $(q 'SELECT format, weight_conversion_rel_rms, weight_conversion_reason FROM variants')"
python3 - "$tmp/r.sqlite" <<'PY' || fail "stored conversion per class"
import json, sqlite3, sys
rows = dict(sqlite3.connect(sys.argv[1]).execute("SELECT format, weight_conversion FROM variants").fetchall())
a, b = json.loads(rows["int4_g32"]), json.loads(rows["int8"])
assert a["attention"]["relative_rms"] == 0 and a["attention"]["copied"] > 0, a
assert a["ffn"]["relative_rms"] == 0 and a["ffn"]["stored_types"] == ["Q4_0"], a
assert b["attention"]["relative_rms"] > 0 and b["attention"]["copied"] == 0, b
PY

# hidden_dim 172 is not a whole number of 32-value blocks.
if "$CIBENCH" export-gguf synthetic:stories260k --type q8_0 -o "$tmp/bad.gguf" 2> "$tmp/err.txt"; then
  fail "q8_0 of a 172-column tensor was accepted"
fi
grep -q "tensor 'blk.0.ffn_down.weight'.*172 columns are not a multiple of 32" "$tmp/err.txt" \
  || fail "error message: $(cat "$tmp/err.txt")"
[ -z "$(ls "$tmp" | grep bad)" ] || fail "a refused export left a file"

bin=$CIBENCH_SHARED/models/stories260K/stories260K.bin
if [ ! -e "$bin" ]; then
  [ -n "${CI:-}" ] && fail "missing $bin"
  echo "skip: no shared models"; exit 0
fi
"$CIBENCH" export-gguf "$bin" --type f32 -o "$tmp/s.gguf" > "$tmp/export2.txt"
grep -q "vocabulary 512 pieces from .*tok512.bin" "$tmp/export2.txt" || fail "tokenizer beside the .bin"
"$CIBENCH" generate -m "$bin" -z "${bin%/*}/tok512.bin" -i "Once upon a time" -n 60 > "$tmp/a.txt" 2>/dev/null
"$CIBENCH" generate -m "$tmp/s.gguf" -z "$tmp/s.gguf" -i "Once upon a time" -n 60 > "$tmp/b.txt" 2>/dev/null
[ -s "$tmp/a.txt" ] && cmp -s "$tmp/a.txt" "$tmp/b.txt" || fail "texts differ: $(cat "$tmp/a.txt") / $(cat "$tmp/b.txt")"
echo "ok"
