#!/usr/bin/env bash
# Speed benchmark: runs the two Vidur-shaped scenarios (scenarios/bench/) and prints
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
