// Host emulation of the nvcuda::wmma subset gemm_tile.cuh uses (16×16×16, bf16 inputs,
// float accumulators). Element (r, c) of a fragment's 16×16 matrix is held by lane
// (16r + c) % 32 in slot (16r + c) / 32: the API promises no layout, so any fixed one is
// faithful. mma_sync is warp-collective: the lanes pool their slots, then each computes
// its own 8 results.
#pragma once

#include "kernels/emu/emu.h"

namespace nvcuda::wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <class Use, int M, int N, int K, class T, class Layout = void>
struct fragment {
  static constexpr int num_elements = 8;
  float x[8];
};

namespace detail {
inline int lane() { return ::fleetsim::kernels::emu::self->lane; }
// (r, c) of slot s of this lane.
inline int row_of(int s) { return (32 * s + lane()) / 16; }
inline int col_of(int s) { return (32 * s + lane()) % 16; }
inline float to_float(const __nv_bfloat16& v) { return __bfloat162float(v); }
inline float to_float(float v) { return v; }
}  // namespace detail

template <class Use, class T, class L>
void fill_fragment(fragment<Use, 16, 16, 16, T, L>& f, float v) {
  for (float& x : f.x) x = v;
}

template <class Use, class T>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, row_major>& f, const T* p, unsigned ldm) {
  for (int s = 0; s < 8; ++s)
    f.x[s] =
        detail::to_float(p[static_cast<std::size_t>(detail::row_of(s)) * ldm + detail::col_of(s)]);
}
template <class Use, class T>
void load_matrix_sync(fragment<Use, 16, 16, 16, T, col_major>& f, const T* p, unsigned ldm) {
  for (int s = 0; s < 8; ++s)
    f.x[s] =
        detail::to_float(p[static_cast<std::size_t>(detail::col_of(s)) * ldm + detail::row_of(s)]);
}

template <class T>
void store_matrix_sync(T* p, const fragment<accumulator, 16, 16, 16, T, void>& f, unsigned ldm,
                       layout_t l) {
  for (int s = 0; s < 8; ++s) {
    const int r = detail::row_of(s), c = detail::col_of(s);
    if (l == mem_row_major)
      p[static_cast<std::size_t>(r) * ldm + c] = f.x[s];
    else
      p[static_cast<std::size_t>(c) * ldm + r] = f.x[s];
  }
}

template <class TA, class LA, class TB, class LB, class TC>
void mma_sync(fragment<accumulator, 16, 16, 16, TC, void>& d,
              const fragment<matrix_a, 16, 16, 16, TA, LA>& a,
              const fragment<matrix_b, 16, 16, 16, TB, LB>& b,
              const fragment<accumulator, 16, 16, 16, TC, void>& c) {
  namespace emu = ::fleetsim::kernels::emu;
  auto& buf = emu::self->blk->wmma[static_cast<std::size_t>(emu::self->warp)];
  for (int s = 0; s < 8; ++s) {
    const int i = 32 * s + detail::lane();  // = 16 r + c
    buf[static_cast<std::size_t>(i)] = a.x[s];
    buf[static_cast<std::size_t>(256 + i)] = b.x[s];
    buf[static_cast<std::size_t>(512 + i)] = c.x[s];
  }
  emu::syncwarp();
  float out[8];
  for (int s = 0; s < 8; ++s) {
    const int r = detail::row_of(s), col = detail::col_of(s);
    float acc = buf[static_cast<std::size_t>(512 + 16 * r + col)];
    for (int k = 0; k < 16; ++k)
      acc += buf[static_cast<std::size_t>(16 * r + k)] *
             buf[static_cast<std::size_t>(256 + 16 * k + col)];
    out[s] = acc;
  }
  emu::syncwarp();
  for (int s = 0; s < 8; ++s) d.x[s] = out[s];
}

}  // namespace nvcuda::wmma
