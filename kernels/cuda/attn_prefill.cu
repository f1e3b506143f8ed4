// Prefill attention forward, BF16, head dim 128: FlashAttention-2-style tiling (Dao 2023,
// arXiv:2307.08691, Algorithm 1) written plainly.
//
// Block = 4 warps, 64 query rows of one (sequence, head) (other shapes: Tiling below);
// each warp owns 16 rows and keeps
// their Q fragments in registers (loaded once, straight from global memory). Keys and
// values stream through shared memory in tiles of 64 with a 3-stage cp.async ring (two
// tiles in flight while the third is used; one __syncthreads per tile). Rows are padded to
// 272 bytes, so the ldmatrix reads are free of bank conflicts. Per tile a warp computes
// S = Q·Kᵀ (16×64) with mma.sync m16n8k16 (K fragments by ldmatrix.x4), masks (sequence
// end, causal; only tiles that cross the end or the diagonal), updates its rows' running
// max m and sum l in the log2 domain, rescales its O accumulator (16×128, FP32 registers)
// and adds P·V, P taken straight from the S accumulators as the A operand (the C fragment of
// two adjacent n8 tiles is the A fragment of one k16 slice) and V fragments by
// ldmatrix.x4.trans. GQA: head h reads KV head h / (heads / kv_heads). Causal blocks stop
// at the last key tile their rows can see; the heaviest query tiles are scheduled first.
// Shared memory 102 KiB and 190 registers: two blocks (8 warps) per SM. A variant
// with three blocks per SM and one with 8 warps (128 rows) per block are compiled too, see
// Tiling; and a fourth shape with 32 rows per warp (128 rows on 4 warps, Q in shared
// memory), attn_prefill_w32_kernel below.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/kernels.h"

