#!/usr/bin/env bash
# cibench on CPUs below the build machine's, emulated: Debian's qemu-user runs the x86-64 binaries
# of a build as another CPU model, whose cpuid the program reads, so the process sees and
# dispatches for that CPU, and any instruction above it dies with SIGILL (CIBENCH_ISA only caps
# dispatch: it cannot show that nothing compiled higher runs). QEMU's TCG implements up to AVX2,
# FMA and F16C and no AVX-512:
#   -cpu max      an AVX2 CPU without AVX-512 (AMD Zen 2/3, Intel Haswell .. Alder Lake): level avx2
#   -cpu Nehalem  an SSE4.2 CPU without AVX (x86-64-v2): level generic
#   -cpu qemu64   the plain x86-64 baseline (SSE2, SSE3): level generic; sysinfo and the golden text
# Under each of max and Nehalem:
#   - `cibench sysinfo` names the emulated CPU and exactly the expected levels;
#   - stories260K's greedy text (200 positions, 1 and 2 threads) equals the golden file;
#   - `classify` of 64 SST-2 sentences with bert-tiny-sst2: f32 logits within 1e-4 of the reference
#     and its labels, int8 and w8a8 classify;
#   - a short format sweep of stories260K (f32, bf16, int8, w8a8, w8a7, int4_g32, int4_g32_a8,
#     int8_g32_a8, int8_sparse) into a store: every variant ok at the expected level, f32 KL 0;
#   - cibench-microbench starts and lists no benchmark above the level (-cpu max: two run at avx2);
#   - the unit tests that reach every format row's kernels and every kernel table entry at the
#     emulated level (FormatTwin, KernelTwin, Formats, paged attention, the Llama session and the
#     encoder in every format; `filter` below): the AVX2 kernels against the generic twins under
#     -cpu max, every table builder, quantiser and generic kernel under -cpu Nehalem; none of
#     them may be skipped, and the BERT classifier on real weights is the classify step above.
# usage: scripts/test-emulated.sh BUILD_DIR   (after scripts/test.sh has built it; needs qemu-user)
set -euo pipefail
build=${1:-build/release}
here=$(cd "$(dirname "$0")/.." && pwd)
shared=${CIBENCH_SHARED:-$(cd "$here/.." && pwd)/shared}
export CIBENCH_SHARED=$shared
cli="$build/bin/cibench"
tests="$build/tests/cibench_tests"
fail() { echo "cibench emulated: FAIL: $*" >&2; exit 1; }
command -v qemu-x86_64 >/dev/null || fail "qemu-x86_64 not found (Debian package qemu-user: scripts/install-deps.sh --test installs it)"
[ -x "$cli" ] && [ -x "$tests" ] || fail "no $cli or $tests: build first (scripts/test.sh)"
s260=$shared/models/stories260K
tiny=$shared/models/bert-tiny-sst2
sst2=$shared/data/sst2-validation/SST-2-val.tsv
for f in "$s260/stories260K.bin" "$s260/tok512.bin" "$s260/expected_greedy_t0_n200.txt" "$tiny/model.safetensors" \
         "$tiny/ref/val_logits.f32" "$sst2"; do
  [ -e "$f" ] || fail "missing $f (the shared models and data beside the checkout)"
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset CIBENCH_ISA

