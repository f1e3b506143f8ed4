#!/usr/bin/env bash
# Shared set-up for tools/run.sh, tools/test.sh and tools/bench.sh: installs the Debian
# packages fleetsim needs (when root; otherwise prints the command and stops), then
# configures and builds in build/ (Release). Source it; it sets FLEETSIM_ROOT and
# FLEETSIM_BUILD.
set -euo pipefail

FLEETSIM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FLEETSIM_BUILD="${FLEETSIM_BUILD:-$FLEETSIM_ROOT/build}"

FLEETSIM_PACKAGES=(cmake g++ make pkg-config libyaml-cpp-dev nlohmann-json3-dev libeigen3-dev
                   libboost-program-options-dev libgtest-dev libgmock-dev libbenchmark-dev
                   libsimgrid-dev libopenmpi-dev openmpi-bin gnuplot-nox pybind11-dev python3-dev)
# Callers may add packages only they need (tools/test.sh: chromium for the report check).
FLEETSIM_PACKAGES+=(${FLEETSIM_EXTRA_PACKAGES:-})

fleetsim_install_packages() {
  local missing=()
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ]; then
    echo "fleetsim: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  else
    echo "fleetsim: missing Debian packages: ${missing[*]}" >&2
    echo "run:  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
}

# CMake arguments every build gets: FLEETSIM_WERROR=1 (set by .ci/run) makes warnings
# errors in fleetsim's own code (-DFLEETSIM_WERROR=ON).
fleetsim_common_cmake_args() {
  if [ "${FLEETSIM_WERROR:-0}" = "1" ]; then
    echo "-DFLEETSIM_WERROR=ON"
  fi
}

# fleetsim_build BUILD_DIR [cmake args...]: configure (once) and build everything. A build
# folder configured without -DFLEETSIM_WERROR=ON is configured again when FLEETSIM_WERROR=1.
fleetsim_build() {
  local dir="$1"
  shift
  local jobs common
  jobs="$(nproc 2>/dev/null || echo 2)"
  common="$(fleetsim_common_cmake_args)"
  if [ ! -f "$dir/CMakeCache.txt" ]; then
    cmake -S "$FLEETSIM_ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=Release "$@" $common >&2
  elif [ -n "$common" ] && ! grep -q '^FLEETSIM_WERROR:BOOL=ON$' "$dir/CMakeCache.txt"; then
    cmake -S "$FLEETSIM_ROOT" -B "$dir" $common >&2
  fi
  cmake --build "$dir" -j "$jobs" >&2
}

fleetsim_install_packages "${FLEETSIM_PACKAGES[@]}"
