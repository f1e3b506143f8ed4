#!/usr/bin/env bash
# Regenerates tests/golden/chat_service_summary.json from a run of scenarios/chat-service.yaml. Only
# for deliberate model changes: say in the commit why the numbers moved.
set -euo pipefail
source "$(dirname "$0")/setup.sh"
fleetsim_build "$FLEETSIM_BUILD"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$FLEETSIM_BUILD/fleetsim" run "$FLEETSIM_ROOT/scenarios/chat-service.yaml" --quiet --out "$tmp" >/dev/null
python3 - "$tmp/summary.json" "$FLEETSIM_ROOT/tests/golden/chat_service_summary.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
# Metrics only: wall-clock, the event count (an implementation detail of the fast path)
# and the resolved scenario (checked elsewhere) are left out.
keep = {k: v for k, v in j.items() if k not in ("wall_s", "events", "scenario", "fleetsim_version")}
json.dump(keep, open(sys.argv[2], "w"), indent=2, sort_keys=True)
open(sys.argv[2], "a").write("\n")
PY
echo "wrote tests/golden/chat_service_summary.json"
