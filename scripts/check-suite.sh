#!/usr/bin/env bash
# After the Release suite (scripts/test.sh): proves that the whole product was built and tested,
# and says at which instruction-set levels the tests ran.
#   - cibench, cibench-gui and cibench-microbench exist, and the configure summary says every
#     optional part was built;
#   - every dashboard and report test (gui.*, report.*) ran and passed: none missing, none skipped;
#   - isa.isolation and isa.emulated_cpus (docs/isa.md) ran and passed;
#   - layers.imports (scripts/check-layers.py) ran and passed;
#   - a table of the ISA levels: per level, the tests that ran and those skipped (with the reason).
# usage: scripts/check-suite.sh BUILD_DIR JUNIT_XML
set -euo pipefail
build=$1
junit=$2
fail() { echo "cibench check: FAIL: $*" >&2; exit 1; }

[ -f "$junit" ] || fail "no test results at $junit"
for exe in cibench cibench-gui cibench-microbench; do
  [ -x "$build/bin/$exe" ] || fail "$exe was not built ($build/bin/$exe is missing)"
done
parts="$build/cibench-parts.txt"
[ -f "$parts" ] || fail "no configure summary at $parts"
echo "cibench check: parts of this build:"
sed 's/^/  /' "$parts"
if grep -q "NOT BUILT" "$parts"; then
  fail "a part of the product was not built: $(grep 'NOT BUILT' "$parts" | tr '\n' ' ')"
fi

# One line per test case: STATUS<TAB>NAME (status run, fail or notrun).
cases=$(grep -o '<testcase name="[^"]*"[^>]*status="[a-z]*"' "$junit" |
        sed 's/^<testcase name="\([^"]*\)".*status="\([a-z]*\)"$/\2\t\1/')
total=$(printf '%s\n' "$cases" | grep -c . || true)
[ "$total" -gt 0 ] || fail "no test cases in $junit"
failed=$(printf '%s\n' "$cases" | awk -F'\t' '$1 == "fail" { print "  " $2 }')
[ -z "$failed" ] || fail "tests failed:
$failed"

# The dashboard and the reports: every test registered under gui.* and report.* ran and passed.
registered=$(ctest --test-dir "$build" -N 2>/dev/null | sed -n 's/^ *Test *#[0-9]*: \(\(gui\|report\)\.[^ ]*\).*/\1/p' | sort)
[ -n "$registered" ] || fail "no gui.* or report.* tests are registered in $build"
for required in gui.xvfb_window report.chromium_render; do
  printf '%s\n' "$registered" | grep -qx "$required" || fail "the test $required is not registered"
done
n_gui=0
while IFS= read -r t; do
  st=$(printf '%s\n' "$cases" | awk -F'\t' -v n="$t" '$2 == n { print $1 }')
  [ "$st" = run ] || fail "the dashboard/report test '$t' did not pass (status: ${st:-missing})"
  n_gui=$((n_gui + 1))
done <<<"$registered"
echo "cibench check: $n_gui dashboard and report tests ran and passed (none skipped)"

# Every x86-64 CPU (docs/isa.md): the static check and the emulated lower CPUs ran and passed.
for required in isa.isolation isa.emulated_cpus; do
  st=$(printf '%s\n' "$cases" | awk -F'\t' -v n="$required" '$2 == n { print $1 }')
  [ "$st" = run ] || fail "the test $required did not pass (status: ${st:-missing})"
done
echo "cibench check: isa.isolation and isa.emulated_cpus ran and passed (nothing above the baseline outside dispatch; AVX2, SSE4.2 and baseline CPUs emulated)"

# Fleets (docs/fleet.md): the two-task job array on the real one-node Slurm ran and passed.
st=$(printf '%s\n' "$cases" | awk -F'\t' '$2 == "e2e.fleet_slurm" { print $1 }')
[ "$st" = run ] || fail "the test e2e.fleet_slurm did not pass (status: ${st:-missing})"
echo "cibench check: e2e.fleet_slurm ran and passed (a two-task Slurm job array, two host types, stores merged and priced)"

# The layers import only downward (engines <- harness <- reports <- gui; docs/harness.md).
st=$(printf '%s\n' "$cases" | awk -F'\t' '$2 == "layers.imports" { print $1 }')
[ "$st" = run ] || fail "the test layers.imports did not pass (status: ${st:-missing})"
echo "cibench check: layers.imports ran and passed (every include and link points down; no file under gui/ or reports/ above 1,200 lines)"

# ISA levels: a test's name carries its level when it runs at one (…/avx2, …_avx512_vnni_t1).
level_of() {
  case "$1" in
    *avx512_vnni*) echo avx512_vnni ;;
    *amx*) echo amx ;;
    *avx512*) echo avx512 ;;
    *avx2*) echo avx2 ;;
    *generic*) echo generic ;;
    *) echo "" ;;
  esac
}
declare -A ran skipped
for l in generic avx2 avx512 avx512_vnni amx; do ran[$l]=0; skipped[$l]=0; done
while IFS=$'\t' read -r st name; do
  l=$(level_of "$name")
  [ -n "$l" ] || continue
  if [ "$st" = run ]; then ran[$l]=$((ran[$l] + 1)); else skipped[$l]=$((skipped[$l] + 1)); fi
done <<<"$cases"
cpu=$("$build/bin/cibench" sysinfo | sed -n 's/^cpu *//p')
isa=$("$build/bin/cibench" sysinfo | sed -n 's/^isa *//p')
echo "cibench check: CPU $cpu"
echo "cibench check: ISA $isa${CIBENCH_ISA:+ (CIBENCH_ISA=$CIBENCH_ISA)}"
echo "cibench check: tests per ISA level (the per-level tests; the others run at the active level):"
printf '  %-12s %6s %8s\n' level ran skipped
for l in generic avx2 avx512 avx512_vnni amx; do
  printf '  %-12s %6d %8d\n' "$l" "${ran[$l]}" "${skipped[$l]}"
done
tested=""
for l in generic avx2 avx512 avx512_vnni amx; do [ "${ran[$l]}" -gt 0 ] && tested+=" $l"; done
echo "cibench check: the tests ran at:$tested"
# Every level this process may use (the CPU's, up to CIBENCH_ISA) must have run its tests.
usable=$(printf '%s\n' "$isa" | sed -n 's/.*supported: \([^(]*\).*/\1/p')
for l in $usable; do
  [ "${ran[$l]:-0}" -gt 0 ] || fail "no per-level test ran at $l, which this host supports"
done
# Anything else that was skipped is listed, so a skip is never silent.
others=$(printf '%s\n' "$cases" | awk -F'\t' '$1 == "notrun" { print $2 }' | while IFS= read -r n; do
  [ -n "$(level_of "$n")" ] || echo "$n"; done)
if [ -n "$others" ]; then
  echo "cibench check: skipped, not for want of an ISA level:"
  printf '  %s\n' $others
else
  echo "cibench check: no other test was skipped"
fi
echo "cibench check: ok ($total tests)"
