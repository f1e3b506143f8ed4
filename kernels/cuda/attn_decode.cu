// Decode attention over a paged KV cache, BF16, head dim 128, GQA, split-K
// (the "flash-decoding" split of the context, Dao et al. 2023,
// https://crfm.stanford.edu/2023/10/12/flashdecoding.html; paging as in vLLM's
// PagedAttention, Kwon et al. 2023, arXiv:2309.06180), with Q·Kᵀ and P·V on the tensor
// cores as in FlashInfer's GQA decode (Ye et al. 2025, arXiv:2501.01005).
//
// Kernel 1, one block per (split, KV head, sequence), 4 warps. The GROUP query heads that
// share the KV head are the M dimension of mma.sync.m16n8k16 (zero-padded to 16 rows), so
// every KV byte is read once for the whole group and the FLOPs (4·128·G per token) run on
// the tensor cores instead of FP32 FMAs.
//  - The block's chunk of the context is cut into sub-tiles of 16 tokens; warp w takes
//    sub-tiles w, w + 4, w + 8, ... and keeps its own online-softmax state (running max m in
//    the log2 domain, sum l, O accumulator 16×128 in FP32 registers). The warps never wait
//    for each other inside the loop: each has a private ring of 3 stages (K and V, 16 rows
//    of 128 bf16, rows padded to 272 bytes so that ldmatrix is free of bank conflicts) that
//    it fills with 16-byte cp.async through the block table, two sub-tiles in flight while
//    it computes the third. Lane i < 16 looks up token i's page; the row offsets reach the
//    other lanes by shuffles, so every 16-byte copy is one row-contiguous, coalesced load.
//  - Per sub-tile a warp computes S = Q·Kᵀ (16 heads × 16 tokens: 16 MMAs, K fragments by
//    ldmatrix), masks tokens past the end, updates m and l per head row, rescales O and adds
//    P·V (P straight from the S accumulators as the A operand, V fragments by
//    ldmatrix.trans: 16 MMAs).
//  - At the end the 4 warps' states are merged through shared memory (the ring is reused):
//    O = Σ_w 2^(m_w - M)·O_w, l = Σ_w 2^(m_w - M)·l_w, written as the split's partial state.
// Shared memory: 4 warps × 3 stages × 2 × 16 × 272 B = 102 KiB, so two blocks (8 warps, 16
// sub-tiles = 128 KiB of KV in flight) fit on an SM.
// Kernel 2 (combine), one block per (head, sequence): O = Σ_s 2^(m_s - M)·o_s /
// Σ_s 2^(m_s - M)·l_s over the non-empty splits.
#include <cmath>
#include <cstdint>

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/kernels.h"

