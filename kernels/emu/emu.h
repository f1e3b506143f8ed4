// A host emulator for the CUDA subset the kernels use, so that the kernels' own source
// (kernels/cuda/*.cu, compiled as C++ with FK_EMULATE) runs on the CPU in CI, where there
// is no GPU, against the CPU references.
//
// What it models:
//  - a launch runs the grid's blocks one after another; a block's threads are fibers
//    scheduled cooperatively on the calling thread (switched by emu/fiber_switch.cpp on
//    x86-64 Linux, by ucontext elsewhere): __syncthreads is a barrier of the block's fibers
//    and warp operations a barrier of the warp's 32 lanes; a barrier no fiber can pass
//    (divergent __syncthreads) is reported as a deadlock instead of hanging;
//  - shared memory is per block and starts filled with 0xFF (NaN as bf16/float), so a read
//    of shared memory nothing wrote spoils the result;
//  - cp.async copies land either at the cp.async.wait_group that must complete them (the
//    latest moment the hardware may deliver them: a read before the wait sees stale data;
//    and they become visible only at the waiting thread's next __syncthreads/__syncwarp,
//    so a read of other threads' rows without a barrier after the wait sees stale data too)
//    or, in eager mode, at once (the earliest: refilling a buffer another warp still reads
//    spoils its data); src-size 0 zero-fills without reading;
//  - blocks run one after another, in launch order or reversed (the GPU promises none);
//  - one warp per block can be made slow (it runs only when no other warp can), so that a
//    missing barrier lets the other warps run ahead and the hazard shows;
//  - mma.sync m16n8k16 gathers the operands from the 32 lanes with the fragment layouts of
//    the PTX ISA ("Matrix Fragments for mma.m16n8k16 with floating point type");
//  - WMMA fragments are spread over the lanes in an arbitrary (but fixed) layout, which is
//    all the WMMA API promises;
//  - launch checks: block size <= 1024, grid.y/z <= 65535, dynamic shared memory <= 48 KiB
//    unless raised with the attribute, and <= 227 KiB.
// What it does not model: timing, the hardware's own instruction encodings (the inline PTX
// strings are not executed), memory coalescing, bank conflicts.
#pragma once

#include <cuda_bf16.h>
#include <cuda_runtime_api.h>
#include <vector_functions.h>

#include <ucontext.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <tuple>
#include <utility>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#define FK_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FK_EMU_ASAN 1
#endif
#endif
#if defined(FK_EMU_ASAN)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

