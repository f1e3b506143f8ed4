#!/usr/bin/env bash
# Runs the whole test suite: installs what is missing, builds Release in build/ and runs
# every test with CTest, then builds the tests with AddressSanitizer + UndefinedBehavior-
# Sanitizer in build-asan/ and runs them again. FLEETSIM_SKIP_SANITIZERS=1 skips the
# second pass (for a quick local loop; CI always runs both).
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

if [ "${FLEETSIM_SKIP_SANITIZERS:-0}" != "1" ]; then
  asan="$FLEETSIM_ROOT/build-asan"
  echo "== ASan+UBSan build and tests ($asan)"
  fleetsim_build "$asan" -DFLEETSIM_SANITIZE=ON -DFLEETSIM_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir "$asan" --output-on-failure -j "$jobs"
fi
