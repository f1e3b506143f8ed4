#!/usr/bin/env bash
# kernels/run_calibration.sh OUT_DIR
#
# Measures this machine's GPU for the performance model: builds the kernels for the GPU it
# finds, runs the device correctness tests (every kernel against its CPU reference), then
# times every kernel over the model shapes (each shape validated again before timing) and
# writes to OUT_DIR:
#   <gpu>-kernels-gemm-cublaslt.csv, <gpu>-kernels-gemm-own.csv, <gpu>-kernels-attention.csv,
#   <gpu>-kernels-gemm-own-wgmma.csv (compute capability 9.0 only)
#       calibration tables (hw_models/calibration/README.md); install one with
#       `fleetsim calibrate import FILE`
#   <section>/results.csv    every measurement with TFLOP/s, GB/s and fractions of the
#                            catalog peaks (section: gemm, attention, moe)
#   moe/moe.csv              the MoE stages (not a calibration operator)
#   <section>/summary.md     the issue-8 targets and a table of the section's shapes
#   <section>/benchmark.json Google Benchmark's output; <section>/bench.log; gpu_tests.log,
#                            nvidia-smi.txt
# Takes about 5 minutes on an H100/H200 (build ~1-2 min with 16 cores, tests ~1 min, timing
# ~3 min). Exits 2 with a message when there is no NVIDIA GPU; 1 when a check fails (a
# failing device test does not stop the timing: every timed shape is validated again and
# skipped when it fails). The benchmark runs once per section (gemm, attention, moe), each
# in its own process writing to OUT_DIR/<section>/, so a crash or a time-out in one section
# keeps the others' results; the calibration tables are copied up to OUT_DIR.
#
# Environment: FLEETSIM_KERNELS_BUILD (build folder, default OUT_DIR/build),
# FLEETSIM_KERNELS_PREBUILT (a folder holding fleetsim_kernels_gpu_tests and
# fleetsim_kernel_bench built elsewhere, for a GPU machine without the Debian packages or
# network: no install, no build), FLEETSIM_SOURCE_SHA (the revision for the provenance when
# the tree has no .git), FLEETSIM_BENCH_ARGS (extra arguments for fleetsim_kernel_bench, e.g.
# --quick or --benchmark_filter=gemm/cublaslt), FLEETSIM_SECTION_TIMEOUT (seconds per
# benchmark section, default 600), FLEETSIM_SECTIONS (the sections to time, default "gemm
# attention moe"), FLEETSIM_TEST_TIMEOUT (seconds for the device tests,
# default 600), CUDA_ARCH (override the detected architecture, e.g. 90).
set -euo pipefail

