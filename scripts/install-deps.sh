#!/usr/bin/env bash
# Installs the Debian packages cibench needs. Idempotent: quiet and quick when all are present.
#   scripts/install-deps.sh          what building and running all of cibench needs (the dashboard too)
#   scripts/install-deps.sh --test   also what the test suite uses (headless chromium renders reports,
#                                    xdotool finds the dashboard's window under Xvfb, qemu-user runs
#                                    the binaries as lower CPUs, slurm-wlm and munge run the fleet
#                                    test's one-node Slurm)
# Packages are installed without their "recommends", so every CMake package's own dependencies are
# listed here: Qt6Charts needs Qt6OpenGL (libqt6opengl6-dev) and Qt6Gui needs OpenGL (libgl-dev).
set -euo pipefail
pkgs=(build-essential cmake ninja-build pkg-config git
      libgtest-dev libgmock-dev libbenchmark-dev
      libsqlite3-dev sqlite3 libtomlplusplus-dev libcli11-dev nlohmann-json3-dev
      libsentencepiece-dev libpapi-dev libhwloc-dev
      qt6-base-dev qt6-charts-dev qt6-svg-dev libqt6opengl6-dev libgl-dev xvfb xauth)
case "${1:-}" in
  "") ;;
  --test) pkgs+=(chromium xdotool python3 qemu-user slurm-wlm munge) ;;
  *) echo "usage: scripts/install-deps.sh [--test]" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "cibench: installing ${missing[*]}" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