namespace fleetsim::kernels {
namespace {

constexpr int D = 128;
constexpr int WARPS = 4;
constexpr int THREADS = 32 * WARPS;
constexpr int TW = 16;             // tokens per warp sub-tile (the k16 slice of P·V)
constexpr int T = WARPS * TW;      // chunks are whole multiples of this (64 tokens)
constexpr int STAGES = 3;          // sub-tiles per warp ring (STAGES - 1 in flight)
constexpr int LD = D + 8;          // shared row stride (elements): 272 bytes
constexpr int SUB = 2 * TW * LD;   // one stage: K rows then V rows (elements)
constexpr int SMEM_BYTES = WARPS * STAGES * SUB * 2;  // 104448
constexpr int BLOCKS_PER_SM = 2;   // what SMEM_BYTES allows on sm_90 (228 KiB per SM)
constexpr int LDO = D + 4;         // merge buffer row stride (floats)
static_assert(WARPS * 16 * LDO * 4 + 2 * WARPS * 16 * 4 <= SMEM_BYTES, "merge fits the ring");

struct Args {
  const __nv_bfloat16* q;
  const __nv_bfloat16* k_cache;
  const __nv_bfloat16* v_cache;
  const int* block_table;
  const int* seq_lens;
  float* part_o;   // [batch][heads][splits][D]
  float* part_ml;  // [batch][heads][splits][2]
  __nv_bfloat16* o;
  int heads, kv_heads, page_size, max_blocks_per_seq, splits, chunk_len;
  float scale_log2;
};

// Issues the cp.async copies of tokens [tok0, tok0 + 16) of sequence b (those < end) into
// one stage (K rows at Kd, V rows at Kd + TW·LD), for the calling warp only. Token rows past
// `end` are zero-filled. Must be called by all 32 lanes of the warp (shuffles).
FK_DEV void load_sub(__nv_bfloat16* Kd, const Args& a, int b, int hk, int tok0, int end,
                     int lane) {
  const int tok = tok0 + (lane & 15);
  long long off = 0;  // element offset of token `tok`'s row in the cache
  if (tok < end) {
    const int block =
        a.block_table[static_cast<std::size_t>(b) * a.max_blocks_per_seq + tok / a.page_size];
    off = ((static_cast<long long>(block) * a.kv_heads + hk) * a.page_size + tok % a.page_size) * D;
  }
  __nv_bfloat16* Vd = Kd + TW * LD;
  const int cc = (lane & 15) * 8;  // this lane's 16-byte column of every row it copies
#pragma unroll
  for (int i = 0; i < TW / 2; ++i) {
    const int r = 2 * i + (lane >> 4);  // lanes 0-15 row 2i, lanes 16-31 row 2i + 1
    const long long ro = __shfl_sync(0xFFFFFFFFu, off, r);
    const bool ok = tok0 + r < end;
    dev::cp_async16(Kd + r * LD + cc, a.k_cache + ro + cc, ok);
    dev::cp_async16(Vd + r * LD + cc, a.v_cache + ro + cc, ok);
  }
}

template <int G>
FK_GLOBAL void FK_LAUNCH_BOUNDS(THREADS, BLOCKS_PER_SM) attn_decode_split_kernel(Args a) {
  static_assert(G >= 1 && G <= 16, "the group is the M dimension of one m16 MMA");
  FK_SMEM(unsigned char, smem_raw);

  const int split = static_cast<int>(blockIdx.x);
  const int hk = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z);
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
  const int g = lane >> 2, t4 = lane & 3;  // fragment row (head) g and g + 8, column pair t4
  const int seq_len = a.seq_lens[b];
  const int start = split * a.chunk_len;
  const int end = min(seq_len, start + a.chunk_len);
  const std::size_t row0 =
      (static_cast<std::size_t>(b) * a.heads + static_cast<std::size_t>(hk) * G) * a.splits + split;
  // Partial state of head gh of this block: part_o[(row0 + gh·splits)·D], part_ml[...·2].

  if (start >= end) {  // empty chunk (sequence shorter than this split): neutral state
    for (int i = tid; i < G * D; i += THREADS)
      a.part_o[(row0 + static_cast<std::size_t>(i / D) * a.splits) * D + i % D] = 0.0f;
    if (tid < G) {
      a.part_ml[(row0 + static_cast<std::size_t>(tid) * a.splits) * 2] = -INFINITY;
      a.part_ml[(row0 + static_cast<std::size_t>(tid) * a.splits) * 2 + 1] = 0.0f;
    }
    return;
  }

  __nv_bfloat16* ring = reinterpret_cast<__nv_bfloat16*>(smem_raw) + warp * STAGES * SUB;
  const int n_sub = (end - start + TW - 1) / TW;                         // sub-tiles in chunk
  const int my_n = n_sub > warp ? (n_sub - warp + WARPS - 1) / WARPS : 0;  // this warp's
  // The warp's i-th sub-tile (chunk sub-tile warp + 4i) goes to stage i % STAGES. A group is
  // committed even when there is nothing to load, so that the wait counts stay uniform.
  auto issue = [&](int i) {
    if (i < my_n)
      load_sub(ring + (i % STAGES) * SUB, a, b, hk, start + (warp + i * WARPS) * TW, end, lane);
    dev::cp_async_commit();
  };
#pragma unroll
  for (int i = 0; i < STAGES - 1; ++i) issue(i);

  // Q as the A operand (row = head of the group, zero rows past G), straight from global.
  const auto* qg = reinterpret_cast<const std::uint16_t*>(a.q) +
                   (static_cast<std::size_t>(b) * a.heads + static_cast<std::size_t>(hk) * G) * D;
  auto qpair = [&](int row, int dim) -> std::uint32_t {
    if (row >= G) return 0u;
    return dev::pack_bits(qg[row * D + dim], qg[row * D + dim + 1]);
  };
  std::uint32_t qf[8][4];
#pragma unroll
  for (int ks = 0; ks < 8; ++ks) {
    qf[ks][0] = qpair(g, ks * 16 + 2 * t4);
    qf[ks][1] = qpair(g + 8, ks * 16 + 2 * t4);
    qf[ks][2] = qpair(g, ks * 16 + 8 + 2 * t4);
    qf[ks][3] = qpair(g + 8, ks * 16 + 8 + 2 * t4);
  }

