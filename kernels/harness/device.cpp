#include "kernels/harness/device.h"

#include <algorithm>
#include <atomic>
#include <chrono>

#include "kernels/common/gpu_ids.h"
#include "kernels/common/rand.h"
#include "kernels/cuda/kernels.h"

namespace fleetsim::kernels {

void check_cuda(cudaError_t e, const char* what, const char* file, int line) {
  if (e == cudaSuccess) return;
  throw CudaError(std::string(what) + " failed: " + cudaGetErrorName(e) + " (" +
                  cudaGetErrorString(e) + ") at " + file + ":" + std::to_string(line));
}

std::string cuda_version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

DeviceInfo detect_device() {
  DeviceInfo d;
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    d.reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorName(e) + " (" +
               cudaGetErrorString(e) + ")";
    cudaGetLastError();  // clear the sticky error state
    return d;
  }
  if (count == 0) {
    d.reason = "no CUDA device";
    return d;
  }
  cudaDeviceProp p{};
  if (cudaGetDeviceProperties(&p, 0) != cudaSuccess || cudaSetDevice(0) != cudaSuccess) {
    d.reason = "cannot query or select device 0";
    return d;
  }
  d.present = true;
  d.device = 0;
  d.name = p.name;
  d.cc_major = p.major;
  d.cc_minor = p.minor;
  d.sm_count = p.multiProcessorCount;
  d.l2_bytes = static_cast<std::size_t>(p.l2CacheSize);
  d.mem_bytes = p.totalGlobalMem;
  cudaRuntimeGetVersion(&d.runtime_version);
  cudaDriverGetVersion(&d.driver_version);
  d.catalog_id = catalog_gpu_id(d.name);
  return d;
}

Timer::Timer(const DeviceInfo& dev) {
  flush_bytes_ = std::max<std::size_t>(2 * dev.l2_bytes, 64u << 20);
  FK_CHECK(cudaMalloc(&flush_, flush_bytes_));
  FK_CHECK(cudaEventCreate(&start_));
  FK_CHECK(cudaEventCreate(&stop_));
}

Timer::~Timer() {
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
  if (flush_) cudaFree(flush_);
}

void Timer::flush_l2() { FK_CHECK(cudaMemsetAsync(flush_, 0, flush_bytes_, nullptr)); }

std::vector<double> Timer::time_us(const std::function<void()>& launch, int warmup, int reps) {
  for (int i = 0; i < warmup; ++i) launch();
  FK_CHECK(cudaDeviceSynchronize());
  std::vector<double> t;
  t.reserve(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    flush_l2();
    FK_CHECK(gpu_spin(50.0, nullptr));  // the launches below queue up behind it
    FK_CHECK(cudaEventRecord(start_, nullptr));
    launch();
    FK_CHECK(cudaEventRecord(stop_, nullptr));
    FK_CHECK(cudaEventSynchronize(stop_));
    float ms = 0;
    FK_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
    t.push_back(static_cast<double>(ms) * 1e3);
  }
  FK_CHECK(cudaGetLastError());
  return t;
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::uint64_t fresh_seed() {
  static std::atomic<std::uint64_t> counter{0};
  const auto now = static_cast<std::uint64_t>(
      std::chrono::high_resolution_clock::now().time_since_epoch().count());
  return mix64(now ^ mix64(counter.fetch_add(1) + 0x1234567ull));
}

}  // namespace fleetsim::kernels
