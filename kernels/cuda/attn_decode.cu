// Decode attention over a paged KV cache, BF16, head dim 128, GQA, split-K
// (the "flash-decoding" split of the context, Dao et al. 2023,
// https://crfm.stanford.edu/2023/10/12/flashdecoding.html; paging as in vLLM's
// PagedAttention, Kwon et al. 2023, arXiv:2309.06180).
//
// Kernel 1, one block per (split, KV head, sequence), 128 threads: streams its chunk of
// the context in tiles of 64 tokens (K and V through shared memory with cp.async, two
// buffers, rows found through the block table) and computes, for all GROUP query heads that
// share the KV head, the online-softmax state of the chunk: running max m (log2 domain),
// sum l and the unnormalised accumulator o[128]. Reading each KV byte once for the whole
// group is what makes GQA decode cheap. Scores: two threads per token (64 dims each,
// combined by a shuffle); softmax statistics: warp w owns heads w, w+4, ...; P·V: thread
// owns 8 dims of one head (heads tid/16, tid/16 + 8).
// Kernel 2 (combine), one block per (head, sequence): O = Σ_s 2^(m_s - M)·o_s /
// Σ_s 2^(m_s - M)·l_s over the non-empty splits.
#include <cmath>
#include <cstdint>

#include "kernels/cuda/device_util.cuh"
#include "kernels/cuda/kernels.h"