if [ $# -ne 1 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
  sed -n '2,32p' "$0" | sed 's/^# \{0,1\}//'
  exit 64
fi
start=$(date +%s)
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
mkdir -p "$1"
out="$(cd "$1" && pwd)"

# ---- a GPU? ------------------------------------------------------------------------------
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "run_calibration.sh: no NVIDIA GPU found (nvidia-smi is missing or sees no device); nothing measured." >&2
  echo "Without a GPU the kernels still build and their CPU-reference and emulated tests run (tools/test.sh);" >&2
  echo "the GPU check stays open." >&2
  exit 2
fi
gpu_name="$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
driver="$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
nvcc="$(command -v nvcc || true)"
[ -z "$nvcc" ] && [ -x /usr/local/cuda/bin/nvcc ] && nvcc=/usr/local/cuda/bin/nvcc
if [ -z "$nvcc" ] && [ -z "${FLEETSIM_KERNELS_PREBUILT:-}" ]; then
  echo "run_calibration.sh: found '$gpu_name' but no nvcc (CUDA toolkit); install it or put it on PATH." >&2
  exit 1
fi
arch="${CUDA_ARCH:-}"
if [ -z "$arch" ]; then
  arch="$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')" || true
fi
if [ -z "$arch" ] && [ -x "$(dirname "$nvcc")/__nvcc_device_query" ]; then
  arch="$("$(dirname "$nvcc")/__nvcc_device_query" | head -1 | tr -d ' ')" || true
fi
arch="${arch:-90}"
echo "== GPU: $gpu_name, driver $driver, compute capability ${arch:0:-1}.${arch: -1}, nvcc ${nvcc:-none}"
# Read-only snapshot of the card's state (clocks, power) for the provenance; nothing is changed.
nvidia-smi -q -d CLOCK,POWER,PERFORMANCE > "$out/nvidia-smi.txt" 2>&1 || true

if [ -n "${FLEETSIM_SOURCE_SHA:-}" ]; then
  sha="$FLEETSIM_SOURCE_SHA"
else
  sha="$(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
  if ! git -C "$root" diff --quiet HEAD -- 2>/dev/null; then sha="$sha-dirty"; fi
fi

# ---- build ---------------------------------------------------------------------------------
if [ -n "${FLEETSIM_KERNELS_PREBUILT:-}" ]; then
  bin="$(cd "$FLEETSIM_KERNELS_PREBUILT" && pwd)"
  for b in fleetsim_kernels_gpu_tests fleetsim_kernel_bench; do
    [ -x "$bin/$b" ] || { echo "run_calibration.sh: FLEETSIM_KERNELS_PREBUILT=$bin has no executable $b" >&2; exit 1; }
  done
  echo "== prebuilt binaries in $bin (no install, no build)"
else
  # tools/setup.sh installs the Debian packages the project needs (when root).
  # shellcheck disable=SC1091
  source "$root/tools/setup.sh"
  build="${FLEETSIM_KERNELS_BUILD:-$out/build}"
  jobs="$(nproc 2>/dev/null || echo 4)"
  echo "== build (sm_$arch) in $build"
  CUDACXX="$nvcc" cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DFLEETSIM_GPU_TESTS=ON \
    -DCMAKE_CUDA_ARCHITECTURES="$arch" > "$out/configure.log" 2>&1 || { tail -30 "$out/configure.log"; exit 1; }
  cmake --build "$build" -j "$jobs" --target fleetsim_kernels_gpu_tests fleetsim_kernel_bench \
    > "$out/build.log" 2>&1 || { tail -40 "$out/build.log"; exit 1; }
  bin="$build/kernels"
fi
export FLEETSIM_CATALOG="${FLEETSIM_CATALOG:-$root/hw_models/catalog}"
built=$(date +%s)
echo "   ready in $((built - start)) s"

# ---- correctness on the device ----------------------------------------------------------------
echo "== device tests (every kernel against its CPU reference)"
tests_failed=0
if ! timeout "${FLEETSIM_TEST_TIMEOUT:-600}" "$bin/fleetsim_kernels_gpu_tests" --gtest_output="xml:$out/gpu_tests.xml" > "$out/gpu_tests.log" 2>&1; then
  tests_failed=1
  grep -E "FAILED|Failure|rel_l2|error" "$out/gpu_tests.log" | head -40
  echo "run_calibration.sh: device tests FAILED (full log: $out/gpu_tests.log). Timing continues:" >&2
  echo "the benchmark validates every shape again and skips (and reports) the ones that fail." >&2
fi
if grep -q "no CUDA GPU" "$out/gpu_tests.log"; then
  grep "SKIPPED\|no CUDA GPU" "$out/gpu_tests.log" | head -5
  echo "run_calibration.sh: the device tests were skipped: the CUDA runtime sees no usable GPU." >&2
  exit 2
fi
grep -E "^\[  (PASSED|FAILED)  \]" "$out/gpu_tests.log" || true
tested=$(date +%s)

# ---- timing ------------------------------------------------------------------------------------
echo "== benchmarks (each shape validated, then timed), one process per section"
rc=0
for section in ${FLEETSIM_SECTIONS:-gemm attention moe}; do
  mkdir -p "$out/$section"
  set +e
  # shellcheck disable=SC2086  # FLEETSIM_BENCH_ARGS holds several arguments
  timeout "${FLEETSIM_SECTION_TIMEOUT:-600}" "$bin/fleetsim_kernel_bench" --out="$out/$section" \
    --sections="$section" --driver="$driver" --sha="$sha" \
    --benchmark_out="$out/$section/benchmark.json" --benchmark_out_format=json \
    ${FLEETSIM_BENCH_ARGS:-} > "$out/$section/bench.log" 2>&1
  src=$?
  set -e
  echo "-- $section: exit $src, $(grep -c '^[a-z_]*/' "$out/$section/bench.log" || true) benchmark lines"
  [ $src -eq 124 ] && echo "run_calibration.sh: section $section timed out; its outputs are missing" >&2
  [ $src -ne 0 ] && rc=$src
  # The bench prints the summary last.
  sed -n '/^# fleetsim kernels on/,$p' "$out/$section/bench.log"
  cp "$out/$section"/*-kernels-*.csv "$out/" 2>/dev/null || true
done
end=$(date +%s)
echo
echo "times: ready $((built - start)) s, device tests $((tested - built)) s, benchmarks $((end - tested)) s, total $((end - start)) s"
echo "outputs in $out (per section: bench.log, results.csv, summary.md, benchmark.json)"
if [ $rc -ne 0 ]; then
  echo "run_calibration.sh: the benchmark reported failures (exit $rc); see $out/<section>/bench.log and summary.md" >&2
  exit 1
fi
if [ $tests_failed -ne 0 ]; then
  echo "run_calibration.sh: the device tests failed (see $out/gpu_tests.log)" >&2
  exit 1
fi
