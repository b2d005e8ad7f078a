#!/usr/bin/env bash
# End to end: cibench bench --peer against a stand-in llama-bench (tests/e2e/support; the tests
# never need llama.cpp). Checks that every repetition alternates one peer invocation with the
# flags cibench must pass (-mmp 0, -r 1, the same threads, prompt, decode steps and KV cache type,
# the extra --peer-args), that the GGUFs cibench exports for the peer are real GGUF files named by
# type and reused on a second run, that the printed and stored ratios are cibench's median over
# the peer's, that a peer failing mid-run leaves the run failed with the rows measured before it,
# and that bad arguments are refused before anything runs.
# Usage: bench_peer.sh PATH-TO-CIBENCH SHARED-DIR
set -euo pipefail
CIBENCH=$1
export CIBENCH_SHARED=${2:-${CIBENCH_SHARED:-}}
here=$(cd "$(dirname "$0")" && pwd)
standin=$here/support/llama-bench-standin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
db=$tmp/r.sqlite
fail() { echo "FAIL: $*" >&2; exit 1; }
q() { sqlite3 "$db" "$1"; }
export STANDIN_LOG=$tmp/calls.log STANDIN_PP=1000 STANDIN_TG=100

args=(bench --models synthetic:tinystories-15m -f f32 int4_g32_a8 -T 1 --prompt 8 --decode 4 --reps 2 --no-roofline
      --peer "llama-bench=$standin" --peer-dir "$tmp/gguf" --peer-args=-fa --peer-args=1)
"$CIBENCH" "${args[@]}" -o json --db "$db" > "$tmp/out.json" 2> "$tmp/err1"

# Two rows, each with 2 peer invocations carrying the flags.
[ "$(grep -c . "$STANDIN_LOG")" = 4 ] || fail "4 peer invocations expected: $(cat "$STANDIN_LOG")"
[ "$(grep -c -- '-p 8 -n 4 -t 1 -r 1 -mmp 0 -ctk f16 -ctv f16 -o json extra=-fa 1$' "$STANDIN_LOG")" = 4 ] \
  || fail "peer flags: $(cat "$STANDIN_LOG")"
[ "$(grep -c -- '-f32.gguf ' "$STANDIN_LOG")" = 2 ] && [ "$(grep -c -- '-q4_0.gguf ' "$STANDIN_LOG")" = 2 ] \
  || fail "one GGUF per paired type: $(cat "$STANDIN_LOG")"