namespace fleetsim::kernels {
namespace {

constexpr int D = 128;     // head dim
constexpr int BC = 64;     // keys per tile
constexpr int LD = D + 8;  // shared row stride (elements): 272 bytes, 16-byte aligned
constexpr int STAGE = 2 * BC * LD;  // K tile then V tile (elements)

// Three block shapes with 16 query rows per warp, chosen by FLEETSIM_PREFILL_ROWS (read at
// every launch, for measuring them against each other on a GPU; "128x4", 32 rows per warp,
// is its own kernel, attn_prefill_w32_kernel):
//  - "64" (default): 4 warps, 3 stages (two tiles in flight), 102 KiB, two blocks per SM;
//  - "64x3": 4 warps, 2 stages (one tile in flight), 68 KiB, three blocks (12 warps) per SM,
//    registers capped at 168;
//  - "128": 8 warps, 4 stages, 136 KiB, one block per SM: each K/V tile is loaded once for
//    twice the rows.
template <int WARPS, int BLOCKS>  // BLOCKS: blocks per SM the shape is built for
struct Tiling {
  static constexpr int kRows = 16 * WARPS;
  static constexpr int kThreads = 32 * WARPS;
  static constexpr int kStages = WARPS == 8 ? 4 : (BLOCKS == 3 ? 2 : 3);
  static constexpr int kBlocksPerSm = BLOCKS;
  static constexpr int kSmem = kStages * STAGE * 2;  // 104448, 69632 or 139264
};

struct Args {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k;
  const __nv_bfloat16* v;
  __nv_bfloat16* o;
  int q_len, kv_len, heads, kv_heads;
  int causal;
  float scale_log2;  // softmax_scale · log2(e)
};

// Where query tile qt of head h (its `rows` rows) sits and which keys it attends: KV head
// hk (GQA), rows [q0, q0 + rows), and keys [0, kv_end) in n_tiles tiles of BC; causal rows
// stop at their diagonal, aligned bottom-right (offset = kv_len − q_len ≥ 0) for chunks.
struct QueryTile {
  int hk, q0, offset, n_tiles;
};
FK_DEV QueryTile query_tile(const Args& a, int qt, int h, int rows) {
  QueryTile t;
  t.hk = h / (a.heads / a.kv_heads);
  t.q0 = qt * rows;
  t.offset = a.kv_len - a.q_len;
  const int last_row = min(t.q0 + rows, a.q_len) - 1;
  const int kv_end = a.causal ? min(a.kv_len, last_row + t.offset + 1) : a.kv_len;
  t.n_tiles = (kv_end + BC - 1) / BC;
  return t;
}

// Copies one 64-row tile of K and of V into a stage: this thread's 16-byte chunks are
// column cc = (tid % 16)·8 of rows r = tid / 16 + Ri, R = THREADS / 16, read at element
// offset thr_off + tile_off + Ri·stride of k and v (thr_off = (tid / 16)·stride + cc,
// strideR = R·stride). Rows r >= valid are zero-filled.
template <int THREADS>
FK_DEV void load_tile(__nv_bfloat16* st, const __nv_bfloat16* k, const __nv_bfloat16* v,
                      std::size_t thr_off, std::size_t strideR, int valid) {
  constexpr int R = THREADS / 16;
  const int tid = static_cast<int>(threadIdx.x);
  const int r0 = tid / 16, cc = (tid % 16) * 8;
#pragma unroll
  for (int i = 0; i < BC / R; ++i) {
    const int r = r0 + R * i;
    const bool ok = r < valid;
    const std::size_t off = ok ? thr_off + i * strideR : 0;
    dev::cp_async16(st + r * LD + cc, k + off, ok);
    dev::cp_async16(st + BC * LD + r * LD + cc, v + off, ok);
  }
}

template <int WARPS, int BLOCKS>
FK_GLOBAL void FK_LAUNCH_BOUNDS(Tiling<WARPS, BLOCKS>::kThreads,
                                Tiling<WARPS, BLOCKS>::kBlocksPerSm)
    attn_prefill_kernel(Args a) {
  using C = Tiling<WARPS, BLOCKS>;
  constexpr int BR = C::kRows;
  constexpr int THREADS = C::kThreads;
  constexpr int STAGES = C::kStages;
  FK_SMEM(unsigned char, smem_raw);
  auto* ring = reinterpret_cast<__nv_bfloat16*>(smem_raw);  // [STAGES][K, V][BC][LD]

  const int qt = static_cast<int>(gridDim.x - 1 - blockIdx.x);  // heavy (late) tiles first
  const int h = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z);
  const QueryTile t = query_tile(a, qt, h, BR);
  const int hk = t.hk, q0 = t.q0, offset = t.offset, n_tiles = t.n_tiles;
  const std::size_t q_stride = static_cast<std::size_t>(a.heads) * D;
  const std::size_t kv_stride = static_cast<std::size_t>(a.kv_heads) * D;
  const __nv_bfloat16* k_base =
      a.k + static_cast<std::size_t>(b) * a.kv_len * kv_stride + static_cast<std::size_t>(hk) * D;
  const __nv_bfloat16* v_base =
      a.v + static_cast<std::size_t>(b) * a.kv_len * kv_stride + static_cast<std::size_t>(hk) * D;

  // Tile j goes to stage j % STAGES. A group is committed even when there is nothing to
  // load, so that the wait counts stay uniform.
  const std::size_t thr_off =
      static_cast<std::size_t>(threadIdx.x / 16) * kv_stride + (threadIdx.x % 16) * 8;
  auto issue = [&](int j) {
    if (j < n_tiles)
      load_tile<THREADS>(ring + (j % STAGES) * STAGE, k_base, v_base,
                         thr_off + static_cast<std::size_t>(j) * BC * kv_stride,
                         (THREADS / 16) * kv_stride,
                a.kv_len - j * BC);
    dev::cp_async_commit();
  };
#pragma unroll
  for (int j = 0; j < STAGES - 1; ++j) issue(j);

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane >> 2, t4 = lane & 3;
  const int row_a = q0 + warp * 16 + g;  // query rows of this thread's fragments
  const int row_b = row_a + 8;