namespace fleetsim::kernels::emu {

/// A barrier of `expected` fibers; exited fibers leave it (arrive_and_drop).
struct FiberBarrier {
  int expected = 0;
  int arrived = 0;
  std::vector<int> waiting;  // fiber indices
};

struct Copy {
  void* dst;
  const void* src;
  bool valid;
};

struct Block {
  dim3 grid, block, idx;
  std::size_t smem_bytes = 0;
  unsigned char* smem = nullptr;
  std::unique_ptr<unsigned char[]> smem_store;
  FiberBarrier bar;
  std::vector<FiberBarrier> warp_bar;
  std::vector<std::array<std::uint64_t, 32>> xchg;     // per warp: shuffle exchange
  std::vector<std::array<std::uint32_t, 32 * 6>> mma;  // per warp: a[4], b[2] of each lane
  std::vector<std::array<float, 3 * 256>> wmma;        // per warp: A, B, C of a WMMA op
  Block(dim3 g, dim3 b, dim3 i, std::size_t smem_b, int threads)
      : grid(g), block(b), idx(i), smem_bytes(smem_b) {
    const int warps = (threads + 31) / 32;
    bar.expected = threads;
    warp_bar.resize(static_cast<std::size_t>(warps));
    for (int w = 0; w < warps; ++w)
      warp_bar[static_cast<std::size_t>(w)].expected = std::min(32, threads - 32 * w);
    xchg.resize(static_cast<std::size_t>(warps));
    mma.resize(static_cast<std::size_t>(warps));
    wmma.resize(static_cast<std::size_t>(warps));
    smem_store.reset(new unsigned char[smem_b + 256]);
    auto base = reinterpret_cast<std::uintptr_t>(smem_store.get());
    smem = smem_store.get() + ((128 - base % 128) % 128);  // 128-byte aligned
    std::memset(smem, 0xFF, smem_b);
  }
};

struct Thread {
  Block* blk = nullptr;
  uint3 tid{};
  int linear = 0, warp = 0, lane = 0;
  std::vector<Copy> open;                 // issued, not yet committed
  std::vector<std::vector<Copy>> groups;  // committed, oldest first
  std::vector<Copy> landed;               // waited for, not yet visible (until a barrier)
};

inline thread_local Thread* self = nullptr;

/// How adversarial the emulation is (set by tests before launching).
struct Config {
  bool eager_copies = false;    ///< cp.async lands at issue instead of at its wait
  int slow_warp_us = 0;         ///< > 0: warp (block index % warps) sleeps this long per step
  bool reverse_blocks = false;  ///< run the grid's blocks last to first
};
inline Config& config() {
  static Config c;
  return c;
}

inline std::mutex& state_mutex() {
  static std::mutex m;
  return m;
}
inline cudaError_t& last_error_ref() {
  static cudaError_t e = cudaSuccess;
  return e;
}
/// Like cudaGetLastError: returns and clears the last launch error.
inline cudaError_t last_error() {
  std::lock_guard<std::mutex> g(state_mutex());
  const cudaError_t e = last_error_ref();
  last_error_ref() = cudaSuccess;
  return e;
}
inline std::map<const void*, std::size_t>& smem_attr() {
  static std::map<const void*, std::size_t> m;
  return m;
}
template <class K>
cudaError_t set_smem_attr(K kernel, std::size_t bytes) {
  if (bytes > 227u * 1024u) return cudaErrorInvalidValue;
  std::lock_guard<std::mutex> g(state_mutex());
  smem_attr()[reinterpret_cast<const void*>(kernel)] = bytes;
  return cudaSuccess;
}

inline unsigned char* dynamic_smem() { return self->blk->smem; }

inline unsigned long long global_ns() {
  return static_cast<unsigned long long>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                             std::chrono::steady_clock::now().time_since_epoch())
                                             .count());
}

// ---- fibers and synchronisation -----------------------------------------------------------

#if defined(__x86_64__) && defined(__linux__)
#define FK_EMU_FAST_SWITCH 1
/// emu/fiber_switch.cpp: stores the current stack pointer in *save and resumes the fiber
/// whose stack pointer is `to` (callee-saved registers, MXCSR and x87 control word kept).
extern "C" void fk_emu_switch(void** save, void* to);
#endif

/// Runs one block's threads as fibers on the calling thread.
class Scheduler {
 public:
  static constexpr std::size_t kStack = 256 * 1024;  // generous: sanitizers enlarge frames

  enum class State { kRunnable, kWaiting, kDone };
  struct Fiber {
#if defined(FK_EMU_FAST_SWITCH)
    void* sp = nullptr;  // saved stack pointer while the fiber is switched out
#else
    ucontext_t ctx{};
#endif
    std::unique_ptr<char[]> stack;
    State state = State::kRunnable;
    Thread* th = nullptr;
  };

  explicit Scheduler(int n) : fibers_(static_cast<std::size_t>(n)) {
    for (auto& f : fibers_) f.stack.reset(new char[kStack]);
  }

