#!/usr/bin/env bash
# cibench-gui in a real window: an X server (Xvfb), the dashboard opened on a database with one
# run written by the harness, the window found by its title (which names the file and its run
# count) with xdotool, clicked in, and still alive afterwards. scripts/install-deps.sh --test
# installs xdotool; without Xvfb or xdotool the test is reported as skipped (exit 77), except
# under CI, where that is a failure.
# usage: xvfb_window.sh CIBENCH_GUI FIXTURE_TOOL
set -euo pipefail
gui=$1
fixture=$2
# shellcheck source=missing_tool.sh
. "${BASH_SOURCE[0]%/*}/missing_tool.sh"
for tool in xvfb-run xdotool; do command -v "$tool" >/dev/null || missing_tool "$tool"; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$fixture" "$tmp/dash.sqlite" >/dev/null
runs=$(sqlite3 "$tmp/dash.sqlite" 'SELECT COUNT(*) FROM runs' 2>/dev/null || echo "?")
cat >"$tmp/inner.sh" <<'INNER'
set -euo pipefail
gui=$1 db=$2 out=$3
unset QT_QPA_PLATFORM   # a real X11 window, not the offscreen platform
"$gui" "$db" >"$out/gui.log" 2>&1 &
pid=$!
wid=$(timeout 60 xdotool search --sync --onlyvisible --name 'cibench-gui - ' | head -n1)
xdotool getwindowname "$wid" >"$out/title.txt"
xdotool getwindowgeometry "$wid" >"$out/geometry.txt"
# Click in the middle of the window (the charts) and on the left panel, then let events settle.
eval "$(xdotool getwindowgeometry --shell "$wid")"
xdotool mousemove --window "$wid" $((WIDTH / 2)) $((HEIGHT / 2)) click 1
xdotool mousemove --window "$wid" 100 200 click 1
sleep 1
kill -0 "$pid"          # still running after the clicks
xdotool search --onlyvisible --name 'cibench-gui - ' >/dev/null
kill "$pid"
wait "$pid" || true
INNER
xvfb-run -a -s "-screen 0 1600x1000x24" bash "$tmp/inner.sh" "$gui" "$tmp/dash.sqlite" "$tmp" || {
  echo "cibench-gui did not open a window, or died after the clicks; its output:" >&2
  cat "$tmp/gui.log" >&2 || true
  exit 1
}
title=$(cat "$tmp/title.txt")
echo "window: $title; $(tr '\n' ' ' <"$tmp/geometry.txt")"
if [ "$runs" = 1 ]; then want="cibench-gui - dash.sqlite (1 run)"; else want="cibench-gui - dash.sqlite ($runs runs)"; fi
if [ "$title" != "$want" ]; then
  echo "expected the title '$want', got '$title'" >&2
  exit 1
fi
echo "ok: cibench-gui opened $runs run(s) in a real X window and survived two clicks"
