#!/usr/bin/env bash
# Network-model speed benchmark (issue 7):
#  1. contended transfers simulated per wall-second on the SimGrid fabric at 64 and 512 in
#     flight (Google Benchmark, tools/bench/simgrid_transfers_bench.cpp);
#  2. the 64-GPU disaggregated scenario (scenarios/bench/disaggregated-64gpu.yaml) with the
#     analytic network and with live SimGrid transfers: median simulation wall time of
#     REPEATS runs each (the collective tables are cached before timing) and their ratio.
#   tools/bench_network.sh [REPEATS]   (default 5)
set -euo pipefail
source "$(dirname "$0")/setup.sh"
fleetsim_build "$FLEETSIM_BUILD"
repeats="${1:-5}"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
export FLEETSIM_CACHE_DIR="${FLEETSIM_CACHE_DIR:-$FLEETSIM_BUILD/bench-cache}"
"$FLEETSIM_BUILD/fleetsim_microbench" --benchmark_filter=SimGrid
scenario="$FLEETSIM_ROOT/scenarios/bench/disaggregated-64gpu.yaml"
"$FLEETSIM_BUILD/fleetsim" run "$scenario" --set network.model=simgrid --out "$out/warm" --quiet >/dev/null
median_wall() {  # model
  for ((i = 0; i < repeats; i++)); do
    "$FLEETSIM_BUILD/fleetsim" run "$scenario" --set "network.model=$1" --out "$out/$1" --quiet >/dev/null
    python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['wall_s'])" "$out/$1/summary.json"
  done | sort -g | sed -n "$(( (repeats + 1) / 2 ))p"
}
a="$(median_wall analytic)"
s="$(median_wall simgrid)"
python3 - "$a" "$s" <<'PY'
import sys
a, s = float(sys.argv[1]), float(sys.argv[2])
print(f"disaggregated-64gpu: analytic {a * 1e3:.1f} ms, simgrid (live KV transfers) {s * 1e3:.1f} ms, ratio {s / a:.2f}x")
PY