  /// Runs body(t) for every fiber t of the block until all finish; throws on deadlock.
  template <class Body>
  void run_block(Block& blk, Body& body, bool slow_warp_enabled) {
    blk_ = &blk;
    body_ = [&body](int t) { body(t); };
    const int n = static_cast<int>(fibers_.size());
    const unsigned warps = static_cast<unsigned>((n + 31) / 32);
    const unsigned linear = (blk.idx.z * blk.grid.y + blk.idx.y) * blk.grid.x + blk.idx.x;
    slow_warp_ = slow_warp_enabled ? static_cast<int>(linear % warps) : -1;
    for (int t = 0; t < n; ++t) {
      Fiber& f = fibers_[static_cast<std::size_t>(t)];
      f.state = State::kRunnable;
      f.th = nullptr;
#if defined(FK_EMU_FAST_SWITCH)
      // A fresh stack as fk_emu_switch leaves one: MXCSR and x87 control word (their
      // power-on defaults), six zeroed registers, then trampoline as the return address,
      // entered with the stack aligned as after a call (rsp % 16 == 8).
#if defined(FK_EMU_ASAN)
      // Frames of the fiber's last run (its redzones) are still poisoned: a new run starts
      // on a clean stack (swapcontext's interceptor did this for the ucontext switch).
      __asan_unpoison_memory_region(f.stack.get(), kStack);
#endif
      auto top = reinterpret_cast<std::uintptr_t>(f.stack.get() + kStack) & ~std::uintptr_t{15};
      auto* slot = reinterpret_cast<std::uint64_t*>(top);
      *--slot = 0;  // trampoline's own return address: it never returns
      *--slot = reinterpret_cast<std::uint64_t>(&Scheduler::trampoline);
      for (int r = 0; r < 6; ++r) *--slot = 0;
      *--slot = 0x1F80ull | (0x037Full << 32);  // MXCSR at (rsp), x87 control word at 4(rsp)
      f.sp = slot;
#else
      getcontext(&f.ctx);
      f.ctx.uc_stack.ss_sp = f.stack.get();
      f.ctx.uc_stack.ss_size = kStack;
      f.ctx.uc_link = nullptr;
      makecontext(&f.ctx, &Scheduler::trampoline, 0);
#endif
    }
    int next = 0;
    for (;;) {
      int pick = -1;
      // Round robin over runnable fibers; the slow warp only when nothing else can run.
      for (int pass = 0; pass < 2 && pick < 0; ++pass)
        for (int i = 0; i < n; ++i) {
          const int t = (next + i) % n;
          const Fiber& f = fibers_[static_cast<std::size_t>(t)];
          if (f.state != State::kRunnable) continue;
          if (pass == 0 && t / 32 == slow_warp_) continue;
          pick = t;
          break;
        }
      if (pick < 0) {
        for (const auto& f : fibers_)
          if (f.state != State::kDone)
            throw std::runtime_error(
                "emulator: deadlock: threads wait at a barrier that the others never reach "
                "(divergent __syncthreads or warp operation)");
        break;
      }
      current_ = pick;
      next = pick + 1;
      switch_to(fibers_[static_cast<std::size_t>(pick)]);
    }
    body_ = nullptr;
  }

  /// The calling fiber waits at `b` until all its expected fibers arrive.
  void arrive_and_wait(FiberBarrier& b) {
    if (++b.arrived >= b.expected) {
      release(b);
      return;  // the last one continues at once
    }
    Fiber& f = fibers_[static_cast<std::size_t>(current_)];
    f.state = State::kWaiting;
    b.waiting.push_back(current_);
    yield(false);
  }
  /// The calling fiber leaves `b` for good (its thread exited).
  void arrive_and_drop(FiberBarrier& b) {
    --b.expected;
    if (b.arrived > 0 && b.arrived >= b.expected) release(b);
  }

  /// Records the emulated thread of the running fiber (restored at every switch to it).
  void bind(Thread* th) { fibers_[static_cast<std::size_t>(current_)].th = th; }

  static Scheduler*& current_scheduler() {
    static thread_local Scheduler* s = nullptr;
    return s;
  }

