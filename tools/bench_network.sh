#!/usr/bin/env bash
# Network-model speed benchmark (issue 7):
#  1. contended transfers simulated per wall-second on the SimGrid fabric at 64 and 512 in
#     flight (Google Benchmark, tools/bench/simgrid_transfers_bench.cpp);
#  2. the 64-GPU disaggregated scenario (scenarios/bench/disaggregated-64gpu.yaml) with the
#     analytic network and with live SimGrid transfers: median simulation wall time of
#     REPEATS runs each (the collective tables are cached before timing) and their ratio;
#  3. the 64-GPU expert-parallel scenario (scenarios/examples/expert-parallel.yaml: DeepSeek-V3
#     at EP 16 across two nodes per replica, disaggregated, live KV transfers) with its
#     all-to-all from the tables and live: median wall times, ratio, and live flows per second.
#   tools/bench_network.sh [REPEATS]   (default 5)
set -euo pipefail
source "$(dirname "$0")/setup.sh"
fleetsim_build "$FLEETSIM_BUILD"
repeats="${1:-5}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
export FLEETSIM_CACHE_DIR="${FLEETSIM_CACHE_DIR:-$FLEETSIM_BUILD/bench-cache}"
"$FLEETSIM_BUILD/fleetsim_microbench" --benchmark_filter=SimGrid
median_wall() {  # scenario, --set arguments...
  local sc="$1"
  shift
  for ((i = 0; i < repeats; i++)); do
    "$FLEETSIM_BUILD/fleetsim" run "$sc" "$@" --out "$out/r" --quiet >/dev/null
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['wall_s'])" "$out/r/summary.json"
  done | sort -g | sed -n "$(( (repeats + 1) / 2 ))p"
}
scenario="$FLEETSIM_ROOT/scenarios/bench/disaggregated-64gpu.yaml"
"$FLEETSIM_BUILD/fleetsim" run "$scenario" --set network.model=simgrid --out "$out/warm" --quiet >/dev/null
a="$(median_wall "$scenario" --set network.model=analytic)"
s="$(median_wall "$scenario" --set network.model=simgrid)"
python3 - "$a" "$s" <<'PY'
import sys
a, s = float(sys.argv[1]), float(sys.argv[2])
print(f"disaggregated-64gpu: analytic {a * 1e3:.1f} ms, simgrid (live KV transfers) {s * 1e3:.1f} ms, ratio {s / a:.2f}x")
PY
ep="$FLEETSIM_ROOT/scenarios/examples/expert-parallel.yaml"
"$FLEETSIM_BUILD/fleetsim" run "$ep" --out "$out/ep" --quiet >/dev/null
t="$(median_wall "$ep" --set network.live_alltoall=false)"
l="$(median_wall "$ep")"
python3 - "$t" "$l" "$out/ep/summary.json" <<'PY'
import json, sys
t, l, j = float(sys.argv[1]), float(sys.argv[2]), json.load(open(sys.argv[3]))
it = j["alltoall_live_iterations"]
# Rail-symmetric run: rail 0's 2 x 8 = 16 of each iteration's 128 cross-node flows.
print(f"expert-parallel (EP 16, 64 GPUs): all-to-all from tables {t * 1e3:.1f} ms, live {l * 1e3:.1f} ms, "
      f"ratio {l / t:.1f}x; {it} live all-to-alls, {it / l:,.0f} per wall-second "
      f"({16 * it / l:,.0f} flows/s simulated, {128 * it / l:,.0f} represented)")
PY