# The unit tests that reach every kernel family at the level under test (-cpu max: avx2):
# every format row's kernels against the generic twins (FormatTwin), the f32 and element-wise
# table (KernelTwin), the table builders, decode layouts and runners (Formats), paged attention,
# the Llama session (stories260K's golden text and logits in three containers, 1 and 2 threads;
# the fast paths against the exact reference) and the encoder in every weight format. The
# instantiations at levels the CPU lacks skip themselves.
filter='Formats.*:AllIsas/FormatTwin.*/avx2:AllIsas/KernelTwin.*/avx2:AllIsas/PagedAttention.*/avx2'
filter+=':AllContainersIsasThreads/Stories260K.*_avx2_*:AllIsas/LlamaAtIsa.FastPathsAsAccurateAsTheFp32ReferenceOnStories260K/avx2'
filter+=':AllIsas/BertAtIsa.EveryWeightFormatRuns/avx2'
# -cpu Nehalem: the same at generic (the twins' oracle itself: every generic kernel of every row).
generic_filter=${filter//avx2/generic}
emulated() {  # CPU EXPECTED_LEVEL EXPECTED_SUPPORTED
  local cpu=$1 level=$2 supported=$3 start q
  start=$(date +%s)
  q() { qemu-x86_64 -cpu "$cpu" "$@"; }
  echo "cibench emulated: -cpu $cpu (expect level $level)"

  q "$cli" sysinfo >"$tmp/sysinfo" 2>&1 || fail "-cpu $cpu: sysinfo exited $? ($(tail -n2 "$tmp/sysinfo"))"
  grep '^cpu \|^flags \|^isa ' "$tmp/sysinfo" | sed 's/^/  /'
  grep -q "^isa  *active $level, best $level, supported: $supported\$" "$tmp/sysinfo" ||
    fail "-cpu $cpu: sysinfo says '$(grep '^isa ' "$tmp/sysinfo")', expected active $level, supported: $supported"
  ! grep '^flags ' "$tmp/sysinfo" | grep -q avx512 || fail "-cpu $cpu: AVX-512 flags under emulation"

  for threads in 1 2; do
    q "$cli" generate -m "$s260/stories260K.bin" -z "$s260/tok512.bin" -n 200 -t 0 -T "$threads" \
      >"$tmp/greedy.txt" 2>"$tmp/greedy.err" || fail "-cpu $cpu: generate: $(tail -n2 "$tmp/greedy.err")"
    cmp -s "$tmp/greedy.txt" "$s260/expected_greedy_t0_n200.txt" ||
      fail "-cpu $cpu: stories260K greedy text at $threads thread(s) differs from expected_greedy_t0_n200.txt"
    grep -q "isa $level," "$tmp/greedy.err" || fail "-cpu $cpu: generate did not run at $level: $(cat "$tmp/greedy.err")"
  done
  echo "  stories260K greedy, 200 positions, 1 and 2 threads: the golden text, at $level"

  q "$cli" classify -m "$tiny" -i "$sst2" --limit 64 --json >"$tmp/cls.jsonl" 2>"$tmp/cls.err" ||
    fail "-cpu $cpu: classify: $(tail -n2 "$tmp/cls.err")"
  python3 - "$tmp/cls.jsonl" "$tiny/ref/val_logits.f32" "$level" <<'EOF' || fail "-cpu $cpu: classify against the reference"
import json, struct, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
summary = [r for r in rows if r.get("summary")]
rows = [r for r in rows if not r.get("summary")]
ref = open(sys.argv[2], "rb").read()
assert len(rows) == 64, f"{len(rows)} sentences classified, expected 64"
assert summary and summary[0]["isa"] == sys.argv[3], f"classified at {summary and summary[0]['isa']}"
worst = 0.0
for r in rows:
    want = struct.unpack_from("<2f", ref, 8 * r["index"])
    worst = max(worst, max(abs(a - b) for a, b in zip(r["logits"], want)))
    assert r["label_id"] == (1 if want[1] > want[0] else 0), f"sentence {r['index']}: label {r['label_id']}, reference logits {want}"
assert worst <= 1e-4, f"logits {worst:.2e} from the reference (1e-4 allowed)"
print(f"  classify bert-tiny-sst2 f32, 64 SST-2 sentences: logits within {worst:.1e} of the reference, its labels, accuracy {summary[0]['accuracy']:.3f}")
EOF
  for format in int8 w8a8; do
    q "$cli" classify -m "$tiny" -i "$sst2" --limit 64 -f "$format" --json >"$tmp/cls.jsonl" 2>"$tmp/cls.err" ||
      fail "-cpu $cpu: classify -f $format: $(tail -n2 "$tmp/cls.err")"
    grep -q "\"summary\":true" "$tmp/cls.jsonl" && grep -q "\"isa\":\"$level\"" "$tmp/cls.jsonl" ||
      fail "-cpu $cpu: classify -f $format: no summary at $level"
  done
  echo "  classify bert-tiny-sst2 int8 and w8a8: ran at $level"

  local db=$tmp/$cpu.sqlite formats='["f32","bf16","int8","w8a8","w8a7","int4_g32","int4_g32_a8","int8_g32_a8","int8_sparse"]'
  q "$cli" run "$here/scenarios/format-sweep.toml" --db "$db" -q \
    --set model.source=models/stories260K/stories260K.bin --set model.tokenizer=models/stories260K/tok512.bin \
    --set "matrix.format=$formats" --set run.min_duration_ms=200 --set run.min_queries=3 --set run.warmup_queries=1 \
    --set accuracy.max_tokens=128 --set accuracy.window=64 --set workload.gen_tokens=8 >"$tmp/run.out" 2>&1 ||
    fail "-cpu $cpu: cibench run: $(tail -n3 "$tmp/run.out")"
  [ "$(sqlite3 "$db" "SELECT status || ' ' || isa_best || ' ' || isa_active FROM runs")" = "complete $level $level" ] ||
    fail "-cpu $cpu: the run row: $(sqlite3 "$db" 'SELECT status, isa_best, isa_active FROM runs')"
  [ "$(sqlite3 "$db" "SELECT COUNT(*) FROM variants WHERE status = 'ok' AND isa_used = '$level'")" = 9 ] ||
    fail "-cpu $cpu: variants: $(sqlite3 "$db" 'SELECT format, status, isa_used FROM variants' | tr '\n' ' ')"
  [ "$(sqlite3 "$db" "SELECT kl_mean = 0 AND top1_agreement = 1 FROM variants WHERE format = 'f32'")" = 1 ] ||
    fail "-cpu $cpu: f32 against itself"
  [ "$(sqlite3 "$db" "SELECT COUNT(*) FROM variants WHERE format <> 'f32' AND kl_mean > 0")" = 8 ] ||
    fail "-cpu $cpu: the quantised formats' KL"
  echo "  format sweep of stories260K into a store: 9 variants ok at $level ($(sqlite3 "$db" \
    "SELECT group_concat(format || ' KL ' || printf('%.2g', kl_mean), ', ') FROM variants WHERE format <> 'f32'"))"

  # The micro-benchmarks start (their registration runs at start-up) and list no level the CPU lacks.
  q "$build/bin/cibench-microbench" --benchmark_list_tests >"$tmp/bench.txt" 2>&1 ||
    fail "-cpu $cpu: cibench-microbench --benchmark_list_tests exited $?"
  ! grep -qE "/(avx512|avx512_vnni|amx)/|peak/(fma_f32_512|vdpbf16ps|vpdpbusd|amx)" "$tmp/bench.txt" ||
    fail "-cpu $cpu: cibench-microbench lists benchmarks of a level this CPU lacks"
  if [ "$level" = avx2 ]; then
    q "$build/bin/cibench-microbench" --benchmark_filter='^(peak/fma_f32_256|matvec/int4_g32_a8/avx2/768x768/t1)/' \
      --benchmark_min_time=0.01 >"$tmp/bench.txt" 2>&1 || fail "-cpu $cpu: cibench-microbench at avx2: $(tail -n2 "$tmp/bench.txt")"
    [ "$(grep -cE '^(peak/fma_f32_256|matvec/int4_g32_a8/avx2)' "$tmp/bench.txt")" = 2 ] ||
      fail "-cpu $cpu: the avx2 micro-benchmarks did not run: $(cat "$tmp/bench.txt")"
  fi
  echo "  cibench-microbench: $(q "$build/bin/cibench-microbench" --benchmark_list_tests 2>/dev/null | wc -l) benchmarks listed, none above $level"

  local want_filter=$filter
  [ "$level" = generic ] && want_filter=$generic_filter
  q "$tests" --gtest_filter="$want_filter" >"$tmp/gtest.out" 2>&1 ||
    { tail -n 40 "$tmp/gtest.out" >&2; fail "-cpu $cpu: unit tests failed"; }
  local ran skipped at_level
  ran=$(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\?\..*/\1/p' "$tmp/gtest.out")
  skipped=$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\?[,.].*/\1/p' "$tmp/gtest.out")
  at_level=$("$tests" --gtest_filter="$want_filter" --gtest_list_tests | grep -cE "[/_]$level([[:space:]]|\$|_t)" || true)
  [ -n "$ran" ] && [ "$ran" -gt 0 ] || fail "-cpu $cpu: no unit test passed: $(tail -n3 "$tmp/gtest.out")"
  [ "$at_level" -gt 0 ] || fail "-cpu $cpu: no unit test is instantiated at $level"
  if grep -E "^\[  SKIPPED \] .*[/_]$level(\$|_t)" "$tmp/gtest.out"; then
    fail "-cpu $cpu: tests at $level skipped on a CPU that has it"
  fi
  echo "  unit tests: $ran passed ($at_level of them at $level; ${skipped:-0} skipped: tests of levels this CPU lacks), $(( $(date +%s) - start )) s in all"
}

emulated max avx2 "generic avx2"
emulated Nehalem generic generic

# The plain x86-64 baseline (no SSSE3, SSE4, POPCNT): the program starts, picks generic, and
# prints the golden text.
qemu-x86_64 -cpu qemu64 "$cli" sysinfo >"$tmp/sysinfo" 2>&1 || fail "-cpu qemu64: sysinfo exited $?"
grep -q "^isa  *active generic, best generic, supported: generic\$" "$tmp/sysinfo" || fail "-cpu qemu64: $(grep '^isa ' "$tmp/sysinfo")"
qemu-x86_64 -cpu qemu64 "$cli" generate -m "$s260/stories260K.bin" -z "$s260/tok512.bin" -n 200 -t 0 >"$tmp/greedy.txt" 2>/dev/null ||
  fail "-cpu qemu64: generate"
cmp -s "$tmp/greedy.txt" "$s260/expected_greedy_t0_n200.txt" || fail "-cpu qemu64: greedy text differs from the golden"
echo "cibench emulated: -cpu qemu64 (x86-64 baseline): sysinfo level generic, stories260K's golden text"
echo "cibench emulated: passed"
