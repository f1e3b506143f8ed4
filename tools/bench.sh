#!/usr/bin/env bash
# Speed benchmark: runs the two Vidur-shaped scenarios (scenarios/bench/) and the default
# fleet day (FLEETSIM_BENCH_FULL=1 adds two full-scale hours of chatgpt-700m.yaml), and prints
# simulated requests per wall-second, events per second and peak memory (max RSS).
#   tools/bench.sh [REPEATS]   (default 5; the median run is reported)
set -euo pipefail
source "$(dirname "$0")/setup.sh"
fleetsim_build "$FLEETSIM_BUILD"
repeats="${1:-5}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
printf "%-18s %10s %12s %14s %14s %12s\n" scenario requests wall_s "req/wall-s" "events/s" peak_rss
for s in vidur-1replica vidur-8replicas; do
  rows=()
  for ((i = 0; i < repeats; i++)); do
    /usr/bin/time -f "%M" -o "$out/rss" "$FLEETSIM_BUILD/fleetsim" run \
      "$FLEETSIM_ROOT/scenarios/bench/$s.yaml" --out "$out/$s" --quiet >/dev/null
    rows+=("$(python3 - "$out/$s/summary.json" "$(cat "$out/rss")" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
print(f"{j['wall_s']:.6f} {j['requests_completed']} {j['events']} {sys.argv[2]}")
PY
)")
  done
  # Median by wall time.
  med="$(printf '%s\n' "${rows[@]}" | sort -n | sed -n "$(( (repeats + 1) / 2 ))p")"
  read -r wall reqs events rss <<<"$med"
  python3 - "$s" "$wall" "$reqs" "$events" "$rss" <<'PY'
import sys
s, wall, reqs, events, rss = sys.argv[1], float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
print(f"{s:<18} {reqs:>10} {wall:>12.4f} {reqs / wall:>14,.0f} {events / wall:>14,.0f} {rss / 1024:>9.1f} MiB")
PY
done

# Fleet scale: the default (sampled) day, and with FLEETSIM_BENCH_FULL=1 the two busiest
# hours of chatgpt-700m.yaml at full scale (~20 min on 2 cores, ~1 GB).
fleet_row() {
  local name="$1" scenario="$2"
  shift 2
  /usr/bin/time -f "%M" -o "$out/rss" "$FLEETSIM_BUILD/fleetsim" run "$scenario" --out "$out/$name" --quiet "$@" >/dev/null
  python3 - "$name" "$out/$name/summary.json" "$(cat "$out/rss")" <<'PY'
import json, sys
j = json.load(open(sys.argv[2]))
wall, calls, events = j["wall_s"], j["calls_arrived"], j["events"]
print(f"{sys.argv[1]:<18} {calls:>10} {wall:>12.1f} {calls / wall:>14,.0f} {events / wall:>14,.0f} {int(sys.argv[3]) / 1024:>9.1f} MiB")
PY
}
printf "\n%-18s %10s %12s %14s %14s %12s\n" fleet calls wall_s "calls/wall-s" "events/s" peak_rss
fleet_row default-sampled "$FLEETSIM_ROOT/scenarios/default.yaml"
if [ "${FLEETSIM_BENCH_FULL:-0}" = "1" ]; then
  fleet_row full-peak-2h "$FLEETSIM_ROOT/scenarios/chatgpt-700m.yaml" \
    --set users.start.hour_utc=14 --set users.duration=2h
fi