namespace fleetsim::kernels {
namespace {

constexpr int D = 128;
constexpr int T = 64;  // tokens per tile
constexpr int THREADS = 128;
constexpr int LD = D + 8;                    // shared row stride (elements)
constexpr int KV_SMEM = 2 * 2 * T * LD * 2;  // 2 buffers × (K + V): 69632 bytes

template <int G>
constexpr int smem_bytes() {
  return KV_SMEM + G * D * 4 + G * T * 4 + 16 * 4;  // + q (float) + scores + corr
}

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

// Loads tokens [tok0, tok0 + T) of sequence b (those < end) into one K and one V buffer.
FK_DEV void load_tile(__nv_bfloat16* Kd, __nv_bfloat16* Vd, const Args& a, int b, int hk, int tok0,
                      int end) {
  const int tid = static_cast<int>(threadIdx.x);
#pragma unroll
  for (int i = 0; i < (T * D / 8) / THREADS; ++i) {
    const int c = tid + i * THREADS;
    const int r = c / (D / 8), cc = (c % (D / 8)) * 8;
    const int tok = tok0 + r;
    const bool ok = tok < end;
    std::size_t off = 0;
    if (ok) {
      const int block =
          a.block_table[static_cast<std::size_t>(b) * a.max_blocks_per_seq + tok / a.page_size];
      off =
          ((static_cast<std::size_t>(block) * a.kv_heads + hk) * a.page_size + tok % a.page_size) *
              D +
          cc;
    }
    dev::cp_async16(Kd + r * LD + cc, a.k_cache + off, ok);
    dev::cp_async16(Vd + r * LD + cc, a.v_cache + off, ok);
  }
}

template <int G>
FK_GLOBAL void FK_LAUNCH_BOUNDS(THREADS) attn_decode_split_kernel(Args a) {
  constexpr int GW = (G + 3) / 4;  // heads per warp in the softmax step
  constexpr int GP = (G + 7) / 8;  // heads per thread in the P·V step
  FK_SMEM(unsigned char, smem_raw);
  auto* Ks = reinterpret_cast<__nv_bfloat16*>(smem_raw);     // [2][T][LD]
  __nv_bfloat16* Vs = Ks + 2 * T * LD;                       // [2][T][LD]
  auto* q_s = reinterpret_cast<float*>(smem_raw + KV_SMEM);  // [G][D], pre-scaled
  float* s_s = q_s + G * D;                                  // [G][T] scores, then p
  float* corr_s = s_s + G * T;                               // [G]

  const int split = static_cast<int>(blockIdx.x);
  const int hk = static_cast<int>(blockIdx.y);
  const int b = static_cast<int>(blockIdx.z);
  const int tid = static_cast<int>(threadIdx.x);
  const int warp = tid / 32, lane = tid % 32;
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

  load_tile(Ks, Vs, a, b, hk, start, end);
  dev::cp_async_commit();
  const __nv_bfloat16* qg =
      a.q + (static_cast<std::size_t>(b) * a.heads + static_cast<std::size_t>(hk) * G) * D;
  for (int i = tid; i < G * D; i += THREADS) q_s[i] = __bfloat162float(qg[i]) * a.scale_log2;

  float m_run[GW], l_run[GW];
#pragma unroll
  for (int i = 0; i < GW; ++i) {
    m_run[i] = -INFINITY;
    l_run[i] = 0.0f;
  }
  float o[GP][8];
#pragma unroll
  for (int i = 0; i < GP; ++i)
#pragma unroll
    for (int e = 0; e < 8; ++e) o[i][e] = 0.0f;
  const int dd0 = (tid & 15) * 8;  // P·V: this thread's 8 dims

  const int n_tiles = (end - start + T - 1) / T;
  for (int t = 0; t < n_tiles; ++t) {
    if (t + 1 < n_tiles) {
      const int buf = (t + 1) & 1;
      load_tile(Ks + buf * T * LD, Vs + buf * T * LD, a, b, hk, start + (t + 1) * T, end);
      dev::cp_async_commit();
      dev::cp_async_wait<1>();
    } else {
      dev::cp_async_wait<0>();
    }
    __syncthreads();  // tile t (and q_s) visible to all
    const __nv_bfloat16* Kb = Ks + (t & 1) * T * LD;
    const __nv_bfloat16* Vb = Vs + (t & 1) * T * LD;
    const int tok0 = start + t * T;

    // Scores: token tl = tid / 2, half = tid % 2 takes the 16-byte chunks half, half+2, ...
    {
      const int tl = tid >> 1, half = tid & 1;
      float acc[G];
#pragma unroll
      for (int gh = 0; gh < G; ++gh) acc[gh] = 0.0f;
      const __nv_bfloat16* krow = Kb + tl * LD;
      for (int c = half; c < D / 8; c += 2) {
        float kf[8];
        dev::unpack8(*reinterpret_cast<const uint4*>(krow + c * 8), kf);
#pragma unroll
        for (int gh = 0; gh < G; ++gh) {
          const float* qq = q_s + gh * D + c * 8;
#pragma unroll
          for (int e = 0; e < 8; ++e) acc[gh] += qq[e] * kf[e];
        }
      }
      const bool valid = tok0 + tl < end;
#pragma unroll
      for (int gh = 0; gh < G; ++gh) {
        acc[gh] += __shfl_xor_sync(0xFFFFFFFFu, acc[gh], 1);
        if (half == 0) s_s[gh * T + tl] = valid ? acc[gh] : -INFINITY;
      }
    }
    __syncthreads();

    // Softmax statistics: warp w owns heads w, w + 4, ...; lanes hold tokens lane, lane + 32.
#pragma unroll
    for (int i = 0; i < GW; ++i) {
      const int gh = warp + 4 * i;
      if (gh < G) {
        const float v0 = s_s[gh * T + lane], v1 = s_s[gh * T + lane + 32];
        const float m_new = fmaxf(m_run[i], dev::warp_max(fmaxf(v0, v1)));
        const float base = m_new == -INFINITY ? 0.0f : m_new;
        const float corr = exp2f(m_run[i] - base);
        const float p0 = exp2f(v0 - base), p1 = exp2f(v1 - base);
        s_s[gh * T + lane] = p0;
        s_s[gh * T + lane + 32] = p1;
        l_run[i] = l_run[i] * corr + dev::warp_sum(p0 + p1);
        m_run[i] = m_new;
        if (lane == 0) corr_s[gh] = corr;
      }
    }
    __syncthreads();

    // P·V: thread owns dims dd0..dd0+7 of heads tid/16 + 8i.
#pragma unroll
    for (int i = 0; i < GP; ++i) {
      const int gh = (tid >> 4) + 8 * i;
      if (gh < G) {
        const float c = corr_s[gh];
#pragma unroll
        for (int e = 0; e < 8; ++e) o[i][e] *= c;
        const float* p = s_s + gh * T;
        for (int tl = 0; tl < T; ++tl) {
          float vf[8];
          dev::unpack8(*reinterpret_cast<const uint4*>(Vb + tl * LD + dd0), vf);
          const float pt = p[tl];
#pragma unroll
          for (int e = 0; e < 8; ++e) o[i][e] += pt * vf[e];
        }
      }
    }
    __syncthreads();  // s_s, corr_s and buffer t&1 are reused next
  }

#pragma unroll
  for (int i = 0; i < GP; ++i) {
    const int gh = (tid >> 4) + 8 * i;
    if (gh < G) {
      float* dst = a.part_o + (row0 + static_cast<std::size_t>(gh) * a.splits) * D + dd0;
      reinterpret_cast<float4*>(dst)[0] = make_float4(o[i][0], o[i][1], o[i][2], o[i][3]);
      reinterpret_cast<float4*>(dst)[1] = make_float4(o[i][4], o[i][5], o[i][6], o[i][7]);
    }
  }
#pragma unroll
  for (int i = 0; i < GW; ++i) {
    const int gh = warp + 4 * i;
    if (gh < G && lane == 0) {
      a.part_ml[(row0 + static_cast<std::size_t>(gh) * a.splits) * 2] = m_run[i];
      a.part_ml[(row0 + static_cast<std::size_t>(gh) * a.splits) * 2 + 1] = l_run[i];
    }
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
  static const cudaError_t attr = FK_SET_SMEM_ATTR(attn_decode_split_kernel<G>, smem_bytes<G>());
  if (attr != cudaSuccess) return attr;
  const dim3 grid(static_cast<unsigned>(a.splits), static_cast<unsigned>(a.kv_heads),
                  static_cast<unsigned>(batch));
  FK_LAUNCH(attn_decode_split_kernel<G>, grid, THREADS, smem_bytes<G>(), s)(a);
  return FK_LAST_ERROR();
}

struct SplitPlan {
  int splits = 1;
  int chunk_len = T;
};

SplitPlan plan_splits(const DecodeArgs& p) {
  SplitPlan sp;
  const int max_len = p.max_seq_len > 0 ? p.max_seq_len : 1;
  int want = p.num_splits;
  if (want <= 0) {
    // Aim for two blocks per SM, with chunks of at least 256 tokens.
    const long base = static_cast<long>(p.batch) * p.kv_heads;
    const long target = 2L * (p.sm_count > 0 ? p.sm_count : 132);
    want = static_cast<int>((target + base - 1) / base);
    const int cap = (max_len + 255) / 256;
    want = want < 1 ? 1 : (want > cap ? cap : want);
  }
  const int per = (max_len + want - 1) / want;
  sp.chunk_len = ((per + T - 1) / T) * T;  // whole tiles
  sp.splits = (max_len + sp.chunk_len - 1) / sp.chunk_len;
  return sp;
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