  // Q fragments (A operand, row = query row) from global memory; rows past q_len are zero.
  std::uint32_t qf[8][4];
  {
    const __nv_bfloat16* qh = a.q + static_cast<std::size_t>(b) * a.q_len * q_stride +
                              static_cast<std::size_t>(h) * D + 2 * t4;
    const __nv_bfloat16* qa = qh + static_cast<std::size_t>(row_a) * q_stride;
    const __nv_bfloat16* qb = qh + static_cast<std::size_t>(row_b) * q_stride;
    const bool oka = row_a < a.q_len, okb = row_b < a.q_len;
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) {
      qf[ks][0] = oka ? dev::ld_u32(qa + ks * 16) : 0u;
      qf[ks][1] = okb ? dev::ld_u32(qb + ks * 16) : 0u;
      qf[ks][2] = oka ? dev::ld_u32(qa + ks * 16 + 8) : 0u;
      qf[ks][3] = okb ? dev::ld_u32(qb + ks * 16 + 8) : 0u;
    }
  }

  float o[16][4];
#pragma unroll
  for (int u = 0; u < 16; ++u)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[u][e] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY};
  float l_run[2] = {0.0f, 0.0f};
  // ldmatrix row addresses of this lane inside a stage: K (key (lane & 7) + 8·(lane >> 4),
  // dims 8·((lane >> 3) & 1)); V (key lane % 16, dims 8·(lane / 16)).
  const int k_lrow = ((lane & 7) + ((lane >> 4) << 3)) * LD + ((lane >> 3) & 1) * 8;
  const int v_lrow = (((lane >> 3) & 1) * 8 + (lane & 7)) * LD + (lane >> 4) * 8;
  const int q_min = q0 + warp * 16;  // the warp's first row

  for (int j = 0; j < n_tiles; ++j) {
    dev::cp_async_wait<STAGES - 2>();  // tile j has landed (tile j + 1 may be in flight)
    __syncthreads();  // tile j visible to all; everyone is done with tile j - 1's stage
    issue(j + STAGES - 1);  // into the stage of tile j - 1
    const __nv_bfloat16* Kb = ring + (j % STAGES) * STAGE;
    const __nv_bfloat16* Vb = Kb + BC * LD;

    // S = Q·Kᵀ: 8 k16-slices of the head dim × 8 n8-tiles of keys. One ldmatrix.x4 gives
    // the B fragments of two n8-tiles: matrix i = keys 16np + 8(i >> 1).., dims 16ks +
    // 8(i & 1)... The n8-tiles are the inner loop, so that consecutive MMAs go to different
    // accumulators.
    float s[8][4];
#pragma unroll
    for (int nt = 0; nt < 8; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < 8; ++ks)
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        std::uint32_t kb[4];
        dev::ldmatrix_x4(kb, Kb + np * 16 * LD + ks * 16 + k_lrow);
        dev::mma_bf16_16816(s[2 * np], qf[ks], kb[0], kb[1]);
        dev::mma_bf16_16816(s[2 * np + 1], qf[ks], kb[2], kb[3]);
      }

    // Scale into the log2 domain and mask: keys past the end, and the future when causal.
    // Only tiles that cross the end of the keys or this warp's diagonal need the mask.
    const int key0 = j * BC;
    const bool full = key0 + BC <= a.kv_len && (!a.causal || key0 + BC - 1 <= q_min + offset);
    if (full) {
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[nt][e] *= a.scale_log2;
    } else {
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int key = key0 + nt * 8 + t4 * 2 + (e & 1);
          const int row = e < 2 ? row_a : row_b;
          const bool ok = key < a.kv_len && (!a.causal || key <= row + offset);
          s[nt][e] = ok ? s[nt][e] * a.scale_log2 : -INFINITY;
        }
    }

    // Online softmax per row (r = 0: row_a, r = 1: row_b). A row's 64 columns sit in the
    // 4 lanes of its quad: reduce with xor 1 and 2.
    dev::online_softmax_rows(s, m_run, l_run, o);

    // O += P·V: P (16×64) as 4 k16-slices; V tile (64 keys × 128 dims) as 16 n8-tiles. One
    // ldmatrix.x4.trans gives the B fragments of two n8-tiles: matrix i = keys 16kk +
    // 8(i & 1).., dims 16up + 8(i >> 1)...
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
      const std::uint32_t pa[4] = {
          dev::pack_bf16x2(s[2 * kk][0], s[2 * kk][1]),           // row g,   keys 16kk+2t..
          dev::pack_bf16x2(s[2 * kk][2], s[2 * kk][3]),           // row g+8, keys 16kk+2t..
          dev::pack_bf16x2(s[2 * kk + 1][0], s[2 * kk + 1][1]),   // row g,   keys 16kk+8+2t..
          dev::pack_bf16x2(s[2 * kk + 1][2], s[2 * kk + 1][3])};  // row g+8, keys 16kk+8+2t..