  float o[16][4];
#pragma unroll
  for (int u = 0; u < 16; ++u)
#pragma unroll
    for (int e = 0; e < 4; ++e) o[u][e] = 0.0f;
  float m_run[2] = {-INFINITY, -INFINITY};  // rows g, g + 8
  float l_run[2] = {0.0f, 0.0f};

  for (int i = 0; i < my_n; ++i) {
    issue(i + STAGES - 1);
    dev::cp_async_wait<STAGES - 1>();  // this lane's copies of sub-tile i have landed
    __syncwarp();                      // ... and every other lane's
    const __nv_bfloat16* Kb = ring + (i % STAGES) * SUB;
    const __nv_bfloat16* Vb = Kb + TW * LD;
    const int tok0 = start + (warp + i * WARPS) * TW;

    // S = Q·Kᵀ: 2 n8-tiles of tokens × 8 k16-slices of the head dim. One ldmatrix.x4 gives
    // the B fragments of two k-slices: matrix j = tokens nt·8.., dims 32kp + 8j... The two
    // n8-tiles alternate, so that consecutive MMAs go to different accumulators.
    float s[2][4];
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) s[nt][e] = 0.0f;
#pragma unroll
    for (int kp = 0; kp < 4; ++kp) {
      std::uint32_t kb[2][4];
#pragma unroll
      for (int nt = 0; nt < 2; ++nt)
        dev::ldmatrix_x4(kb[nt], Kb + (nt * 8 + (lane & 7)) * LD + kp * 32 + (lane >> 3) * 8);
      dev::mma_bf16_16816(s[0], qf[2 * kp], kb[0][0], kb[0][1]);
      dev::mma_bf16_16816(s[1], qf[2 * kp], kb[1][0], kb[1][1]);
      dev::mma_bf16_16816(s[0], qf[2 * kp + 1], kb[0][2], kb[0][3]);
      dev::mma_bf16_16816(s[1], qf[2 * kp + 1], kb[1][2], kb[1][3]);
    }

    // Scale into the log2 domain; tokens past the end get -inf.
#pragma unroll
    for (int nt = 0; nt < 2; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int tok = tok0 + nt * 8 + t4 * 2 + (e & 1);
        s[nt][e] = tok < end ? s[nt][e] * a.scale_log2 : -INFINITY;
      }

    // Online softmax per head row (r = 0: row g, r = 1: row g + 8). A row's 16 tokens sit
    // in the 4 lanes of its quad: reduce with xor 1 and 2. Every sub-tile has at least one
    // valid token, so m is finite from the first one on.
    dev::online_softmax_rows(s, m_run, l_run, o);

    // O += P·V: P (16 heads × 16 tokens) is one k16 slice; V (16 tokens × 128 dims) 16
    // n8-tiles. One ldmatrix.x4.trans gives the B fragments of two n8-tiles: matrix j =
    // tokens 8(j & 1).., dims 16up + 8(j >> 1)...
    const std::uint32_t pa[4] = {
        dev::pack_bf16x2(s[0][0], s[0][1]),   // row g,     tokens 2t, 2t+1
        dev::pack_bf16x2(s[0][2], s[0][3]),   // row g + 8, tokens 2t, 2t+1
        dev::pack_bf16x2(s[1][0], s[1][1]),   // row g,     tokens 8+2t, 9+2t
        dev::pack_bf16x2(s[1][2], s[1][3])};  // row g + 8, tokens 8+2t, 9+2t
    const __nv_bfloat16* vrow = Vb + (((lane >> 3) & 1) * 8 + (lane & 7)) * LD + (lane >> 4) * 8;
#pragma unroll
    for (int up = 0; up < 8; ++up) {
      std::uint32_t vb[4];
      dev::ldmatrix_x4_trans(vb, vrow + up * 16);
      dev::mma_bf16_16816(o[2 * up], pa, vb[0], vb[1]);
      dev::mma_bf16_16816(o[2 * up + 1], pa, vb[2], vb[3]);
    }
    __syncwarp();  // all lanes are done with this stage before it is refilled
  }