 private:
  void release(FiberBarrier& b) {
    for (int t : b.waiting) fibers_[static_cast<std::size_t>(t)].state = State::kRunnable;
    b.waiting.clear();
    b.arrived = 0;
  }

  static void trampoline() {
    Scheduler* s = current_scheduler();
#if defined(FK_EMU_ASAN)
    __sanitizer_finish_switch_fiber(nullptr, &s->main_bottom_, &s->main_size_);
#endif
    s->body_(s->current_);
    s->fibers_[static_cast<std::size_t>(s->current_)].state = State::kDone;
    s->yield(true);
  }

  void switch_to(Fiber& f) {
    self = f.th;  // the emulated thread whose fiber runs next (null until it starts)
#if defined(FK_EMU_ASAN)
    void* fake = nullptr;
    __sanitizer_start_switch_fiber(&fake, f.stack.get(), kStack);
#endif
#if defined(FK_EMU_FAST_SWITCH)
    fk_emu_switch(&main_sp_, f.sp);
#else
    swapcontext(&main_, &f.ctx);
#endif
#if defined(FK_EMU_ASAN)
    __sanitizer_finish_switch_fiber(fake, nullptr, nullptr);
#endif
  }

  void yield(bool dying) {
    Fiber& f = fibers_[static_cast<std::size_t>(current_)];
#if defined(FK_EMU_ASAN)
    void* fake = nullptr;
    __sanitizer_start_switch_fiber(dying ? nullptr : &fake, main_bottom_, main_size_);
#else
    (void)dying;
#endif
#if defined(FK_EMU_FAST_SWITCH)
    fk_emu_switch(&f.sp, main_sp_);
#else
    swapcontext(&f.ctx, &main_);
#endif
#if defined(FK_EMU_ASAN)
    __sanitizer_finish_switch_fiber(fake, &main_bottom_, &main_size_);
#endif
  }

  std::vector<Fiber> fibers_;
#if defined(FK_EMU_FAST_SWITCH)
  void* main_sp_ = nullptr;
#else
  ucontext_t main_{};
#endif
  Block* blk_ = nullptr;
  std::function<void(int)> body_;
  int current_ = 0;
  int slow_warp_ = -1;
  const void* main_bottom_ = nullptr;
  std::size_t main_size_ = 0;
};

inline void publish_landed();  // cp.async section below
inline void syncthreads() {
  publish_landed();
  Scheduler::current_scheduler()->arrive_and_wait(self->blk->bar);
}
inline void syncwarp() {
  Scheduler::current_scheduler()->arrive_and_wait(
      self->blk->warp_bar[static_cast<std::size_t>(self->warp)]);
}

template <class T>
T shfl(T v, int src_lane) {
  static_assert(sizeof(T) <= 8, "shuffle of at most 8 bytes");
  auto& x = self->blk->xchg[static_cast<std::size_t>(self->warp)];
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  x[static_cast<std::size_t>(self->lane)] = bits;
  syncwarp();
  const std::uint64_t got = x[static_cast<std::size_t>(src_lane & 31)];
  syncwarp();
  T r;
  std::memcpy(&r, &got, sizeof(T));
  return r;
}

// ---- cp.async ---------------------------------------------------------------------------------

inline void cp_async16(void* dst, const void* src, bool valid) {
  if (config().eager_copies) {
    if (valid)
      std::memcpy(dst, src, 16);
    else
      std::memset(dst, 0, 16);
    return;
  }
  self->open.push_back({dst, src, valid});
}
inline void cp_async_commit() {
  self->groups.push_back(std::move(self->open));
  self->open.clear();
}
inline void land(const Copy& c) {
  if (c.valid)
    std::memcpy(c.dst, c.src, 16);
  else
    std::memset(c.dst, 0, 16);
}
/// Copies a thread has waited for become visible at its next __syncthreads/__syncwarp
/// (the kernel's own barriers, not the warp steps inside shuffles, mma or ldmatrix): on the
/// GPU, cp.async.wait_group makes them visible to the waiting thread only, so reading rows
/// that other threads copied needs a barrier in between. (Stricter than the GPU for a
/// thread reading its own copies before any barrier; no kernel here does.)
inline void publish_landed() {
  for (const Copy& c : self->landed) land(c);
  self->landed.clear();
}
inline void cp_async_wait(int n) {
  auto& g = self->groups;
  while (static_cast<int>(g.size()) > n) {
    for (const Copy& c : g.front()) self->landed.push_back(c);
    g.erase(g.begin());
  }
}

