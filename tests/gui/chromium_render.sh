#!/usr/bin/env bash
# `cibench report` output rendered by a headless browser: the HTML parses into a DOM with the SVG
# charts and the frontier, and paints to a non-blank PNG; a serving run's report has its serving
# charts and timelines, a speculative run's its speculative charts and marked row. scripts/test.sh
# installs chromium (install-deps.sh --test); a build run without it reports this test as skipped (exit 77), except
# under CI, where a missing browser is a failure.
# usage: chromium_render.sh CIBENCH FIXTURE_TOOL
set -euo pipefail
cibench=$1
fixture=$2
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
# shellcheck source=missing_tool.sh
. "${BASH_SOURCE[0]%/*}/missing_tool.sh"
[ -n "$chrome" ] || missing_tool chromium
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$fixture" "$tmp/fixture.sqlite" >/dev/null
"$cibench" report 1 --db "$tmp/fixture.sqlite" --out "$tmp/out" >/dev/null
flags=(--headless --no-sandbox --disable-gpu --disable-background-networking --disable-component-update
       --disable-sync --no-first-run --disable-extensions --user-data-dir="$tmp/profile")
timeout 120 "$chrome" "${flags[@]}" --dump-dom "file://$tmp/out/report.html" >"$tmp/dom.html" 2>"$tmp/chrome.log"
svgs=$(grep -o '<svg' "$tmp/dom.html" | wc -l)
echo "DOM: $svgs svg elements"
[ "$svgs" -ge 2 ] || { echo "expected SVG charts in the rendered DOM"; exit 1; }
for v in "int8 t2 w1" "bf16 sp0.5 t2 w1" "bf16 t2 w1" "f32 t2 w1"; do
  grep -q "<td>$v</td>" "$tmp/dom.html" || { echo "frontier variant '$v' missing from the DOM"; exit 1; }
done
grep -q 'data-name="Pareto frontier"' "$tmp/dom.html" || { echo "no frontier line in the DOM"; exit 1; }
timeout 120 "$chrome" "${flags[@]}" --window-size=1280,2000 --screenshot="$tmp/shot.png" \
  "file://$tmp/out/report.html" >>"$tmp/chrome.log" 2>&1
size=$(stat -c %s "$tmp/shot.png")
echo "PNG: $size bytes"
# A blank 1280x2000 page compresses to a few kilobytes; charts and tables make it far larger.
[ "$size" -gt 40000 ] || { echo "the screenshot looks blank"; exit 1; }
if [ -n "${CIBENCH_KEEP_RENDER:-}" ]; then cp "$tmp/shot.png" "$CIBENCH_KEEP_RENDER"; fi
# The serving run's report: its section parses with the throughput-latency, goodput, occupancy and
# timeline charts, the SLO lines, the knees and one bar per stored request segment.
wrote=$("$fixture" "$tmp/serving.sqlite" --serving)
run=$(sed -n 's/^wrote run \([0-9][0-9]*\) (serving)$/\1/p' <<<"$wrote")
[ -n "$run" ] || { echo "no serving run in the fixture tool's output: $wrote"; exit 1; }
"$cibench" report "$run" --db "$tmp/serving.sqlite" --out "$tmp/serving" >/dev/null
timeout 120 "$chrome" "${flags[@]}" --dump-dom "file://$tmp/serving/report.html" >"$tmp/serving-dom.html" 2>>"$tmp/chrome.log"
section=$(sed -n '/<h2>Serving<\/h2>/,/<h2>Counters<\/h2>/p' "$tmp/serving-dom.html")
svgs=$(grep -o '<svg' <<<"$section" | wc -l)
bars=$(grep -o '<rect class="bar"' <<<"$section" | wc -l)
echo "serving: $svgs svg elements, $bars timeline bars"
[ "$svgs" -eq 7 ] || { echo "expected 7 serving charts, got $svgs"; exit 1; }
# Three timelines of 12 requests: 3 x 12 first-token and decode bars, 3 x 11 queued (one unmeasured).
[ "$bars" -eq $((3 * (12 + 12 + 11))) ] || { echo "expected $((3 * 35)) timeline bars, got $bars"; exit 1; }
for text in "SLO ttft_p99_ms 500 ms" "SLO tpot_p99_ms 50 ms" "knee 4 qps" "b8 batching=continuous"; do
  grep -qF "$text" <<<"$section" || { echo "'$text' missing from the serving section"; exit 1; }
done
# The speculative run's report: its section parses with the three charts, the 1.0x line, the
# starred lowest TPOT p95 and the table's marked row.
wrote=$("$fixture" "$tmp/speculative.sqlite" --speculative)
run=$(sed -n 's/^wrote run \([0-9][0-9]*\) (speculative)$/\1/p' <<<"$wrote")
[ -n "$run" ] || { echo "no speculative run in the fixture tool's output: $wrote"; exit 1; }
"$cibench" report "$run" --db "$tmp/speculative.sqlite" --out "$tmp/speculative" >/dev/null
timeout 120 "$chrome" "${flags[@]}" --dump-dom "file://$tmp/speculative/report.html" >"$tmp/spec-dom.html" 2>>"$tmp/chrome.log"
section=$(sed -n '/<h2>Speculative decoding<\/h2>/,/<h2>Counters<\/h2>/p' "$tmp/spec-dom.html")
svgs=$(grep -o '<svg' <<<"$section" | wc -l)
echo "speculative: $svgs svg elements"
[ "$svgs" -eq 3 ] || { echo "expected 3 speculative charts, got $svgs"; exit 1; }
for text in "1.0x = no gain" 'data-name="lowest TPOT p95"' "off: 60 ms" "spec=lookup:1-3 k=2 (lowest TPOT p95)"; do
  grep -qF "$text" <<<"$section" || { echo "'$text' missing from the speculative section"; exit 1; }
done
echo "ok"