#pragma unroll
      for (int up = 0; up < 8; ++up) {
        std::uint32_t vb[4];
        dev::ldmatrix_x4_trans(vb, Vb + kk * 16 * LD + up * 16 + v_lrow);
        dev::mma_bf16_16816(o[2 * up], pa, vb[0], vb[1]);
        dev::mma_bf16_16816(o[2 * up + 1], pa, vb[2], vb[3]);
      }
    }
  }

  // Normalise and store rows inside the sequence.
  const float inv_a = l_run[0] > 0.0f ? 1.0f / l_run[0] : 0.0f;
  const float inv_b = l_run[1] > 0.0f ? 1.0f / l_run[1] : 0.0f;
  const std::size_t ho = static_cast<std::size_t>(h) * D + static_cast<std::size_t>(t4) * 2;
  if (row_a < a.q_len) {
    auto* dst = reinterpret_cast<std::uint32_t*>(
        a.o + (static_cast<std::size_t>(b) * a.q_len + row_a) * q_stride + ho);
#pragma unroll
    for (int u = 0; u < 16; ++u) dst[u * 4] = dev::pack_bf16x2(o[u][0] * inv_a, o[u][1] * inv_a);
  }
  if (row_b < a.q_len) {
    auto* dst = reinterpret_cast<std::uint32_t*>(
        a.o + (static_cast<std::size_t>(b) * a.q_len + row_b) * q_stride + ho);
#pragma unroll
    for (int u = 0; u < 16; ++u) dst[u * 4] = dev::pack_bf16x2(o[u][2] * inv_b, o[u][3] * inv_b);
  }
}

// ---- "128x4": 128 query rows, 4 warps, 32 rows per warp (FlashAttention-2's layout) ----------
//
// Each warp owns two m16 tiles (rows warp·32 .. +31), so every K and V fragment read from
// shared memory by ldmatrix feeds two MMAs instead of one: half the shared-memory reads per
// FLOP of the 16-rows-per-warp shapes. Registers: O 2×16×4 and S 2×8×4 FP32 per thread; Q is
// not held in registers but staged once in shared memory (cp.async, in the same group as key
// tile 0) and re-read with ldmatrix.x4 at every k-step. K/V through a 2-stage ring (one tile
// in flight). Shared memory: Q 34 KiB + ring 68 KiB = 102 KiB, two blocks (8 warps) per SM.
// The softmax works on the raw scores (max and mask), the scale goes into the exponent with
// one FMA: p = 2^(s·scale·log2e − m·scale·log2e), by ex2.approx.ftz. Causal: a warp skips
// key tiles that lie entirely in its rows' future (the block's last tiles for its upper
// warps); only tiles that cross a warp's diagonal or the end of the keys are masked.
namespace w32 {
constexpr int kRows = 128;
constexpr int kThreads = 128;
constexpr int kStages = 2;
// Q, the ring, then each thread's 4 running row sums (kept here, not in registers: they are
// touched once per tile, and the 4 registers decide between spilling and not).
constexpr int kSmem = (kRows * LD + kStages * STAGE) * 2 + kThreads * 16;  // 106496
}  // namespace w32

FK_DEV float fast_exp2(float x) {
#if defined(FK_EMULATE)
  return std::exp2(x);
#else
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
#endif
}

