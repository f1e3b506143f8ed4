#!/usr/bin/env bash
# Quick start: installs what is missing, builds, and runs a scenario.
#   tools/run.sh [SCENARIO] [fleetsim run options...]
# SCENARIO defaults to scenarios/default.yaml; further arguments go to `fleetsim run`.
set -euo pipefail
source "$(dirname "$0")/setup.sh"
fleetsim_build "$FLEETSIM_BUILD"
scenario="${1:-$FLEETSIM_ROOT/scenarios/default.yaml}"
[ $# -gt 0 ] && shift
exec "$FLEETSIM_BUILD/fleetsim" run "$scenario" "$@"
