#!/usr/bin/env bash
# cibench-gui in a real window: an X server (Xvfb), the dashboard opened on the fixture database
# (written by the harness's Store), the window found by its title (which names the file and its
# run count) with xdotool, and clicked with the mouse: ten clicks on the trade-off chart's points,
# at the positions the window prints (--print-points), each of which must select that point's
# variant, then two clicks elsewhere; the window must still be alive afterwards. Then the serving view
# of the fixture's serving run and the speculative view of its speculative run are grabbed with
# --screenshot. scripts/install-deps.sh --test
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
wrote=$("$fixture" "$tmp/dash.sqlite")
runs=$(sqlite3 "$tmp/dash.sqlite" 'SELECT COUNT(*) FROM runs' 2>/dev/null || echo "?")
# "wrote PATH: runs 1 (formats, hostA), ...": the run with trade-off points.
formats_run=$(sed -n 's/.*runs \([0-9][0-9]*\) (formats, hostA).*/\1/p' <<<"$wrote")
[ -n "$formats_run" ] || { echo "no formats run in the fixture tool's output: $wrote" >&2; exit 1; }
cat >"$tmp/inner.sh" <<'INNER'
set -euo pipefail
gui=$1 db=$2 out=$3 run=$4
unset QT_QPA_PLATFORM   # a real X11 window, not the offscreen platform
"$gui" "$db" --runs "$run" --view tradeoff --size 1400x900 --print-points >"$out/gui.log" 2>"$out/gui.err" &
pid=$!
wid=$(timeout 60 xdotool search --sync --onlyvisible --name 'cibench-gui - ' | head -n1)
xdotool getwindowname "$wid" >"$out/title.txt"
xdotool getwindowgeometry "$wid" >"$out/geometry.txt"
selections() { grep -c '^selected ' "$out/gui.log" || true; }
for _ in $(seq 100); do [ "$(selections)" -ge 1 ] && break; sleep 0.1; done
mapfile -t ids < <(grep '^point ' "$out/gui.log" | awk '{print $2}' | awk '!seen[$0]++')
[ "${#ids[@]}" -ge 5 ] || { echo "the window printed ${#ids[@]} trade-off points" >&2; exit 1; }
# Ten clicks, each on another point, where the window last said it is drawn.
for k in $(seq 0 9); do
  id=${ids[k % ${#ids[@]}]}
  read -r _ _ x y < <(grep "^point $id " "$out/gui.log" | tail -n1)
  before=$(selections)
  xdotool mousemove --window "$wid" "$x" "$y" click 1
  for _ in $(seq 100); do [ "$(selections)" -gt "$before" ] && break; kill -0 "$pid"; sleep 0.1; done
  got=$(grep '^selected ' "$out/gui.log" | tail -n1)
  if [ "$got" != "selected $id" ]; then
    echo "click $((k + 1)) at ($x, $y) on variant $id: the window says '$got'" >&2
    exit 1
  fi
  echo "click $((k + 1)) at ($x, $y): $got" >>"$out/clicks.txt"
done
# Then in the middle of the window and on the left panel, and let events settle.
eval "$(xdotool getwindowgeometry --shell "$wid")"
xdotool mousemove --window "$wid" $((WIDTH / 2)) $((HEIGHT / 2)) click 1
xdotool mousemove --window "$wid" 100 200 click 1
sleep 1
kill -0 "$pid"          # still running after the clicks
xdotool search --onlyvisible --name 'cibench-gui - ' >/dev/null
kill "$pid"
wait "$pid" || true
INNER
xvfb-run -a -s "-screen 0 1600x1000x24" bash "$tmp/inner.sh" "$gui" "$tmp/dash.sqlite" "$tmp" "$formats_run" || {
  echo "cibench-gui did not open a window, or died or did not select a point after a click; its output:" >&2
  cat "$tmp/gui.log" "$tmp/gui.err" >&2 || true
  cat "$tmp/clicks.txt" >&2 2>/dev/null || true
  exit 1
}
cat "$tmp/clicks.txt"
title=$(cat "$tmp/title.txt")
echo "window: $title; $(tr '\n' ' ' <"$tmp/geometry.txt")"
if [ "$runs" = 1 ]; then want="cibench-gui - dash.sqlite (1 run)"; else want="cibench-gui - dash.sqlite ($runs runs)"; fi
if [ "$title" != "$want" ]; then
  echo "expected the title '$want', got '$title'" >&2
  exit 1
fi
# The serving view of the fixture's serving run, grabbed by --screenshot as the documentation's is.
wrote=$("$fixture" "$tmp/serving.sqlite" --serving)
serving_run=$(sed -n 's/^wrote run \([0-9][0-9]*\) (serving)$/\1/p' <<<"$wrote")
[ -n "$serving_run" ] || { echo "no serving run in the fixture tool's output: $wrote" >&2; exit 1; }
env -u QT_QPA_PLATFORM xvfb-run -a -s "-screen 0 1600x1000x24" "$gui" "$tmp/serving.sqlite" --runs "$serving_run" \
  --view serving --size 1400x900 --screenshot "$tmp/serving.png" 2>"$tmp/serving.err" || {
  echo "cibench-gui --view serving --screenshot failed:" >&2
  cat "$tmp/serving.err" >&2
  exit 1
}
size=$(stat -c %s "$tmp/serving.png")
dims=$(od -An -tu1 -j16 -N8 "$tmp/serving.png" | awk '{print $3 * 256 + $4 "x" $7 * 256 + $8}')
echo "serving view screenshot: $dims, $size bytes"
[ "$dims" = "1400x900" ] || { echo "expected a 1400x900 screenshot" >&2; exit 1; }
# A blank window of that size compresses to a few kilobytes; four charts and a timeline do not.
[ "$size" -gt 60000 ] || { echo "the serving view screenshot looks blank" >&2; exit 1; }
# The speculative-decoding view of the fixture's speculative run, grabbed the same way.
wrote=$("$fixture" "$tmp/speculative.sqlite" --speculative)
spec_run=$(sed -n 's/^wrote run \([0-9][0-9]*\) (speculative)$/\1/p' <<<"$wrote")
[ -n "$spec_run" ] || { echo "no speculative run in the fixture tool's output: $wrote" >&2; exit 1; }
env -u QT_QPA_PLATFORM xvfb-run -a -s "-screen 0 1600x1000x24" "$gui" "$tmp/speculative.sqlite" --runs "$spec_run" \
  --view speculative --size 1400x900 --screenshot "$tmp/speculative.png" 2>"$tmp/speculative.err" || {
  echo "cibench-gui --view speculative --screenshot failed:" >&2
  cat "$tmp/speculative.err" >&2
  exit 1
}
size=$(stat -c %s "$tmp/speculative.png")
dims=$(od -An -tu1 -j16 -N8 "$tmp/speculative.png" | awk '{print $3 * 256 + $4 "x" $7 * 256 + $8}')
echo "speculative view screenshot: $dims, $size bytes"
[ "$dims" = "1400x900" ] || { echo "expected a 1400x900 screenshot" >&2; exit 1; }
[ "$size" -gt 60000 ] || { echo "the speculative view screenshot looks blank" >&2; exit 1; }
echo "ok: cibench-gui opened $runs run(s) in a real X window; ten clicks on points selected them, and it survived"
