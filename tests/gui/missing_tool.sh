# Sourced by the dashboard and report tests that need a program outside the build (chromium,
# Xvfb, xdotool). missing_tool WHAT ends the test: skipped (exit 77) on a developer's machine,
# failed under CI, where every dashboard and report test must run.
missing_tool() {
  if [ -n "${CI:-}" ]; then
    echo "missing: $1, and CI must run this test (scripts/install-deps.sh --test installs it)" >&2
    exit 1
  fi
  echo "missing: $1: skipped (scripts/install-deps.sh --test installs it)"
  exit 77
}