// Shared-memory addresses as 32-bit offsets on the device (fewer registers than generic
// pointers), host pointers in the emulator.
#if defined(FK_EMULATE)
using SAddr = const __nv_bfloat16*;
FK_DEV SAddr to_saddr(const __nv_bfloat16* p) { return p; }
FK_DEV SAddr sadd(SAddr p, int elems) { return p + elems; }
FK_DEV void ldsm_x4(std::uint32_t (&r)[4], SAddr p) { dev::ldmatrix_x4(r, p); }
FK_DEV void cp_async16s(SAddr dst, const void* src, bool valid) {
  dev::cp_async16(const_cast<__nv_bfloat16*>(dst), src, valid);
}
FK_DEV void ldsm_x4_trans(std::uint32_t (&r)[4], SAddr p) { dev::ldmatrix_x4_trans(r, p); }
#else
using SAddr = std::uint32_t;
FK_DEV SAddr to_saddr(const __nv_bfloat16* p) { return dev::smem_addr(p); }
FK_DEV SAddr sadd(SAddr p, int elems) { return p + 2u * static_cast<std::uint32_t>(elems); }
FK_DEV void cp_async16s(SAddr dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(valid ? 16 : 0)
               : "memory");
}
FK_DEV void ldsm_x4(std::uint32_t (&r)[4], SAddr p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(p)
               : "memory");
}
FK_DEV void ldsm_x4_trans(std::uint32_t (&r)[4], SAddr p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(p)
               : "memory");
}
#endif

