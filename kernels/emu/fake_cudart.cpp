// A fake CUDA runtime over host memory: just the calls the harness, the device tests and
// the benchmark make, so that they run on the CPU against the emulated kernels (emu.h).
// "Device" memory is aligned host memory, copies are memcpy, events read a steady clock,
// and the one device reports itself as an H100 so that the catalog mapping and the
// calibration CSVs are exercised. Linked only into the *_emulated test binaries, never
// with the real libcudart.
#include <cuda_runtime_api.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

#include "kernels/emu/emu.h"

struct CUevent_st {
  std::chrono::steady_clock::time_point t;
};

extern "C" {

cudaError_t cudaMalloc(void** p, size_t n) {
  const size_t bytes = ((n > 0 ? n : 1) + 255) / 256 * 256;
  *p = std::aligned_alloc(256, bytes);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
cudaError_t cudaMemcpy(void* dst, const void* src, size_t n, enum cudaMemcpyKind) {
  if (n) std::memcpy(dst, src, n);
  return cudaSuccess;
}
cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, enum cudaMemcpyKind k,
                            cudaStream_t) {
  return cudaMemcpy(dst, src, n, k);
}
cudaError_t cudaMemset(void* p, int v, size_t n) {
  std::memset(p, v, n);
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* p, int v, size_t n, cudaStream_t) { return cudaMemset(p, v, n); }
cudaError_t cudaDeviceSynchronize(void) { return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t) { return cudaSuccess; }
cudaError_t cudaEventCreate(cudaEvent_t* e) {
  *e = new CUevent_st;
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t) {
  e->t = std::chrono::steady_clock::now();
  return cudaSuccess;
}
cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  *ms = std::chrono::duration<float, std::milli>(b->t - a->t).count();
  return cudaSuccess;
}
cudaError_t cudaGetDeviceCount(int* c) {
  *c = 1;
  return cudaSuccess;
}
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp* p, int) {
  std::memset(static_cast<void*>(p), 0, sizeof *p);
  std::strncpy(p->name, "NVIDIA H100 80GB HBM3 (fleetsim host emulator)", sizeof p->name - 1);
  p->major = 9;
  p->minor = 0;
  p->multiProcessorCount = 4;
  p->l2CacheSize = 1 << 20;
  p->totalGlobalMem = size_t{16} << 30;
  return cudaSuccess;
}
cudaError_t cudaSetDevice(int) { return cudaSuccess; }
cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaDriverGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
cudaError_t cudaGetLastError(void) { return fleetsim::kernels::emu::last_error(); }
const char* cudaGetErrorName(cudaError_t e) {
  switch (e) {
    case cudaSuccess: return "cudaSuccess";
    case cudaErrorInvalidValue: return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation: return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration: return "cudaErrorInvalidConfiguration";
    default: return "cudaError (emulated runtime)";
  }
}
const char* cudaGetErrorString(cudaError_t e) { return cudaGetErrorName(e); }
cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  *free_bytes = size_t{8} << 30;
  *total = size_t{16} << 30;
  return cudaSuccess;
}

}  // extern "C"