  // Merge the 4 warps' states through shared memory (the rings are free once all warps are
  // past their loops; no copies are pending: the last groups were empty or waited for).
  dev::cp_async_wait<0>();
  __syncthreads();
  auto* o_s = reinterpret_cast<float*>(smem_raw);  // [WARPS][16][LDO]
  float* m_s = o_s + WARPS * 16 * LDO;             // [WARPS][16]
  float* l_s = m_s + WARPS * 16;                   // [WARPS][16]
  if (t4 == 0) {
    m_s[warp * 16 + g] = m_run[0];
    m_s[warp * 16 + g + 8] = m_run[1];
  }
  __syncthreads();
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int row = g + 8 * r;
    float M = -INFINITY;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) M = fmaxf(M, m_s[w * 16 + row]);
    const float f = exp2f(m_run[r] - (M == -INFINITY ? 0.0f : M));  // 0 for an idle warp
    float* dst = o_s + (warp * 16 + row) * LDO + 2 * t4;
#pragma unroll
    for (int u = 0; u < 16; ++u)
      *reinterpret_cast<float2*>(dst + u * 8) = make_float2(o[u][2 * r] * f, o[u][2 * r + 1] * f);
    if (t4 == 0) l_s[warp * 16 + row] = l_run[r] * f;
  }
  __syncthreads();
  // Thread tid owns dim tid of every head of the group.
  for (int gh = 0; gh < G; ++gh) {
    float acc = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) acc += o_s[(w * 16 + gh) * LDO + tid];
    a.part_o[(row0 + static_cast<std::size_t>(gh) * a.splits) * D + tid] = acc;
  }
  if (tid < G) {
    float M = -INFINITY, L = 0.0f;
#pragma unroll
    for (int w = 0; w < WARPS; ++w) M = fmaxf(M, m_s[w * 16 + tid]);
#pragma unroll
    for (int w = 0; w < WARPS; ++w) L += l_s[w * 16 + tid];
    a.part_ml[(row0 + static_cast<std::size_t>(tid) * a.splits) * 2] = M;
    a.part_ml[(row0 + static_cast<std::size_t>(tid) * a.splits) * 2 + 1] = L;
  }
}

// One block of D threads per (head, sequence).
FK_GLOBAL void FK_LAUNCH_BOUNDS(D) attn_decode_combine_kernel(Args a) {
  const int h = static_cast<int>(blockIdx.x);
  const int b = static_cast<int>(blockIdx.y);
  const int dd = static_cast<int>(threadIdx.x);
  const std::size_t row0 = (static_cast<std::size_t>(b) * a.heads + h) * a.splits;
  const float* ml = a.part_ml + row0 * 2;
  float M = -INFINITY;
  for (int s = 0; s < a.splits; ++s)
    if (ml[2 * s + 1] > 0.0f) M = fmaxf(M, ml[2 * s]);
  float L = 0.0f, acc = 0.0f;
  for (int s = 0; s < a.splits; ++s) {
    const float l = ml[2 * s + 1];
    if (l > 0.0f) {
      const float w = exp2f(ml[2 * s] - M);
      L += w * l;
      acc += w * a.part_o[(row0 + s) * D + dd];
    }
  }
  a.o[(static_cast<std::size_t>(b) * a.heads + h) * D + dd] =
      __float2bfloat16_rn(L > 0.0f ? acc / L : 0.0f);
}

template <int G>
cudaError_t launch_split(const Args& a, int batch, cudaStream_t s) {
  static const cudaError_t attr = FK_SET_SMEM_ATTR(attn_decode_split_kernel<G>, SMEM_BYTES);
  if (attr != cudaSuccess) return attr;
  const dim3 grid(static_cast<unsigned>(a.splits), static_cast<unsigned>(a.kv_heads),
                  static_cast<unsigned>(batch));
  FK_LAUNCH(attn_decode_split_kernel<G>, grid, THREADS, SMEM_BYTES, s)(a);
  return FK_LAST_ERROR();
}

struct SplitPlan {
  int splits = 1;
  int chunk_len = T;
};

// Splits of `want` rounded to whole 64-token tiles.
SplitPlan rounded(int max_len, int want) {
  SplitPlan sp;
  const int per = (max_len + want - 1) / want;
  sp.chunk_len = ((per + T - 1) / T) * T;
  sp.splits = (max_len + sp.chunk_len - 1) / sp.chunk_len;
  return sp;
}