for f in "$tmp"/gguf/*-f32.gguf "$tmp"/gguf/*-q4_0.gguf; do
  [ "$(head -c 4 "$f")" = GGUF ] || fail "$f is not a GGUF file"
done
[ "$(grep -c "writing the peer's weights" "$tmp/err1")" = 2 ] || fail "two exports: $(cat "$tmp/err1")"
# The JSON: pairs, ratios = cibench median / peer median, the peer's identity.
python3 - "$tmp/out.json" <<'PY' || fail "json checks"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["peer"]["engine"] == "llama.cpp" and d["peer"]["build_commit"] == "standin", d["peer"]
assert d["peer"]["flags"]["type_k"] == "f16" and d["peer"]["flags"]["use_mmap"] is False, d["peer"]["flags"]
rows = d["results"]
assert [r["peer_type"] for r in rows] == ["F32", "Q4_0"], rows
for r in rows:
    assert r["kv_mode"] == "preallocated-f16", r["kv_mode"]
    assert r["peer_prefill_tokens_per_s_median"] == 1000 and r["peer_decode_tokens_per_s_median"] == 100
    for k, ours, peer in (("prefill_ratio", "prefill_tokens_per_s_median", 1000), ("decode_ratio", "decode_tokens_per_s_median", 100)):
        assert abs(r[k]["ratio"] - r[ours] / peer) <= 1e-12 * r[k]["ratio"], (k, r)
        assert r[k]["lo"] <= r[k]["ratio"] <= r[k]["hi"], r[k]
    assert len(r["samples"]) == 2 and all(s["peer_decode_tokens_per_s"] == 100 for s in r["samples"])
    assert r[ "prefill_tokens_per_s_median"] > 0 and r["decode_tokens_per_s_median"] > 0
PY
# The store: one run, two rows with the peer's columns, the ratio from the stored medians.
[ "$(q 'SELECT status FROM runs')" = complete ] || fail "run status $(q 'SELECT status, error FROM runs')"
[ "$(q "SELECT COUNT(*) FROM variants WHERE status = 'ok' AND peer_engine = 'llama.cpp' AND peer_version LIKE 'build 42, commit standin, binary fnv1a64:%'
        AND ABS(peer_prefill_ratio - prefill_tokens_per_s / peer_prefill_tokens_per_s) < 1e-9 * peer_prefill_ratio
        AND ABS(peer_decode_ratio - decode_tokens_per_s / peer_decode_tokens_per_s) < 1e-9 * peer_decode_ratio
        AND peer_decode_ratio_lo <= peer_decode_ratio AND peer_decode_ratio <= peer_decode_ratio_hi
        AND json_array_length(peer_samples) = 2 AND peer_command LIKE '%-mmp 0%' AND peer_type IN ('F32', 'Q4_0')
        AND json_extract(peer_flags, '$.type_v') = 'f16' AND peer_roofline_fraction IS NULL
        AND peer_weight_bytes > 0")" = 2 ] \
  || fail "stored peer columns: $(q 'SELECT label, peer_type, peer_prefill_ratio, peer_samples FROM variants')"
# Each row reports its own file's size: the Q4_0 file is smaller than the F32 one.
[ "$(q "SELECT (SELECT peer_weight_bytes FROM variants WHERE peer_type = 'Q4_0') < (SELECT peer_weight_bytes FROM variants WHERE peer_type = 'F32')")" = 1 ] \
  || fail "peer weight bytes per row: $(q 'SELECT peer_type, peer_weight_bytes FROM variants')"

# cibench show prints the side-by-side table from the store.
"$CIBENCH" show --db "$db" 1 > "$tmp/show.txt"
grep -q "side by side with llama.cpp (build 42, commit standin, binary fnv1a64:[0-9a-f]*)" "$tmp/show.txt" || fail "show: $(cat "$tmp/show.txt")"
grep -q "int4_g32_a8 t1 vs llama.cpp Q4_0 .*Q4_0" "$tmp/show.txt" || fail "show row: $(cat "$tmp/show.txt")"

# A second run reuses the exported files; --kv preallocated asks the peer for an f32 cache.
: > "$STANDIN_LOG"
"$CIBENCH" "${args[@]}" --kv preallocated > "$tmp/out.md" 2> "$tmp/err2"
grep -q "writing the peer's weights" "$tmp/err2" && fail "exported again: $(cat "$tmp/err2")"
[ "$(grep -c -- '-ctk f32 -ctv f32' "$STANDIN_LOG")" = 4 ] || fail "f32 cache: $(cat "$STANDIN_LOG")"
grep -q '^| synthetic:tinystories-15m@1234 | int4_g32_a8 | Q4_0 | 1 |' "$tmp/out.md" || fail "table row: $(cat "$tmp/out.md")"
grep -q "llama.cpp: .*llama-bench-standin (build 42, commit standin, binary fnv1a64:" "$tmp/out.md" || fail "footer: $(cat "$tmp/out.md")"

# The peer fails on its third invocation (the second row): the run is failed, the first row kept.
: > "$STANDIN_LOG"
rm -f "$db"
if STANDIN_FAIL_AT=3 "$CIBENCH" "${args[@]}" --db "$db" > /dev/null 2> "$tmp/err3"; then fail "a failing peer was accepted"; fi
grep -q "llama-bench-standin exited with status 1" "$tmp/err3" || fail "failure message: $(cat "$tmp/err3")"
grep -q "failed to load model" "$tmp/err3" || fail "peer's stderr not quoted: $(cat "$tmp/err3")"
[ "$(q 'SELECT status FROM runs')" = failed ] || fail "run not failed: $(q 'SELECT status FROM runs')"
[ "$(q "SELECT COUNT(*) FROM variants WHERE status = 'ok'")" = 1 ] || fail "first row lost: $(q 'SELECT label, status FROM variants')"

# Refused before anything runs.
: > "$STANDIN_LOG"
expect_error() {  # message-substring args...
  local want=$1; shift
  if "$CIBENCH" "$@" > /dev/null 2> "$tmp/e"; then fail "accepted: $*"; fi
  grep -qF -- "$want" "$tmp/e" || fail "message for $*: $(cat "$tmp/e") (wanted: $want)"
}
expect_error "format 'f32_sparse' has no llama.cpp counterpart" bench --models synthetic:tinystories-15m -f f32_sparse -T 1 --peer "llama-bench=$standin"
expect_error "expected llama-bench=PATH" bench --models synthetic:tinystories-15m -T 1 --peer "$standin"
expect_error "/nonexistent/llama-bench: no such file" bench --models synthetic:tinystories-15m -T 1 --peer llama-bench=/nonexistent/llama-bench
expect_error "llama.cpp always keeps a KV cache" bench --models synthetic:tinystories-15m -T 1 --kv none --peer "llama-bench=$standin"
expect_error "--peer-gguf 'Q5_K=x': type 'Q5_K' is not one of" bench --models synthetic:tinystories-15m -T 1 --peer "llama-bench=$standin" --peer-gguf Q5_K=x
expect_error "need --peer llama-bench=PATH" bench --models synthetic:tinystories-15m -T 1 --peer-dir "$tmp"
[ ! -s "$STANDIN_LOG" ] || fail "the peer ran for a refused command: $(cat "$STANDIN_LOG")"
echo "bench_peer: ok"
