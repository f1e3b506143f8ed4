#!/usr/bin/env bash
# Runs the whole test suite: installs what is missing, builds Release in build/ and runs
# every test with CTest (about 5 minutes from a clean clone on 2 cores, 1 minute after an
# incremental build). FLEETSIM_SANITIZERS=1 then builds the tests again with
# AddressSanitizer + UndefinedBehaviorSanitizer in build-asan/ and runs every test a second
# time (about 14 more minutes from clean: 10.5 of build, 3.7 of tests); CI does both
# (.ci/run).
set -euo pipefail
# Headless Chromium checks report.html in a real browser (tests/cli/report_test.cpp).
FLEETSIM_EXTRA_PACKAGES="chromium"
source "$(dirname "$0")/setup.sh"
# The check of report.html in headless Chromium must run here, not skip.
export FLEETSIM_REQUIRE_BROWSER=1
jobs="$(nproc 2>/dev/null || echo 2)"

echo "== Release build and tests ($FLEETSIM_BUILD)"
fleetsim_build "$FLEETSIM_BUILD"
ctest --test-dir "$FLEETSIM_BUILD" --output-on-failure -j "$jobs"

if [ "${FLEETSIM_SANITIZERS:-0}" = "1" ]; then
  asan="$FLEETSIM_ROOT/build-asan"
  echo "== ASan+UBSan build and tests ($asan)"
  fleetsim_build "$asan" -DFLEETSIM_SANITIZE=ON -DFLEETSIM_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$asan" --output-on-failure -j "$jobs"
fi
