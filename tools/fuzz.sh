#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz) with clang in build-fuzz/ and runs each for
# SECONDS (default 60), one after the other, from a seed corpus of the shipped files. Prints
# each target's corpus size and coverage (libFuzzer's final cov:/ft: counts) and fails if a
# target finds a crash (the input is kept in build-fuzz/crashes/<target>/).
#   tools/fuzz.sh [SECONDS]
set -euo pipefail
# clang and its libFuzzer runtime (Debian 12: libclang_rt.fuzzer is in libclang-rt-14-dev),
# installed like the build's packages when missing.
FLEETSIM_EXTRA_PACKAGES="clang libclang-rt-14-dev"
source "$(dirname "$0")/setup.sh"
seconds="${1:-60}"
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${FLEETSIM_FUZZ_BUILD:-$root/build-fuzz}"
jobs="$(nproc 2>/dev/null || echo 2)"
targets=(fuzz_scenario fuzz_trace fuzz_calibration fuzz_checkpoint)

# FLEETSIM_WERROR=1 (CI): warnings are errors here too (clang warns differently from GCC).
common="$(fleetsim_common_cmake_args)"
if [ ! -f "$build/CMakeCache.txt" ]; then
  # -O1 with line tables: sanitizer reports keep file:line, and the build is quicker than
  # at -O2 -g (every library source is compiled with ASan, UBSan and coverage).
  CC=clang CXX=clang++ cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Fuzz \
    -DCMAKE_CXX_FLAGS_FUZZ="-O1 -gline-tables-only" -DFLEETSIM_FUZZ=ON $common >&2
elif [ -n "$common" ] && ! grep -q '^FLEETSIM_WERROR:BOOL=ON$' "$build/CMakeCache.txt"; then
  cmake -S "$root" -B "$build" $common >&2
fi
cmake --build "$build" -j "$jobs" --target "${targets[@]}" >&2

# Seed corpora: the shipped files, small slices of the traces, and checkpoints made of
# real results.
seed="$build/seeds"
rm -rf "$seed"
mkdir -p "$seed"/{fuzz_scenario,fuzz_trace,fuzz_calibration,fuzz_checkpoint}
i=0
for f in "$root"/scenarios/*.yaml "$root"/scenarios/examples/*.yaml "$root"/scenarios/bench/*.yaml; do
  i=$((i + 1))
  cp "$f" "$seed/fuzz_scenario/s$i.yaml"
  # The same with an override after a NUL byte (the target's format).
  { cat "$f"; printf '\0serving.replicas=2'; } >"$seed/fuzz_scenario/o$i.yaml"
done
for f in "$root"/tests/data/*.csv; do
  { printf '\0'; head -c 4000 "$f"; } >"$seed/fuzz_trace/$(basename "$f")"
done
for f in "$root"/tests/data/*.jsonl "$root"/scenarios/examples/data/*.jsonl; do
  { printf '\1'; head -c 4000 "$f"; } >"$seed/fuzz_trace/$(basename "$f")"
done
for f in "$root"/hw_models/calibration/*.csv; do
  head -c 6000 "$f" >"$seed/fuzz_calibration/$(basename "$f")"
done
printf '\0fuzz\n3 {"status":4,"reason":"","spares":0,"gpus":8,"usd_per_hour":24.5,"best":2,"tried":[[2,0,0.995,0.4,0.03,2.1,0.6,1500.0,1000,90000,0.2]]}\n' \
  >"$seed/fuzz_checkpoint/plan"
printf '\1fuzz\n0 {"requests_completed":100,"ttft_p50_s":0.1,"ttft_p99_s":0.3,"tpot_p99_s":0.02,"e2e_p50_s":1.5,"output_tok_per_s":900,"goodput_req_per_s":4.5,"slo_attainment":0.99,"busy_fraction":0.7}\n' \
  >"$seed/fuzz_checkpoint/sweep"

status=0
printf '%-18s %8s %8s %8s  %s\n' target corpus cov ft result
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  crashes="$build/crashes/$t"
  mkdir -p "$corpus" "$crashes"
  log="$build/$t.log"
  if (cd "$crashes" && "$build/$t" "$corpus" "$seed/$t" -max_total_time="$seconds" \
        -max_len=65536 -timeout=20 -rss_limit_mb=4096 -print_final_stats=1 >"$log" 2>&1); then
    result=clean
  else
    result="CRASH (see $log and $crashes)"
    status=1
  fi
  # The last status line ("#N DONE cov: C ft: F corp: ...") has the final counts.
  last="$(grep -E '^#[0-9]+' "$log" | tail -1)"
  cov="$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")"
  ft="$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")"
  printf '%-18s %8s %8s %8s  %s\n' "$t" "$(find "$corpus" -type f | wc -l)" "${cov:-?}" "${ft:-?}" \
    "$result"
done
exit $status
