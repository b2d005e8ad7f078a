#!/usr/bin/env bash
# CIBENCH_ISA caps the levels a process may use, so `CIBENCH_ISA=avx2 ctest` runs the suite as an
# AVX2-only host would: sysinfo lists only the levels up to the cap (and names the cap), --isa above
# it is refused naming CIBENCH_ISA, a level the CPU lacks or an unknown name is refused naming it,
# and text generated under the cap equals text generated with --isa at that level.
# Usage: isa_ceiling.sh PATH-TO-CIBENCH [SHARED-DIR]
set -euo pipefail
CIBENCH=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

line=$(env -u CIBENCH_ISA "$CIBENCH" sysinfo | grep '^isa ')
echo "uncapped: $line"
cpu_levels=$(env -u CIBENCH_ISA "$CIBENCH" sysinfo | sed -n 's/^isa .*supported: //p')
[ -n "$cpu_levels" ] || fail "no supported levels in: $line"
case " $cpu_levels " in *" generic "*) ;; *) fail "generic missing from '$cpu_levels'";; esac

for level in $cpu_levels; do
  capped=$(CIBENCH_ISA=$level "$CIBENCH" sysinfo | grep '^isa ')
  echo "CIBENCH_ISA=$level: $capped"
  # The supported list ends at the cap and the cap is named unless it is the CPU's best.
  got=$(printf '%s\n' "$capped" | sed -n 's/^isa .*supported: \([^(]*\).*/\1/p' | xargs)
  want=$(printf '%s\n' $cpu_levels | sed -n "0,/^$level\$/p" | xargs)
  [ "$got" = "$want" ] || fail "CIBENCH_ISA=$level: supported '$got', expected '$want'"
  printf '%s\n' "$capped" | grep -q "active $level," || fail "CIBENCH_ISA=$level: not the active level: $capped"
done

# --isa above the cap: refused, naming the cap (only where the CPU has a level above generic).
top=$(printf '%s\n' $cpu_levels | tail -n1)
if [ "$top" != generic ]; then
  set +e
  CIBENCH_ISA=generic "$CIBENCH" generate -m synthetic:stories260k -n 4 -t 0 --isa "$top" >"$tmp/out" 2>"$tmp/err"
  rc=$?
  set -e
  [ "$rc" -ne 0 ] || fail "--isa $top under CIBENCH_ISA=generic succeeded"
  grep -qF "CIBENCH_ISA=generic caps this process at 'generic'" "$tmp/err" || fail "unexpected error: $(cat "$tmp/err")"
  # Generation under the cap is generation at that level.
  CIBENCH_ISA=generic "$CIBENCH" generate -m synthetic:stories260k -n 16 -t 0 >"$tmp/capped" 2>/dev/null
  env -u CIBENCH_ISA "$CIBENCH" generate -m synthetic:stories260k -n 16 -t 0 --isa generic >"$tmp/forced" 2>/dev/null
  cmp -s <(head -n1 "$tmp/capped") <(head -n1 "$tmp/forced") || fail "capped and forced generic text differ"
fi

# Unknown names and levels the CPU lacks are refused, naming them.
set +e
CIBENCH_ISA=avx1024 "$CIBENCH" sysinfo >/dev/null 2>"$tmp/err"; rc=$?
set -e
[ "$rc" -ne 0 ] && grep -qF "avx1024" "$tmp/err" || fail "CIBENCH_ISA=avx1024: rc $rc, $(cat "$tmp/err")"
for level in avx2 avx512 avx512_vnni amx; do
  case " $cpu_levels " in *" $level "*) continue;; esac
  set +e
  CIBENCH_ISA=$level "$CIBENCH" sysinfo >/dev/null 2>"$tmp/err"; rc=$?
  set -e
  [ "$rc" -ne 0 ] && grep -qF "CIBENCH_ISA=$level but this CPU" "$tmp/err" || fail "CIBENCH_ISA=$level: rc $rc, $(cat "$tmp/err")"
  echo "CIBENCH_ISA=$level refused: $(cat "$tmp/err")"
done
echo "ok"
