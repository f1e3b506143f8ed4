// Host-side device helpers for the benchmarks and device tests: detection, error checks,
// owning device buffers, and event timing with L2 flushing.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fleetsim::kernels {

struct DeviceInfo {
  bool present = false;
  std::string reason;  ///< why not present
  int device = 0;
  std::string name;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  std::size_t l2_bytes = 0;
  std::size_t mem_bytes = 0;
  int runtime_version = 0;  ///< e.g. 13000
  int driver_version = 0;   ///< CUDA driver API version, e.g. 13000
  std::string catalog_id;   ///< hw_models/catalog/gpus id, "" when unknown
};

/// Looks for a CUDA device (device 0); never throws.
DeviceInfo detect_device();
/// 13000 -> "13.0".
std::string cuda_version_string(int v);

struct CudaError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void check_cuda(cudaError_t e, const char* what, const char* file, int line);
#define FK_CHECK(expr) ::fleetsim::kernels::check_cuda((expr), #expr, __FILE__, __LINE__)

/// An owning device allocation of n elements of T.
template <class T>
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t n) : n_(n) {
    if (n > 0) FK_CHECK(cudaMalloc(reinterpret_cast<void**>(&p_), n * sizeof(T)));
  }
  ~DeviceBuffer() {
    if (p_) cudaFree(p_);
  }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), n_(o.n_) {
    o.p_ = nullptr;
    o.n_ = 0;
  }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    if (this != &o) {
      if (p_) cudaFree(p_);
      p_ = o.p_;
      n_ = o.n_;
      o.p_ = nullptr;
      o.n_ = 0;
    }
    return *this;
  }
  T* get() const { return p_; }
  std::size_t size() const { return n_; }
  std::size_t bytes() const { return n_ * sizeof(T); }
  /// Fills every byte with 0xFF: NaN for bf16 and float, -1 for int; an element a kernel
  /// fails to write stays non-finite (or an invalid index) and fails the check.
  void poison() const {
    if (p_) FK_CHECK(cudaMemset(p_, 0xFF, bytes()));
  }
  std::vector<T> to_host() const {
    std::vector<T> h(n_);
    if (n_) FK_CHECK(cudaMemcpy(h.data(), p_, bytes(), cudaMemcpyDeviceToHost));
    return h;
  }
  void from_host(const std::vector<T>& h) {
    if (h.size() != n_) throw std::invalid_argument("DeviceBuffer::from_host: size mismatch");
    if (n_) FK_CHECK(cudaMemcpy(p_, h.data(), bytes(), cudaMemcpyHostToDevice));
  }

 private:
  T* p_ = nullptr;
  std::size_t n_ = 0;
};

/// Copies n elements starting at device pointer p to the host.
template <class T>
std::vector<T> copy_to_host(const T* p, std::size_t n) {
  std::vector<T> h(n);
  if (n) FK_CHECK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
  return h;
}

/// Event timing as METHOD.md asks: warm-up runs first; then each timed run is preceded by
/// an L2 flush (a memset of twice the L2 size) and a short spin kernel, so that the events
/// bracket only the kernels and the caches start cold; times are per run, in microseconds.
class Timer {
 public:
  explicit Timer(const DeviceInfo& dev);
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;
  std::vector<double> time_us(const std::function<void()>& launch, int warmup, int reps);
  void flush_l2();

 private:
  void* flush_ = nullptr;
  std::size_t flush_bytes_ = 0;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
};

double median(std::vector<double> v);

/// A seed for fresh inputs: time-based, mixed with a counter.
std::uint64_t fresh_seed();

}  // namespace fleetsim::kernels