FK_GLOBAL void FK_LAUNCH_BOUNDS(w32::kThreads, 2) attn_prefill_w32_kernel(Args a) {
  constexpr int BR = w32::kRows;
  constexpr int THREADS = w32::kThreads;
  constexpr int STAGES = w32::kStages;
  FK_SMEM(unsigned char, smem_raw);
  auto* qs = reinterpret_cast<__nv_bfloat16*>(smem_raw);  // [BR][LD]
  __nv_bfloat16* ring = qs + BR * LD;                     // [STAGES][K, V][BC][LD]

  // Heads vary fastest, so the heavy (late) query tiles of every head and sequence go first
  // and the light ones fill the last wave; consecutive blocks share their keys in L2.
  const int qt = static_cast<int>(gridDim.y - 1 - blockIdx.y);
  const int h = static_cast<int>(blockIdx.x);
  const int b = static_cast<int>(blockIdx.z);
  const QueryTile t = query_tile(a, qt, h, BR);
  const int hk = t.hk, q0 = t.q0, offset = t.offset, n_tiles = t.n_tiles;
  const std::size_t q_stride = static_cast<std::size_t>(a.heads) * D;
  const std::size_t kv_stride = static_cast<std::size_t>(a.kv_heads) * D;

  // Q tile: this thread copies column chunk (tid % 16)·8 of rows tid / 16 + 8i; rows past
  // q_len are zero-filled. Committed with key tile 0.
  {
    const int r0 = static_cast<int>(threadIdx.x) / 16,
              cc = (static_cast<int>(threadIdx.x) % 16) * 8;
    const __nv_bfloat16* qh = a.q + (static_cast<std::size_t>(b) * a.q_len + q0) * q_stride +
                              static_cast<std::size_t>(h) * D + cc;
#pragma unroll
    for (int i = 0; i < BR / (THREADS / 16); ++i) {
      const int r = r0 + (THREADS / 16) * i;
      const bool ok = q0 + r < a.q_len;
      dev::cp_async16(qs + r * LD + cc, ok ? qh + static_cast<std::size_t>(r) * q_stride : a.q, ok);
    }
  }
  // K/V tiles: this thread copies column chunk (tid % 16)·8 of rows tid / 16 + 8i.
  const std::size_t thr_off =
      static_cast<std::size_t>(threadIdx.x / 16) * kv_stride + (threadIdx.x % 16) * 8;
  const std::size_t kv_thr = static_cast<std::size_t>(b) * a.kv_len * kv_stride +
                             static_cast<std::size_t>(hk) * D + thr_off;  // same for K and V
  const SAddr st_thr = to_saddr(ring + (threadIdx.x / 16) * LD + (threadIdx.x % 16) * 8);
  auto issue = [&](int j) {
    if (j < n_tiles) {
      const std::size_t t_off = kv_thr + static_cast<std::size_t>(j) * BC * kv_stride;
      const int valid = a.kv_len - j * BC - static_cast<int>(threadIdx.x / 16);
      const SAddr st = sadd(st_thr, (j % STAGES) * STAGE);
#pragma unroll
      for (int i = 0; i < BC / (THREADS / 16); ++i) {
        const bool ok = (THREADS / 16) * i < valid;
        const std::size_t off =
            ok ? t_off + static_cast<std::size_t>(i) * (THREADS / 16) * kv_stride : 0;
        cp_async16s(sadd(st, i * (THREADS / 16) * LD), a.k + off, ok);
        cp_async16s(sadd(st, BC * LD + i * (THREADS / 16) * LD), a.v + off, ok);
      }
    }
    dev::cp_async_commit();
  };
  issue(0);

  const int warp = static_cast<int>(threadIdx.x) / 32;
  const int lane = static_cast<int>(threadIdx.x) % 32;
  const int g = lane >> 2, t4 = lane & 3;
  const int q_min = q0 + warp * 32;  // the warp's first and last rows
  const int q_max = q_min + 31;
  // Fragment rows of this thread: tile mt, half r -> q_min + 16mt + 8r + g.

  float o[2][16][4];
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int u = 0; u < 16; ++u)
#pragma unroll
      for (int e = 0; e < 4; ++e) o[mt][u][e] = 0.0f;
  float m_run[2][2];  // raw-score max per [mt][r]
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) m_run[mt][r] = -INFINITY;
  // Row sums [mt][r] -> .x .y .z .w, quad-partial (reduced at the end); this thread's slot.
  float4* l_slot = reinterpret_cast<float4*>(ring + STAGES * STAGE) + threadIdx.x;
  *l_slot = make_float4(0.0f, 0.0f, 0.0f, 0.0f);

  // ldmatrix row addresses of this lane: Q (A operand: row lane % 16, dims 8·(lane / 16));
  // K (key (lane & 7) + 8·(lane >> 4), dims 8·((lane >> 3) & 1)); V (key lane % 16, dims
  // 8·(lane / 16)).
  const SAddr q_lane = to_saddr(qs + (warp * 32 + (lane & 15)) * LD + (lane >> 4) * 8);
  const SAddr ring_s = to_saddr(ring);
  const int k_lrow = ((lane & 7) + ((lane >> 4) << 3)) * LD + ((lane >> 3) & 1) * 8;
  const int v_lrow = (((lane >> 3) & 1) * 8 + (lane & 7)) * LD + (lane >> 4) * 8;
  const float sl2 = a.scale_log2;
  // Key tiles this warp computes: none past q_len, none entirely in its rows' future.
  const int n_warp = q_min >= a.q_len ? 0
                     : a.causal
                         ? (min(a.kv_len, min(q_max, a.q_len - 1) + offset + 1) + BC - 1) / BC
                         : n_tiles;
  // Key tiles that need no mask (inside the keys and entirely in the past of the warp's rows).
  const int n_full = a.causal ? min(a.kv_len / BC, (q_min + offset + 1) / BC) : a.kv_len / BC;

  for (int j = 0; j < n_tiles; ++j) {
    dev::cp_async_wait<0>();  // tile j (and Q) have landed
    __syncthreads();          // visible to all; everyone is done with tile j - 1's stage
    issue(j + 1);             // into the stage of tile j - 1
    if (j >= n_warp) continue;
    const int key0 = j * BC;
    const SAddr Kb = sadd(ring_s, (j % STAGES) * STAGE + k_lrow);
    const SAddr Vb = sadd(ring_s, (j % STAGES) * STAGE + BC * LD + v_lrow);

    // S = Q·Kᵀ for both m16 tiles; each K fragment (ldmatrix.x4: two n8-tiles) feeds 4 MMAs.
    float s[2][8][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int nt = 0; nt < 8; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) s[mt][nt][e] = 0.0f;
#pragma unroll
    for (int ks = 0; ks < 8; ++ks) {
      std::uint32_t qa[2][4];
      ldsm_x4(qa[0], sadd(q_lane, ks * 16));
      ldsm_x4(qa[1], sadd(q_lane, 16 * LD + ks * 16));
#pragma unroll
      for (int np = 0; np < 4; ++np) {
        std::uint32_t kb[4];
        ldsm_x4(kb, sadd(Kb, np * 16 * LD + ks * 16));
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          dev::mma_bf16_16816(s[mt][2 * np], qa[mt], kb[0], kb[1]);
          dev::mma_bf16_16816(s[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
        }
      }
    }

    // Mask (raw scores): keys past the end, and the future when causal.
    if (j >= n_full) {
#pragma unroll
      for (int mt = 0; mt < 2; ++mt)
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            const int key = key0 + nt * 8 + t4 * 2 + (e & 1);
            const int row = q_min + mt * 16 + g + (e < 2 ? 0 : 8);
            const bool ok = key < a.kv_len && (!a.causal || key <= row + offset);
            if (!ok) s[mt][nt][e] = -INFINITY;
          }
    }

    // Online softmax per row; a row's 64 columns sit in the 4 lanes of its quad.
    float corr[2][2], rsum[2][2];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt)
          mx = fmaxf(mx, fmaxf(s[mt][nt][2 * r], s[mt][nt][2 * r + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xFFFFFFFFu, mx, 2));
        const float m_new = fmaxf(m_run[mt][r], mx);
        const float base = m_new == -INFINITY ? 0.0f : m_new * sl2;  // fully masked: no NaN
        corr[mt][r] = fast_exp2(m_run[mt][r] * sl2 - base);
        m_run[mt][r] = m_new;
        float rs = 0.0f;
#pragma unroll
        for (int nt = 0; nt < 8; ++nt) {
          s[mt][nt][2 * r] = fast_exp2(fmaf(s[mt][nt][2 * r], sl2, -base));
          s[mt][nt][2 * r + 1] = fast_exp2(fmaf(s[mt][nt][2 * r + 1], sl2, -base));
          rs += s[mt][nt][2 * r] + s[mt][nt][2 * r + 1];
        }
        rsum[mt][r] = rs;
      }
    {
      float4 l = *l_slot;
      l.x = l.x * corr[0][0] + rsum[0][0];
      l.y = l.y * corr[0][1] + rsum[0][1];
      l.z = l.z * corr[1][0] + rsum[1][0];
      l.w = l.w * corr[1][1] + rsum[1][1];
      *l_slot = l;
    }

    // P to bf16 A fragments (the C fragment of two adjacent n8-tiles is the A fragment of one
    // k16 slice), then rescale O: S is dead by then, which keeps the peak register count down.
    std::uint32_t pa[2][4][4];
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        pa[mt][kk][0] = dev::pack_bf16x2(s[mt][2 * kk][0], s[mt][2 * kk][1]);
        pa[mt][kk][1] = dev::pack_bf16x2(s[mt][2 * kk][2], s[mt][2 * kk][3]);
        pa[mt][kk][2] = dev::pack_bf16x2(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
        pa[mt][kk][3] = dev::pack_bf16x2(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
      }
#pragma unroll
    for (int mt = 0; mt < 2; ++mt)
#pragma unroll
      for (int u = 0; u < 16; ++u) {
        o[mt][u][0] *= corr[mt][0];
        o[mt][u][1] *= corr[mt][0];
        o[mt][u][2] *= corr[mt][1];
        o[mt][u][3] *= corr[mt][1];
      }

    // O += P·V: each V fragment (ldmatrix.x4.trans: two n8-tiles) feeds 4 MMAs.
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
      for (int up = 0; up < 8; ++up) {
        std::uint32_t vb[4];
        ldsm_x4_trans(vb, sadd(Vb, kk * 16 * LD + up * 16));
#pragma unroll
        for (int mt = 0; mt < 2; ++mt) {
          dev::mma_bf16_16816(o[mt][2 * up], pa[mt][kk], vb[0], vb[1]);
          dev::mma_bf16_16816(o[mt][2 * up + 1], pa[mt][kk], vb[2], vb[3]);
        }
      }
    }
  }

  // Normalise and store rows inside the sequence. The row sums are quad-partial: reduce.
  const std::size_t ho = static_cast<std::size_t>(h) * D + static_cast<std::size_t>(t4) * 2;
  const float4 l4 = *l_slot;
  const float l_run[2][2] = {{l4.x, l4.y}, {l4.z, l4.w}};
