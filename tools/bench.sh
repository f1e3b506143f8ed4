#!/usr/bin/env bash
# Speed benchmark: runs the two Vidur-shaped scenarios (scenarios/bench/) and the default
# fleet day (FLEETSIM_BENCH_FULL=1 adds two full-scale hours of chatgpt-700m.yaml), and prints
# simulated requests per wall-second, events per second and peak memory (max RSS).
#   tools/bench.sh [REPEATS]   (default 5; the median run is reported)
# FLEETSIM_BENCH_BASE=COMMIT also builds that commit (in a temporary git worktree, build
# folder build-bench-base/ inside it) and runs it in the same loop, each repeat running the
# base right after this tree, so both see the same machine; the ratio column is the base's
# median wall time over this tree's (> 1: this tree is faster).
# FLEETSIM_BENCH_MPI=N adds the default day with its partitions on N MPI ranks (3 runs).
set -euo pipefail
source "$(dirname "$0")/setup.sh"
fleetsim_build "$FLEETSIM_BUILD"
repeats="${1:-5}"
out="$(mktemp -d)"
roots=("$FLEETSIM_ROOT")
launch=()  # a launcher in front of the binary (mpirun for FLEETSIM_BENCH_MPI)
bins=("$FLEETSIM_BUILD/fleetsim")
base_tree=""
cleanup() {
  rm -rf "$out"
  if [ -n "$base_tree" ]; then git -C "$FLEETSIM_ROOT" worktree remove --force "$base_tree" >&2 || true; fi
}
trap cleanup EXIT
if [ -n "${FLEETSIM_BENCH_BASE:-}" ]; then
  base_tree="$out/base"
  git -C "$FLEETSIM_ROOT" worktree add --detach "$base_tree" "$FLEETSIM_BENCH_BASE" >&2
  # The fleetsim binary only (no tests, benchmarks or Python module): a few minutes.
  (FLEETSIM_ROOT="$base_tree" fleetsim_build "$base_tree/build-bench-base" \
    -DFLEETSIM_BUILD_TESTS=OFF -DFLEETSIM_BUILD_BENCH=OFF -DFLEETSIM_PYTHON=OFF)
  roots+=("$base_tree")
  bins+=("$base_tree/build-bench-base/fleetsim")
fi

# One run: "wall_s requests events rss_kib" of binary $1 (root $2) on scenario $3 (relative
# to the root), extra arguments after.
one_run() {
  local bin="$1" root="$2" scenario="$3" tag="$4"
  shift 4
  rm -rf "${out:?}/$tag"  # a fresh output folder each run (no "replacing the results" note)
  /usr/bin/time -f "%M" -o "$out/rss" "${launch[@]}" "$bin" run "$root/$scenario" --out "$out/$tag" \
    --quiet "$@" >/dev/null
  python3 - "$out/$tag/summary.json" "$(cat "$out/rss")" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
n = j.get("calls_arrived", j.get("requests_completed"))
# Under mpirun, time(1) sees mpirun: take rank 0's own peak from the summary.
rss = int(j["peak_rss_bytes"] / 1024) if j.get("mpi_ranks", 1) > 1 else sys.argv[2]
print(f"{j['wall_s']:.6f} {n} {j['events']} {rss}")
PY
}

# Median of REPEATS runs per binary, interleaved; one table row.
bench_row() {
  local name="$1" scenario="$2" n="$3"
  shift 3
  local k i
  declare -a rows_0=() rows_1=()
  for ((i = 0; i < n; i++)); do
    for k in "${!bins[@]}"; do
      local r
      r="$(one_run "${bins[$k]}" "${roots[$k]}" "$scenario" "$name-$k" "$@")"
      if [ "$k" = 0 ]; then rows_0+=("$r"); else rows_1+=("$r"); fi
    done
  done
  local med0 med1=""
  med0="$(printf '%s\n' "${rows_0[@]}" | sort -n | sed -n "$(((n + 1) / 2))p")"
  if [ "${#bins[@]}" -gt 1 ]; then
    med1="$(printf '%s\n' "${rows_1[@]}" | sort -n | sed -n "$(((n + 1) / 2))p")"
  fi
  python3 - "$name" "$med0" "$med1" <<'PY'
import sys
name, head, base = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()
wall, reqs, events, rss = float(head[0]), int(head[1]), int(head[2]), int(head[3])
row = f"{name:<18} {reqs:>10} {wall:>10.4f} {reqs / wall:>14,.0f} {events / wall:>14,.0f} {rss / 1024:>9.1f} MiB"
if base:
    bwall = float(base[0])
    row += f" {int(base[1]) / bwall:>14,.0f} {bwall / wall:>7.3f}"
print(row)
PY
}

header() {
  local extra=""
  if [ "${#bins[@]}" -gt 1 ]; then extra="$(printf " %14s %7s" "base $1/wall-s" "ratio")"; fi
  printf "%-18s %10s %10s %14s %14s %12s%s\n" "$2" "$1" wall_s "$1/wall-s" "events/s" peak_rss "$extra"
}

header req scenario
for s in vidur-1replica vidur-8replicas; do
  bench_row "$s" "scenarios/bench/$s.yaml" "$repeats"
done

# Fleet scale: the default (sampled) day, and with FLEETSIM_BENCH_FULL=1 the two busiest
# hours of chatgpt-700m.yaml at full scale (~20 min on 2 cores, ~1 GB); one run each.
printf "\n"
header calls fleet
bench_row default-sampled scenarios/default.yaml 1
# FLEETSIM_BENCH_MPI=N: the sampled day again, its partitions (one per model) on N MPI ranks
# of this machine (rank 0's memory), 3 runs; strong scaling against the row above.
if [ -n "${FLEETSIM_BENCH_MPI:-}" ]; then
  launch=(mpirun --oversubscribe -n "$FLEETSIM_BENCH_MPI")
  [ "$(id -u)" -eq 0 ] && launch=(mpirun --oversubscribe --allow-run-as-root -n "$FLEETSIM_BENCH_MPI")
  bench_row "default-mpi-$FLEETSIM_BENCH_MPI" scenarios/default.yaml 3 --threads 1
  launch=()
fi
if [ "${FLEETSIM_BENCH_FULL:-0}" = "1" ]; then
  bench_row full-peak-2h scenarios/chatgpt-700m.yaml 1 --set users.start.hour_utc=14 \
    --set users.duration=2h
fi
