#include "kernels/common/shapes.h"

#include <map>
#include <stdexcept>
#include <utility>

namespace fleetsim::kernels {

std::vector<GemmShape> model_gemm_shapes(const hw::ModelSpec& m) {
  std::vector<GemmShape> v;
  auto add = [&](const char* proj, int n, int k) { v.push_back({m.id, proj, n, k}); };
  if (m.mla) {
    const auto& a = *m.mla;
    const int qk_head = a.qk_nope_head_dim + a.qk_rope_head_dim;
    if (a.q_lora_rank > 0) {
      add("q_a", a.q_lora_rank, m.hidden);
      add("q_b", m.heads * qk_head, a.q_lora_rank);
    } else {
      add("q", m.heads * qk_head, m.hidden);
    }
    add("kv_a", a.kv_lora_rank + a.qk_rope_head_dim, m.hidden);
    add("kv_b", m.heads * (a.qk_nope_head_dim + a.v_head_dim), a.kv_lora_rank);
    add("o", m.hidden, m.heads * a.v_head_dim);
  } else {
    add("qkv", (m.heads + 2 * m.kv_heads) * m.head_dim, m.hidden);
    add("o", m.hidden, m.heads * m.head_dim);
  }
  const int gate = m.gated_mlp ? 2 : 1;
  if (m.ffn > 0) {
    add("gate_up", gate * m.ffn, m.hidden);
    add("down", m.hidden, m.ffn);
  }
  if (m.moe) {
    add("expert_gate_up", 2 * m.moe->expert_ffn, m.hidden);
    add("expert_down", m.hidden, m.moe->expert_ffn);
  }
  return v;
}

std::vector<GemmShape> unique_gemm_shapes(const std::vector<GemmShape>& shapes) {
  std::vector<GemmShape> out;
  std::map<std::pair<int, int>, std::size_t> seen;
  for (const auto& s : shapes) {
    auto it = seen.find({s.n, s.k});
    if (it == seen.end()) {
      seen[{s.n, s.k}] = out.size();
      out.push_back(s);
    } else {
      out[it->second].proj += " (= " + s.model + " " + s.proj + ")";
    }
  }
  return out;
}

AttnShape model_attention(const hw::ModelSpec& m) {
  return {m.id, m.heads, m.kv_heads, m.head_dim};
}

MoeShape model_moe(const hw::ModelSpec& m) {
  if (!m.moe) throw std::invalid_argument(m.id + " is not a mixture-of-experts model");
  return {m.id, m.moe->experts, m.moe->top_k, m.hidden, m.moe->expert_ffn};
}

std::vector<int> gemm_token_counts() { return {1, 4, 16, 64, 256, 1024, 4096, 16384}; }

}  // namespace fleetsim::kernels
