#!/usr/bin/env bash
# cibench-gui --help and --version answer without a display: no DISPLAY, no WAYLAND_DISPLAY and no
# QT_QPA_PLATFORM (so no platform plugin can be loaded); each must exit 0 and print its text.
# usage: help_without_display.sh CIBENCH_GUI
set -uo pipefail
gui=$1
fail=0
for opt in --help -h --version; do
  out=$(env -u DISPLAY -u WAYLAND_DISPLAY -u QT_QPA_PLATFORM timeout 30 "$gui" "$opt" 2>&1)
  rc=$?
  case $opt in
    --version) want="cibench-gui [0-9]" ;;
    *) want="Usage: .*cibench-gui" ;;
  esac
  if [ "$rc" -ne 0 ]; then
    echo "cibench-gui $opt without a display exited $rc; output:" >&2
    echo "$out" >&2
    fail=1
  elif ! grep -q "$want" <<<"$out"; then
    echo "cibench-gui $opt: no '$want' in its output:" >&2
    echo "$out" >&2
    fail=1
  fi
  if [ "$opt" = --help ] && [ "$rc" -eq 0 ]; then
    for o in --export-charts --screenshot --print-points --view; do
      grep -q -- "$o" <<<"$out" || { echo "cibench-gui --help does not list $o" >&2; fail=1; }
    done
  fi
done
[ "$fail" -eq 0 ] && echo "ok: --help, -h and --version exit 0 without a display"
exit "$fail"