#pragma unroll
  for (int mt = 0; mt < 2; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = l_run[mt][r];
      l += __shfl_xor_sync(0xFFFFFFFFu, l, 1);
      l += __shfl_xor_sync(0xFFFFFFFFu, l, 2);
      const float inv = l > 0.0f ? 1.0f / l : 0.0f;
      const int row = q_min + mt * 16 + r * 8 + g;
      if (row < a.q_len) {
        auto* dst = reinterpret_cast<std::uint32_t*>(
            a.o + (static_cast<std::size_t>(b) * a.q_len + row) * q_stride + ho);
#pragma unroll
        for (int u = 0; u < 16; ++u)
          dst[u * 4] = dev::pack_bf16x2(o[mt][u][2 * r] * inv, o[mt][u][2 * r + 1] * inv);
      }
    }
}

cudaError_t launch_w32(const Args& a, const PrefillArgs& p, cudaStream_t s) {
  auto* kernel = &attn_prefill_w32_kernel;
  static const cudaError_t attr = FK_SET_SMEM_ATTR(kernel, w32::kSmem);
  if (attr != cudaSuccess) return attr;
  const int q_tiles = (p.q_len + w32::kRows - 1) / w32::kRows;
  if (q_tiles > 65535) return cudaErrorInvalidValue;
  const dim3 grid(static_cast<unsigned>(p.heads), static_cast<unsigned>(q_tiles),
                  static_cast<unsigned>(p.batch));
  FK_LAUNCH(kernel, grid, w32::kThreads, w32::kSmem, s)(a);
  return FK_LAST_ERROR();
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

template <int WARPS, int BLOCKS>
cudaError_t launch(const Args& a, const PrefillArgs& p, cudaStream_t s) {
  using C = Tiling<WARPS, BLOCKS>;
  auto* kernel = &attn_prefill_kernel<WARPS, BLOCKS>;
  static const cudaError_t attr = FK_SET_SMEM_ATTR(kernel, C::kSmem);
  if (attr != cudaSuccess) return attr;
  const dim3 grid(static_cast<unsigned>((p.q_len + C::kRows - 1) / C::kRows),
                  static_cast<unsigned>(p.heads), static_cast<unsigned>(p.batch));
  FK_LAUNCH(kernel, grid, C::kThreads, C::kSmem, s)(a);
  return FK_LAST_ERROR();
}

}  // namespace

