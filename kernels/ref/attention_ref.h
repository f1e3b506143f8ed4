// CPU reference for the attention kernels (cuda/attn_prefill.cu, cuda/attn_decode.cu).
//
// Layouts (token-major, as a fused QKV projection produces them):
//   prefill  Q [batch][q_len][heads][d], K and V [batch][kv_len][kv_heads][d],
//            O [batch][q_len][heads][d]
//   decode   q [batch][heads][d], O [batch][heads][d], and a paged KV cache
//            k_cache, v_cache [num_blocks][kv_heads][page_size][d] with a block table
//            [batch][max_blocks_per_seq]: token t of sequence b is at block
//            block_table[b][t / page_size], slot t % page_size.
// GQA: query head h reads KV head h / (heads / kv_heads).
// Causal masking is bottom-right aligned (as FlashAttention >= 2.1): query row i of q_len
// may attend keys j <= i + (kv_len - q_len); with q_len = kv_len, keys j <= i.
#pragma once

#include <functional>
#include <vector>

namespace fleetsim::kernels::ref {

struct AttnDims {
  int batch = 1, q_len = 1, kv_len = 1, heads = 1, kv_heads = 1, head_dim = 128;
  bool causal = true;
  double scale = 0;  ///< softmax scale; 0 means 1/sqrt(head_dim)
  double softmax_scale() const;
};

/// How many keys query row i may attend: kv_len, or i + (kv_len - q_len) + 1 when causal.
int allowed_keys(const AttnDims& s, int i);

using RowFn = std::function<const float*(int)>;

/// One query row: out[d] = Σ_j p_j·v_j, p = softmax(scale·q·k_j) over keys j < n_keys, in
/// double. When `probs` is given it receives p.
void attention_row(const float* q, int d, int n_keys, const RowFn& key, const RowFn& value,
                   double scale, double* out, std::vector<double>* probs = nullptr);

/// The online-softmax formulation the GPU kernels use, in float: keys in tiles of `tile`,
/// a running max and sum per row, the accumulator rescaled by exp2(m_old - m_new) per tile
/// (scores in the log2 domain), masked entries -inf and the "-inf - -inf" case guarded.
void attention_row_online(const float* q, int d, int n_keys, const RowFn& key, const RowFn& value,
                          float scale, int tile, float* out);

/// Split-K decode: the keys cut into chunks of `chunk`, each reduced with the online
/// softmax to (m, l, unnormalised o), then combined by log-sum-exp as in attn_decode.cu.
void attention_row_splitk(const float* q, int d, int n_keys, const RowFn& key, const RowFn& value,
                          float scale, int chunk, int tile, float* out);

/// Full prefill, contiguous layout above.
void prefill(const float* Q, const float* K, const float* V, double* O, const AttnDims& s);

/// One output row of prefill: (b, i, h) -> out[d].
void prefill_row(const float* Q, const float* K, const float* V, const AttnDims& s, int b, int i,
                 int h, double* out);

struct PagedKv {
  const float* k_cache = nullptr;  ///< [num_blocks][kv_heads][page_size][d]
  const float* v_cache = nullptr;
  const int* block_table = nullptr;  ///< [batch][max_blocks_per_seq]
  int max_blocks_per_seq = 0;
  int page_size = 16;
  int kv_heads = 1;
  int head_dim = 128;
  /// Pointer to the key (or value) row of token t of sequence b, KV head hk.
  const float* k_row(int b, int hk, int t) const;
  const float* v_row(int b, int hk, int t) const;
};

/// Decode: q [batch][heads][d], seq_lens [batch], out [batch][heads][d].
void decode_paged(const float* q, const PagedKv& kv, const int* seq_lens, int batch, int heads,
                  double scale, double* out);

}  // namespace fleetsim::kernels::ref
