#!/usr/bin/env bash
# Regenerates the golden summaries that tests/cli/golden_test.cpp checks: for each line
# "NAME SCENARIO [ARGS...]" of tests/golden/scenarios.txt, tests/golden/NAME_summary.json
# from `fleetsim run SCENARIO ARGS` in the repository root. Only for deliberate model changes:
# say in the commit why the numbers moved.
#   tools/update_golden.sh            every golden
#   tools/update_golden.sh NAME...    those only (e.g. chat_service default)
set -euo pipefail
source "$(dirname "$0")/setup.sh"
list="$FLEETSIM_ROOT/tests/golden/scenarios.txt"

declare -A scenario_of args_of
all=()
while read -r name scenario rest; do
  case "$name" in '' | '#'* | -) continue ;; esac
  all+=("$name")
  scenario_of[$name]="$scenario"
  args_of[$name]="$rest"
done <"$list"

wanted=("$@")
[ ${#wanted[@]} -eq 0 ] && wanted=("${all[@]}")
for name in "${wanted[@]}"; do
  if [ -z "${scenario_of[$name]+set}" ]; then
    echo "update_golden.sh: no golden named '$name' in tests/golden/scenarios.txt; there are:" >&2
    echo "  ${all[*]}" >&2
    exit 2
  fi
done

fleetsim_build "$FLEETSIM_BUILD"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
cd "$FLEETSIM_ROOT"
for name in "${wanted[@]}"; do
  # Arguments are split on spaces (the list's format has no quoting). SimGrid tables are
  # built afresh, as in the test.
  # shellcheck disable=SC2086
  FLEETSIM_CACHE_DIR="$tmp/cache" "$FLEETSIM_BUILD/fleetsim" run "${scenario_of[$name]}" --quiet \
    --out "$tmp/$name" ${args_of[$name]} >/dev/null
  python3 - "$tmp/$name/summary.json" "tests/golden/${name}_summary.json" <<'PY'
import json, sys
# Metrics only, at any depth: wall-clock and memory, the event count (an implementation
# detail of the fast path), the resolved scenario (checked elsewhere), the program's version
# and the scenario's path are left out. tests/cli/golden_test.cpp leaves out the same.
NOT_METRICS = {"wall_s", "peak_rss_bytes", "events", "scenario", "scenario_file", "fleetsim_version"}
def metrics(o):
    if isinstance(o, dict):
        return {k: metrics(v) for k, v in o.items() if k not in NOT_METRICS}
    if isinstance(o, list):
        return [metrics(v) for v in o]
    return o
keep = metrics(json.load(open(sys.argv[1])))
with open(sys.argv[2], "w") as f:
    json.dump(keep, f, indent=2, sort_keys=True)
    f.write("\n")
PY
  echo "wrote tests/golden/${name}_summary.json"
done