cudaError_t attn_prefill_bf16(const PrefillArgs& p, cudaStream_t s) {
  if (p.head_dim != D || p.batch <= 0 || p.q_len <= 0 || p.kv_len < p.q_len || p.heads <= 0 ||
      p.kv_heads <= 0 || p.heads % p.kv_heads != 0)
    return cudaErrorInvalidValue;
  if (!aligned16(p.q) || !aligned16(p.k) || !aligned16(p.v) || !aligned16(p.o))
    return cudaErrorInvalidValue;
  if (p.heads > 65535 || p.batch > 65535) return cudaErrorInvalidValue;
  Args a;
  a.q = reinterpret_cast<const __nv_bfloat16*>(p.q);
  a.k = reinterpret_cast<const __nv_bfloat16*>(p.k);
  a.v = reinterpret_cast<const __nv_bfloat16*>(p.v);
  a.o = reinterpret_cast<__nv_bfloat16*>(p.o);
  a.q_len = p.q_len;
  a.kv_len = p.kv_len;
  a.heads = p.heads;
  a.kv_heads = p.kv_heads;
  a.causal = p.causal ? 1 : 0;
  const float scale =
      p.softmax_scale > 0 ? p.softmax_scale : 1.0f / std::sqrt(static_cast<float>(D));
  a.scale_log2 = scale * 1.4426950408889634f;
  const char* rows = std::getenv("FLEETSIM_PREFILL_ROWS");
  if (rows != nullptr && std::strcmp(rows, "128") == 0) return launch<8, 1>(a, p, s);
  if (rows != nullptr && std::strcmp(rows, "64x3") == 0) return launch<4, 3>(a, p, s);
  if (rows != nullptr && std::strcmp(rows, "128x4") == 0) return launch_w32(a, p, s);
  return launch<4, 2>(a, p, s);
}

}  // namespace fleetsim::kernels
