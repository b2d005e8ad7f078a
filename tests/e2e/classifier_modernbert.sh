#!/usr/bin/env bash
# End to end on the ModernBERT fixture (tests/fixtures/modernbert/cls, no shared files needed):
# `cibench classify` tokenizes with the folder's tokenizer.json ([CLS] ... [SEP]) and gives the
# stored float64 logits of each text to within 1e-4 (--json), in f32 and in int8 the same labels
# where the margin is clear; then a classifier scenario serves it (f32 and int8, synthetic ids).
# Usage: classifier_modernbert.sh PATH-TO-CIBENCH [SHARED-DIR]
set -euo pipefail
CIBENCH=$1
here=$(cd "$(dirname "$0")/../.." && pwd)
model=$here/tests/fixtures/modernbert/cls
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3

args=()
while IFS= read -r t; do args+=(--text "$t"); done < <("$py" -c '
import json, sys
for t in json.load(open(sys.argv[1]))["texts"]: print(t)' "$model/reference.json")
"$CIBENCH" classify -m "$model" "${args[@]}" --json >"$tmp/f32.jsonl" || fail "classify f32"
"$CIBENCH" classify -m "$model" "${args[@]}" --format int8 --json >"$tmp/int8.jsonl" || fail "classify int8"
"$py" - "$model/reference.json" "$tmp/f32.jsonl" "$tmp/int8.jsonl" <<'PY' || fail "logits"
import json, sys
ref = json.load(open(sys.argv[1]))
def rows(path):
    return [j for j in map(json.loads, open(path)) if "index" in j]
f32, int8 = rows(sys.argv[2]), rows(sys.argv[3])
assert len(f32) == len(ref["texts"]) == len(int8), (len(f32), len(int8))
for r, q, want, ids in zip(f32, int8, ref["logits"], ref["text_ids"]):
    assert r["tokens"] == len(ids), (r["tokens"], ids)
    err = max(abs(a - b) for a, b in zip(r["logits"], want))
    assert err <= 1e-4, (err, r, want)
    best = max(range(len(want)), key=lambda i: want[i])
    assert r["label_id"] == best and r["label"] == ["negative", "neutral", "positive"][best], r
    margin = sorted(want)[-1] - sorted(want)[-2]
    if margin > 0.2:
        assert q["label_id"] == best, (q, want)
print("classify: logits within 1e-4 of the float64 reference on", len(f32), "texts")
PY

cat >"$tmp/modernbert.toml" <<TOML
[scenario]
name = "modernbert-fixture"
question = "Does a ModernBERT folder serve as a classifier in f32 and int8?"

[model]
source = "$model"

[matrix]
format = ["f32", "int8"]
layout = ["1x2"]

[workload]
source = "synthetic"
samples = 24
prompt_tokens = 40

[load]
pattern = "offline"

[run]
warmup_queries = 2
min_queries = 24
min_duration_ms = 0
TOML
db=$tmp/r.sqlite
"$CIBENCH" run "$tmp/modernbert.toml" --db "$db" -q 2>"$tmp/run.txt" || fail "scenario run: $(cat "$tmp/run.txt")"
[ "$(sqlite3 "$db" 'SELECT status FROM runs')" = "complete" ] || fail "run status"
[ "$(sqlite3 "$db" "SELECT COUNT(*) FROM variants WHERE status = 'ok' AND queries >= 24")" = "2" ] \
  || fail "2 variants ok: $(sqlite3 "$db" 'SELECT format, status, queries FROM variants')"
echo "ok"