// ---- mma.sync.m16n8k16.row.col.f32.bf16.bf16.f32 ------------------------------------------

inline float bf16_lo(std::uint32_t r) {
  std::uint32_t u = r << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float bf16_hi(std::uint32_t r) {
  std::uint32_t u = r & 0xFFFF0000u;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline void mma_16816(float (&d)[4], const std::uint32_t (&a)[4], std::uint32_t b0,
                      std::uint32_t b1) {
  auto& buf = self->blk->mma[static_cast<std::size_t>(self->warp)];
  const int lane = self->lane;
  for (int i = 0; i < 4; ++i) buf[static_cast<std::size_t>(lane * 6 + i)] = a[i];
  buf[static_cast<std::size_t>(lane * 6 + 4)] = b0;
  buf[static_cast<std::size_t>(lane * 6 + 5)] = b1;
  syncwarp();
  // A[r][c]: lane (r % 8)·4 + (c % 8) / 2, register (r >= 8) + 2·(c >= 8), half c % 2.
  auto A = [&](int r, int c) {
    const int l = (r % 8) * 4 + (c % 8) / 2;
    const int reg = (r >= 8 ? 1 : 0) + (c >= 8 ? 2 : 0);
    const std::uint32_t v = buf[static_cast<std::size_t>(l * 6 + reg)];
    return (c % 2) ? bf16_hi(v) : bf16_lo(v);
  };
  // B[k][n]: lane n·4 + (k % 8) / 2, register (k >= 8), half k % 2.
  auto B = [&](int k, int n) {
    const int l = n * 4 + (k % 8) / 2;
    const std::uint32_t v = buf[static_cast<std::size_t>(l * 6 + 4 + (k >= 8 ? 1 : 0))];
    return (k % 2) ? bf16_hi(v) : bf16_lo(v);
  };
  const int g = lane >> 2, t = lane & 3;
  float out[4];
  for (int i = 0; i < 4; ++i) {
    const int row = g + (i >= 2 ? 8 : 0), col = 2 * t + (i & 1);
    float acc = d[i];
    for (int k = 0; k < 16; ++k) acc += A(row, k) * B(k, col);
    out[i] = acc;
  }
  syncwarp();  // everyone has read the operands
  for (int i = 0; i < 4; ++i) d[i] = out[i];
}

// ---- launches ----------------------------------------------------------------------------------

template <class... P>
struct Launch {
  void (*kernel)(P...);
  dim3 grid, block;
  std::size_t smem;

  template <class... A>
  void operator()(A&&... args) const {
    const long threads = static_cast<long>(block.x) * block.y * block.z;
    std::size_t limit = 48u * 1024u;
    {
      std::lock_guard<std::mutex> g(state_mutex());
      auto it = smem_attr().find(reinterpret_cast<const void*>(kernel));
      if (it != smem_attr().end()) limit = std::max(limit, it->second);
    }
    if (threads <= 0 || threads > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
        grid.y > 65535 || grid.z > 65535 || smem > limit) {
      std::lock_guard<std::mutex> g(state_mutex());
      last_error_ref() = cudaErrorInvalidConfiguration;
      return;
    }
    std::tuple<std::decay_t<P>...> params(std::forward<A>(args)...);
    const int n = static_cast<int>(threads);
    const unsigned long blocks = static_cast<unsigned long>(grid.x) * grid.y * grid.z;
    const bool reverse = config().reverse_blocks;
    Scheduler sched(n);
    Scheduler* outer = Scheduler::current_scheduler();
    Scheduler::current_scheduler() = &sched;
    for (unsigned long i = 0; i < blocks; ++i) {
      const unsigned long b = reverse ? blocks - 1 - i : i;
      const unsigned x = static_cast<unsigned>(b % grid.x),
                     y = static_cast<unsigned>(b / grid.x % grid.y),
                     z = static_cast<unsigned>(b / (static_cast<unsigned long>(grid.x) * grid.y));
      Block blk(grid, block, dim3(x, y, z), smem, n);
      std::vector<Thread> threads_of(static_cast<std::size_t>(n));
      auto body = [&](int t) {
        Thread& th = threads_of[static_cast<std::size_t>(t)];
        th.blk = &blk;
        th.linear = t;
        th.tid =
            uint3{static_cast<unsigned>(t) % block.x, static_cast<unsigned>(t) / block.x % block.y,
                  static_cast<unsigned>(t) / (block.x * block.y)};
        th.warp = t / 32;
        th.lane = t % 32;
        sched.bind(&th);
        self = &th;
        std::apply(kernel, params);
        cp_async_wait(0);  // copies never waited for still land (harmless)
        publish_landed();
        // An exited thread no longer takes part in barriers (as on the GPU).
        sched.arrive_and_drop(blk.bar);
        sched.arrive_and_drop(blk.warp_bar[static_cast<std::size_t>(th.warp)]);
        self = nullptr;
      };
      try {
        sched.run_block(blk, body, config().slow_warp_us > 0);
      } catch (...) {
        Scheduler::current_scheduler() = outer;
        throw;
      }
    }
    Scheduler::current_scheduler() = outer;
  }
};

template <class... P>
Launch<P...> make_launch(void (*kernel)(P...), dim3 grid, dim3 block, std::size_t smem) {
  return Launch<P...>{kernel, grid, block, smem};
}

}  // namespace fleetsim::kernels::emu

// ---- the CUDA names the kernels use -----------------------------------------------------------

#define threadIdx (::fleetsim::kernels::emu::self->tid)
#define blockIdx (::fleetsim::kernels::emu::self->blk->idx)
#define blockDim (::fleetsim::kernels::emu::self->blk->block)
#define gridDim (::fleetsim::kernels::emu::self->blk->grid)

inline void __syncthreads() { ::fleetsim::kernels::emu::syncthreads(); }
inline void __syncwarp(unsigned = 0xFFFFFFFFu) {
  ::fleetsim::kernels::emu::publish_landed();
  ::fleetsim::kernels::emu::syncwarp();
}
template <class T>
T __shfl_xor_sync(unsigned, T v, int mask) {
  return ::fleetsim::kernels::emu::shfl(v, ::fleetsim::kernels::emu::self->lane ^ mask);
}
template <class T>
T __shfl_sync(unsigned, T v, int src) {
  return ::fleetsim::kernels::emu::shfl(v, src);
}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline int atomicAdd(int* p, int v) { return std::atomic_ref<int>(*p).fetch_add(v); }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  return std::atomic_ref<unsigned long long>(*p).fetch_add(v);
}
inline double atomicAdd(double* p, double v) {
  std::atomic_ref<double> a(*p);
  double old = a.load();
  while (!a.compare_exchange_weak(old, old + v)) {}
  return old;
}
inline unsigned long long atomicMax(unsigned long long* p, unsigned long long v) {
  std::atomic_ref<unsigned long long> a(*p);
  unsigned long long old = a.load();
  while (old < v && !a.compare_exchange_weak(old, v)) {}
  return old;
}
inline long long __double_as_longlong(double d) {
  long long r;
  std::memcpy(&r, &d, 8);
  return r;
}
inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