SplitPlan plan_splits(const DecodeArgs& p) {
  const int max_len = p.max_seq_len > 0 ? p.max_seq_len : 1;
  if (p.num_splits > 0) return rounded(max_len, p.num_splits);
  // Enough blocks to fill every block slot (BLOCKS_PER_SM per SM) at least once, with
  // chunks of at least 256 tokens; among up to twice that many splits, the count whose last
  // wave is the fullest (fewer splits on near ties).
  const long base = static_cast<long>(p.batch) * p.kv_heads;
  const long slots = static_cast<long>(BLOCKS_PER_SM) * (p.sm_count > 0 ? p.sm_count : 132);
  const int cap = (max_len + 255) / 256;
  int lo = static_cast<int>((slots + base - 1) / base);
  lo = lo < 1 ? 1 : (lo > cap ? cap : lo);
  auto fill = [&](const SplitPlan& sp) {
    const long blocks = base * sp.splits;
    const long waves = (blocks + slots - 1) / slots;
    return static_cast<double>(blocks) / static_cast<double>(waves * slots);
  };
  SplitPlan best = rounded(max_len, lo);
  double best_fill = fill(best);
  for (int want = lo + 1; want <= 2 * lo && want <= cap; ++want) {
    const SplitPlan sp = rounded(max_len, want);
    const double f = fill(sp);
    if (f > best_fill + 0.02) {
      best = sp;
      best_fill = f;
    }
  }
  return best;
}

bool aligned16(const void* p) { return (reinterpret_cast<std::uintptr_t>(p) & 15u) == 0; }

}  // namespace

int attn_decode_splits(const DecodeArgs& a) { return plan_splits(a).splits; }

std::size_t attn_decode_workspace_bytes(const DecodeArgs& a) {
  const std::size_t rows = static_cast<std::size_t>(a.batch) * a.heads * plan_splits(a).splits;
  return rows * (D + 2) * sizeof(float);
}

cudaError_t attn_decode_bf16(const DecodeArgs& p, cudaStream_t s) {
  if (p.head_dim != D || p.batch <= 0 || p.heads <= 0 || p.kv_heads <= 0 ||
      p.heads % p.kv_heads != 0 || p.page_size <= 0 || p.max_blocks_per_seq <= 0 ||
      p.max_seq_len <= 0 || p.max_seq_len > p.max_blocks_per_seq * p.page_size)
    return cudaErrorInvalidValue;
  if (p.q == nullptr || p.k_cache == nullptr || p.v_cache == nullptr || p.block_table == nullptr ||
      p.seq_lens == nullptr || p.o == nullptr || p.workspace == nullptr)
    return cudaErrorInvalidValue;
  if (!aligned16(p.k_cache) || !aligned16(p.v_cache) || !aligned16(p.workspace))
    return cudaErrorInvalidValue;
  const SplitPlan sp = plan_splits(p);
  if (sp.splits > 65535 || p.kv_heads > 65535 || p.batch > 65535) return cudaErrorInvalidValue;
  Args a;
  a.q = reinterpret_cast<const __nv_bfloat16*>(p.q);
  a.k_cache = reinterpret_cast<const __nv_bfloat16*>(p.k_cache);
  a.v_cache = reinterpret_cast<const __nv_bfloat16*>(p.v_cache);
  a.block_table = p.block_table;
  a.seq_lens = p.seq_lens;
  a.part_o = p.workspace;
  a.part_ml = p.workspace + static_cast<std::size_t>(p.batch) * p.heads * sp.splits * D;
  a.o = reinterpret_cast<__nv_bfloat16*>(p.o);
  a.heads = p.heads;
  a.kv_heads = p.kv_heads;
  a.page_size = p.page_size;
  a.max_blocks_per_seq = p.max_blocks_per_seq;
  a.splits = sp.splits;
  a.chunk_len = sp.chunk_len;
  const float scale =
      p.softmax_scale > 0 ? p.softmax_scale : 1.0f / std::sqrt(static_cast<float>(D));
  a.scale_log2 = scale * 1.4426950408889634f;
  cudaError_t e;
  switch (p.heads / p.kv_heads) {
    case 1: e = launch_split<1>(a, p.batch, s); break;
    case 2: e = launch_split<2>(a, p.batch, s); break;
    case 4: e = launch_split<4>(a, p.batch, s); break;
    case 8: e = launch_split<8>(a, p.batch, s); break;
    case 16: e = launch_split<16>(a, p.batch, s); break;
    default: return cudaErrorInvalidValue;
  }
  if (e != cudaSuccess) return e;
  const dim3 cgrid(static_cast<unsigned>(p.heads), static_cast<unsigned>(p.batch));
  FK_LAUNCH(attn_decode_combine_kernel, cgrid, D, 0, s)(a);
  return FK_LAST_ERROR();
}

}  // namespace fleetsim::kernels
