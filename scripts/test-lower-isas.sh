#!/usr/bin/env bash
# Runs the tests that are not instantiated per ISA level (those named …/generic, …_avx2_t1 etc.
# already ran at every level) again at each level below the best this host has, with CIBENCH_ISA
# as the ceiling, so the harness, the end-to-end runs and everything else that takes the
# process's level are exercised at each lower level's kernels (on this CPU: that cibench runs on a
# lower CPU is scripts/test-emulated.sh's to show). Not repeated: the fuzz smokes and
# the hostile-input run (they test the parsers' error paths, which take no ISA level), the
# dashboard and report-rendering tests (synthetic stores, no engine) and the isa.* checks (the
# build's objects and programs, and CPUs emulated whatever this one is).
# usage: scripts/test-lower-isas.sh BUILD_DIR   (after scripts/test.sh has built it)
set -euo pipefail
build=${1:-build/release}
levels=$(env -u CIBENCH_ISA "$build/bin/cibench" sysinfo | sed -n 's/^isa .*supported: \([^(]*\).*/\1/p' | xargs)
top=$(printf '%s\n' $levels | tail -n1)
per_level='(/|_)(generic|avx2|avx512|avx512_vnni|amx)($|_t[0-9])'
level_free='^(fuzz\.|gui\.|report\.chromium_render$|e2e\.hostile_inputs$|e2e\.fleet_slurm$|isa\.|layers\.)'
for level in $levels; do
  [ "$level" = "$top" ] && continue
  echo "cibench: the tests that take the process's level, at CIBENCH_ISA=$level (host: $levels)"
  start=$(date +%s)
  CIBENCH_ISA=$level ctest --test-dir "$build" --output-on-failure -j "$(nproc)" -E "$per_level|$level_free"
  echo "cibench: CIBENCH_ISA=$level passed in $(( $(date +%s) - start )) s"
done
