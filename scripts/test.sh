#!/usr/bin/env bash
# Installs what is missing, builds, and runs the tests.
#   scripts/test.sh                 Release build, every test (what README and CI run), then
#                                   scripts/check-suite.sh: the whole product built, every dashboard
#                                   and report test run, the ISA levels the tests ran at
#   CIBENCH_ISA=avx2 scripts/test.sh   the same with this CPU capped at avx2 (the avx2 kernels; proof
#                                   that cibench runs on an AVX2 CPU is scripts/test-emulated.sh)
#   scripts/test.sh --asan-parsers  ASan/UBSan build, the model/tokenizer/scenario parser tests
#   scripts/test.sh --asan | --tsan every test under that sanitizer
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --test
shared="${CIBENCH_SHARED:-$(cd .. && pwd)/shared}"
mode="${1:-release}"
jobs="$(nproc)"
case "$mode" in
  release)
    cmake --preset release -DCIBENCH_SHARED_DIR="$shared" >/dev/null
    cmake --build build/release -j "$jobs"
    rm -f build/release/ctest-junit.xml
    ctest --test-dir build/release --output-on-failure -j "$jobs" --output-junit ctest-junit.xml
    bash scripts/check-suite.sh build/release build/release/ctest-junit.xml ;;
  --asan-parsers)
    # The fuzz seed files are written by the Release tree's cibench when there is one (brought up
    # to date here; CI has just built it), else by a sanitizer build of it.
    seed_cli=""
    if [ -f build/release/build.ninja ]; then
      cmake --build build/release -j "$jobs" --target cibench
      seed_cli="$(pwd)/build/release/bin/cibench"
    fi
    cmake --preset asan-parsers -DCIBENCH_SHARED_DIR="$shared" -DCIBENCH_SEED_CLI="$seed_cli" >/dev/null
    targets=(cibench_tests fuzz_smoke fuzz_smoke_scenario fuzz_smoke_text fuzz_smoke_bert fuzz_smoke_store)
    [ -z "$seed_cli" ] && targets+=(cibench)
    cmake --build build/asan-parsers -j "$jobs" --target "${targets[@]}"
    ctest --test-dir build/asan-parsers --output-on-failure --no-tests=error -j "$jobs" \
      -R 'Loaders|GgmlKQuant|GgufKQuant|GgufQ4_0|Tokenizer|WordPiece|HarnessScenario|InconsistentModels|Merge\.|Fleet\.|TaskEval\.(MultipleChoice|BadLines|McNemar)|fuzz|^isa\.isolation$|^layers\.imports$' ;;
  --asan)
    cmake --preset asan -DCIBENCH_SHARED_DIR="$shared" >/dev/null
    cmake --build build/asan -j "$jobs"
    ctest --test-dir build/asan --output-on-failure -j "$jobs" ;;
  --tsan)
    cmake --preset tsan -DCIBENCH_SHARED_DIR="$shared" >/dev/null
    cmake --build build/tsan -j "$jobs"
    ctest --test-dir build/tsan --output-on-failure -j "$jobs" ;;
  *) echo "usage: scripts/test.sh [--asan-parsers|--asan|--tsan]" >&2; exit 2 ;;
esac
