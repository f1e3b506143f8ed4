// Tests for the full performance model: MoE, MLA, pipeline, network seam, offload, precision
// rules, calibration tables and the memory fit of MoE models. Expected numbers are worked out
// in the comments from the formulas in hw_models/perf_model.h, network.h and calibration.h.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "hw_models/calibration.h"
#include "hw_models/catalog.h"
#include "hw_models/error.h"
#include "hw_models/network.h"
#include "hw_models/perf_model.h"
#include "tests/hw_models/hw_test_util.h"

namespace fleetsim::hw {
namespace {

namespace fs = std::filesystem;

using test_util::catalog;

using test_util::expect_rel;

// Test efficiencies: compute 0.5, memory 0.8, no overhead.
Efficiency full_test_eff(const GpuSpec& g) {
  Efficiency e = catalog_efficiency(g);
  e.compute = 0.5;
  e.memory = 0.8;
  return e;
}

TEST(MoeModel, MixtralExpertsByHand) {
  // Mixtral-8x7B on one H100, 4 decode tokens, no context, no LM head: only the MoE part.
  // E = 8, k = 2, T = 4: experts hit A = 8·(1 − (1 − 2/8)^4) = 8·(1 − 0.31640625) = 5.46875.
  // Routed experts (TP mode, G = 1): FLOPs 2·(4·2)·3·4096·14336 = 2.82e9 (5.7 µs at
  // 494.7 TFLOP/s) vs bytes 5.46875·176,160,768·2 + 8·(2·4096 + 3·14336)·2
  //   = 1,926,758,400 + 819,200 = 1,927,577,600 (0.719 ms at 2.68 TB/s): memory-bound.
  // Router: 4 × 4096 × 8: bytes 4096·8·2 + 4·(4096 + 8)·2 = 65,536 + 32,832 = 98,368:
  // 37 ns at 2.68 TB/s, so it takes the shortest kernel, 2 µs. So do the four stages around
  // the grouped GEMM: top-k 4·(8·4 + 2·8) = 192 B, sort 8·8 = 64 B, activation
  // 8·3·14336·2 = 688,128 B (0.26 µs), combine (8 + 4)·4096·2 = 98,304 B: 4 × 2 µs.
  // 32 layers: 32·(1,927,577,600 / 2.68e12 + 2 µs + 4 · 2 µs).
  const auto& m = catalog().model("mixtral-8x7b");
  const auto& g = catalog().gpu("h100-sxm");
  BatchShape b;
  b.decode_seqs = 4;
  const StepBreakdown s = estimate_step(m, {}, g, {}, full_test_eff(g), b);
  expect_rel(s.moe_s, 32 * (1927577600.0 / (3.35e12 * 0.8) + 2e-6 + 4 * 2e-6));
}

TEST(MoeModel, RoutingStagesAroundTheGroupedGemmAreKernelsOfTheirOwn) {
  // Mixtral-8x7B on one H100 (TP path, G = 1), a 4096-token prefill: 8192 token copies.
  //   top-k:      4096·(8·4 + 2·8) = 196,608 B → 73 ns at 2.68 TB/s → the 2 µs floor
  //   sort:       8192·8 = 65,536 B → the 2 µs floor
  //   activation: 8192·3·14336·2 = 704,643,072 B → 262.9 µs at 2.68 TB/s
  //   combine:    (8192 + 4096)·4096·2 = 100,663,296 B → 37.56 µs
  // 32 MoE layers each. With expert parallelism over 8 attention-DP ranks the weighted sum
  // happens in the EP combine all-to-all: no combine operator; the busiest GPU's activation
  // covers its 8192/8 = 1024 copies (1,024·3·14336·2 = 88,080,384 B, balanced routing).
  // Under attention TP 8 every GPU holds all 4096 tokens: it routes all of them (router
  // GEMM 2·4096·4096·8 = 268,435,456 FLOPs, 8x the DP rank's 512 tokens) and the
  // all-reduce after the layer sums the copies (no combine operator either).
  const auto& m = catalog().model("mixtral-8x7b");
  const auto& g = catalog().gpu("h100-sxm");
  BatchShape b;
  b.prefill_tokens = 4096;
  b.prefill_attn_pairs = 4096.0 * 4097 / 2;
  const double bw = 3.35e12 * 0.8;
  auto find = [](const std::vector<OpCost>& ops, const std::string& name) {
    for (const auto& op : ops)
      if (op.name == name) return op;
    return OpCost{};
  };
  const auto ops = explain_step(make_deployment(m, {}, g, {}, full_test_eff(g)), b);
  expect_rel(find(ops, "router top-k").time_s, 32 * 2e-6);
  expect_rel(find(ops, "token copies sorted by expert").time_s, 32 * 2e-6);
  expect_rel(find(ops, "expert activation (SiLU x up)").bytes, 704643072.0);
  expect_rel(find(ops, "expert activation (SiLU x up)").time_s, 32 * 704643072.0 / bw);
  expect_rel(find(ops, "expert outputs combined (weighted sum)").time_s, 32 * 100663296.0 / bw);

  Parallelism ep{1};  // attention DP 8: the combine all-to-all sums each token's copies
  ep.dp_attention = 8;
  ep.expert_parallel = true;
  ModelSpec balanced = m;
  balanced.moe->hot_expert = 1.0;
  const auto ep_ops = explain_step(make_deployment(balanced, ep, g, {}, full_test_eff(g)), b);
  EXPECT_EQ(find(ep_ops, "expert outputs combined (weighted sum)").count, 0);
  expect_rel(find(ep_ops, "expert activation (SiLU x up)").bytes, 88080384.0);

  Parallelism tp_ep{8};
  tp_ep.expert_parallel = true;
  const auto tp_ops = explain_step(make_deployment(balanced, tp_ep, g, {}, full_test_eff(g)), b);
  EXPECT_EQ(find(tp_ops, "expert outputs combined (weighted sum)").count, 0);
  expect_rel(find(tp_ops, "router").flops, 268435456.0);
  expect_rel(find(ep_ops, "router").flops, 268435456.0 / 8);
  expect_rel(find(tp_ops, "expert activation (SiLU x up)").bytes, 88080384.0);
}

TEST(MoeModel, AttentionTensorParallelSplitsTheSharedExpertByTp) {
  // Llama 4 Maverick (hidden 5120, one shared expert of 8192), EP over 8 GPUs, 512 decode
  // rows, BF16. Attention DP 8: each GPU runs the whole shared expert on its 64 rows:
  // up+gate weights 5120·16384·2 = 167,772,160 B + 64·(5120 + 16384)·2 = 2,752,512 B.
  // Attention TP 8: each GPU holds all 512 rows and 1/8 of the shared expert (as a dense
  // MLP under TP): 20,971,520 + 512·(5120 + 2048)·2 = 7,340,032 B. FLOPs are the same:
  // 2·64·5120·16384 = 2·512·5120·2048 = 10,737,418,240.
  const auto& m = catalog().model("llama-4-maverick");
  const auto& g = catalog().gpu("h100-sxm");
  BatchShape b;
  b.decode_seqs = 512;
  b.logits_tokens = 512;
  b.decode_ctx_tokens = 512 * 100;
  Parallelism dp{1};
  dp.dp_attention = 8;
  dp.expert_parallel = true;
  Parallelism tp{8};
  tp.expert_parallel = true;
  auto shared = [&](const Parallelism& p) {
    for (const auto& op : explain_step(make_deployment(m, p, g, {}, full_test_eff(g)), b))
      if (op.name == "shared expert up+gate") return op;
    ADD_FAILURE() << "no shared expert";
    return OpCost{};
  };
  expect_rel(shared(dp).bytes, 167772160.0 + 2752512.0);
  expect_rel(shared(tp).bytes, 20971520.0 + 7340032.0);
  expect_rel(shared(dp).flops, 10737418240.0);
  expect_rel(shared(tp).flops, 10737418240.0);
}

TEST(MoeModel, ExpertParallelSplitsExpertsAndAddsAllToAll) {
  // Mixtral on 8 GPUs, EP: each GPU holds 1 expert; 512 tokens choose 2 of 8, so every expert
  // is hit (A = 8·(1 − 0.75^512) = 8 to 1e-60). Busiest GPU: imbalance 1.25 · 512·2/8 = 160
  // token copies: FLOPs 2·160·3·4096·14336 = 56.4e9; bytes 1·176,160,768·2 + 160·51,200·2
  // = 368,705,536. Dispatch + combine: per GPU (512/8)·2·4096·2 = 1,048,576 bytes each.
  const auto& m = catalog().model("mixtral-8x7b");
  const auto& g = catalog().gpu("h100-sxm");
  Efficiency e = full_test_eff(g);
  e.moe_imbalance = 1.25;
  Parallelism ep{1};  // attention DP 8: each GPU holds its own 512/8 tokens
  ep.dp_attention = 8;
  ep.expert_parallel = true;
  BatchShape b;
  b.decode_seqs = 512;
  auto d = make_deployment(m, ep, g, {}, e);
  const auto ops = explain_step(d, b);
  double routed = -1, a2a = -1;
  for (const auto& op : ops) {
    if (op.name == "routed experts (grouped GEMM, EP)") {
      expect_rel(op.flops, 2.0 * 160 * 3 * 4096 * 14336);
      expect_rel(op.bytes, 176160768.0 * 2 + 160.0 * 51200 * 2);
      routed = op.time_s;
    }
    if (op.name == "EP dispatch + combine all-to-all") {
      EXPECT_EQ(op.count, 64);  // 2 per MoE layer
      // α-β all-to-all on NVLink 4 (α 1.83 µs, 450 GB/s): 7·α + 7/8·1,048,576 / 450e9.
      expect_rel(op.time_s, 64 * (7 * 1.83e-6 + 7.0 / 8 * 1048576 / 450e9));
      a2a = op.time_s;
    }
  }
  EXPECT_GT(routed, 0);
  EXPECT_GT(a2a, 0);
}

TEST(MlaModel, DeepSeekDecodeSlopeIsComputeBound) {
  // DeepSeek-V3 on one H200, per context token per layer: FLOPs 128·(4·512 + 2·64) = 278,528
  // (0.563 ns at 494.7 TFLOP/s) vs the FP8... here BF16 latent 576·2 = 1,152 bytes (0.30 ns at
  // 3.84 TB/s): MLA decode is compute-bound. 61 layers: 61·278,528 / 494.7e12.
  const auto& m = catalog().model("deepseek-v3");
  const auto& g = catalog().gpu("h200-sxm");
  const DecodeAffine a = decode_affine(m, {}, g, {}, full_test_eff(g), 1);
  expect_rel(a.per_ctx_token_s, 61 * 278528.0 / (989.4e12 * 0.5));
}

TEST(PerfModel, DecodeStaysAffineForMoeMlaAndSlidingWindowModels) {
  for (const char* id : {"mixtral-8x7b", "deepseek-v3", "gpt-oss-20b", "qwen3-235b-a22b"}) {
    const auto& m = catalog().model(id);
    const auto& g = catalog().gpu("h200-sxm");
    for (int tp : {1, 8}) {
      for (int pp : {1, 2}) {
        Parallelism par{tp, pp};
        Efficiency e = full_test_eff(g);
        e.iteration_overhead_s = 20e-6;
        const DecodeAffine a1 = decode_affine(make_deployment(m, par, g, {}, e), 1);
        for (int64_t n : {1, 9, 128}) {
          const auto d = make_deployment(m, par, g, {}, e);
          const DecodeAffine a = decode_affine(d, n);
          EXPECT_EQ(a.per_ctx_token_s, a1.per_ctx_token_s) << id;
          for (int64_t ctx : {int64_t{0}, 1000 * n, int64_t{3000001}}) {
            BatchShape b;
            b.decode_seqs = n;
            b.logits_tokens = n;
            b.decode_ctx_tokens = ctx;
            expect_rel(estimate_step(d, b).total_s(),
                       a.fixed_s + a.per_ctx_token_s * static_cast<double>(ctx), 1e-9);
          }
        }
      }
    }
  }
}

TEST(StepCache, MemoisedStepsAreBitIdenticalToFreshOnes) {
  // The memo replays the token-count terms (embedding, projections, MLPs, MoE) in the order a
  // fresh estimate adds them, so every bucket must be equal to the last bit (EXPECT_EQ on
  // doubles, not a tolerance) — for dense, MoE with EP, MLA and sliding-window models, and
  // for the second and later shapes with a token count met before (the cached path) as well
  // as the first (the filling path). Shapes differ in their prefill/decode split and context
  // at the same token count, which is exactly what the memo must not depend on.
  for (const char* id : {"llama-2-7b", "mixtral-8x7b", "deepseek-v3", "gpt-oss-20b"}) {
    const auto& m = catalog().model(id);
    const auto& g = catalog().gpu("h200-sxm");
    Parallelism par{8};
    par.expert_parallel = m.moe.has_value();
    Efficiency e = full_test_eff(g);
    e.iteration_overhead_s = 20e-6;
    e.moe_half_tokens = 16;
    const auto d = make_deployment(m, par, g, {}, e);
    StepCache cache;
    int cached = 0;
    for (int64_t tokens : {1, 7, 512, 4096, 7, 512}) {
      for (int64_t prefill : {int64_t{0}, tokens / 2, tokens}) {
        BatchShape b;
        b.prefill_tokens = prefill;
        b.decode_seqs = tokens - prefill;
        b.decode_ctx_tokens = b.decode_seqs * 900;
        b.prefill_attn_pairs = static_cast<double>(prefill * (prefill + 1) / 2);
        b.prefill_kv_tokens = prefill;
        b.logits_tokens = b.decode_seqs + (prefill > 0 ? 1 : 0);
        const bool seen = cache.part(tokens)->set;
        const StepBreakdown fresh = estimate_step(d, b);
        const StepBreakdown memo = estimate_step(d, b, &cache);
        EXPECT_EQ(memo.gemm_s, fresh.gemm_s) << id << " tokens " << tokens;
        EXPECT_EQ(memo.moe_s, fresh.moe_s) << id << " tokens " << tokens;
        EXPECT_EQ(memo.attention_s, fresh.attention_s) << id << " tokens " << tokens;
        EXPECT_EQ(memo.total_s(), fresh.total_s()) << id << " tokens " << tokens;
        cached += seen ? 1 : 0;
      }
    }
    // 6 token counts × 3 splits = 18 shapes over 4 distinct counts: 14 found a memo.
    EXPECT_EQ(cached, 14) << id;
  }
}

TEST(PerfModel, PipelineSpreadsKvReadsAndAddsHandOffs) {
  // Llama-3.1-70B on H100, pp 2: each stage holds half the layers' KV, so the decode slope
  // halves; two micro-batches of 4 tokens each hand 4·8192·2 = 65,536 bytes to the next
  // stage over NVLink: 2·(1.83 µs + 65,536 / 450e9).
  const auto& m = catalog().model("llama-3.1-70b");
  const auto& g = catalog().gpu("h100-sxm");
  const Efficiency e = full_test_eff(g);
  const auto d1 = make_deployment(m, {1, 1}, g, {}, e);
  const auto d2 = make_deployment(m, {1, 2}, g, {}, e);
  expect_rel(decode_affine(d2, 8).per_ctx_token_s, decode_affine(d1, 8).per_ctx_token_s / 2);
  BatchShape b;
  b.decode_seqs = 8;
  b.logits_tokens = 8;
  expect_rel(estimate_step(d2, b).communication_s, 2 * (1.83e-6 + 65536.0 / 450e9));
  EXPECT_EQ(estimate_step(d1, b).communication_s, 0.0);
}

TEST(Network, HierarchicalAllReduceAndAllToAllByHand) {
  const AnalyticNetwork net({2e-6, 450e9}, {1e-6, 50e9});
  // One domain of 8: ring 2·7·α + 2·7/8·bytes/bw.
  expect_rel(net.allreduce_s(1e8, {8, 8}), 14 * 2e-6 + 1.75 * 1e8 / 450e9);
  // 16 GPUs in 2 domains of 8: reduce-scatter + all-gather inside 2·(7·2 µs + 7/8·1e8/450e9)
  //   = 416.89 µs; then a ring over 2 domains of 1e8/8 bytes: 2·1 µs + 1.25e7/50e9 = 252 µs.
  expect_rel(net.allreduce_s(1e8, {16, 8}),
             2 * (7 * 2e-6 + 7.0 / 8 * 1e8 / 450e9) + 2 * 1e-6 + 1.25e7 / 50e9);
  // All-to-all of 8 MB per GPU over 16 (8 per domain): 7 messages inside, 7/16 of the bytes,
  // 7·2 µs + 3.5e6/450e9 = 21.8 µs; 8 messages outside, 8/16 of them, 8·1 µs + 4e6/50e9 =
  // 88 µs; the slower bounds.
  expect_rel(net.alltoall_s(8e6, {16, 8}), 8 * 1e-6 + 4e6 / 50e9);
  // One domain: 15 messages, 15/16 of the bytes over NVLink: 15·2 µs + 7.5e6/450e9.
  expect_rel(net.alltoall_s(8e6, {16, 16}), 15 * 2e-6 + 7.5e6 / 450e9);
  // Reduce-scatter / all-gather of 1e8 bytes in one domain of 8: 7·2 µs + 7/8·1e8/450e9
  // = 14 µs + 194.44 µs; a ring all-reduce is exactly the two.
  expect_rel(net.reduce_scatter_s(1e8, {8, 8}), 7 * 2e-6 + 7.0 / 8 * 1e8 / 450e9);
  expect_rel(net.allgather_s(1e8, {8, 8}), 7 * 2e-6 + 7.0 / 8 * 1e8 / 450e9);
  expect_rel(net.reduce_scatter_s(1e8, {16, 8}) + net.allgather_s(1e8, {16, 8}),
             net.allreduce_s(1e8, {16, 8}));
  // 16 in 2 domains: inside 7·2 µs + 7/8·1e8/450e9; across 1·1 µs + 1/2·1.25e7/50e9 = 126 µs.
  expect_rel(net.reduce_scatter_s(1e8, {16, 8}),
             7 * 2e-6 + 7.0 / 8 * 1e8 / 450e9 + 1e-6 + 0.5 * 1.25e7 / 50e9);
  // Tree all-reduce of 1 MB over 8 in one domain: 2·3·(2 µs + 1e6/450e9) = 25.33 µs; the ring
  // takes 14·2 µs + 1.75·1e6/450e9 = 31.9 µs, so the tree wins at this size...
  expect_rel(net.tree_allreduce_s(1e6, {8, 8}), 6 * (2e-6 + 1e6 / 450e9));
  EXPECT_LT(net.tree_allreduce_s(1e6, {8, 8}), net.allreduce_s(1e6, {8, 8}));
  // ...and loses at 1e8 (6·(2 µs + 222 µs) = 1.35 ms vs 417 µs).
  EXPECT_GT(net.tree_allreduce_s(1e8, {8, 8}), net.allreduce_s(1e8, {8, 8}));
  // 32 GPUs in 4 domains of 8: 2·(3·(2 µs + 1e6/450e9) + 2·(1 µs + 1e6/50e9)).
  expect_rel(net.tree_allreduce_s(1e6, {32, 8}),
             2 * (3 * (2e-6 + 1e6 / 450e9) + 2 * (1e-6 + 1e6 / 50e9)));
  // Oversubscription 2 halves the all-to-all's scale-out rate only: 8·1 µs + 2·4e6/50e9.
  const AnalyticNetwork over({2e-6, 450e9}, {1e-6, 50e9}, 2.0);
  expect_rel(over.alltoall_s(8e6, {16, 8}), 8 * 1e-6 + 2 * 4e6 / 50e9);
  expect_rel(over.allreduce_s(1e8, {16, 8}), net.allreduce_s(1e8, {16, 8}));
  expect_rel(net.p2p_s(1e6, true), 1e-6 + 1e6 / 50e9);
  EXPECT_EQ(net.allreduce_s(1e8, {1, 1}), 0.0);
  // A group that leaves the domain with no scale-out level is a precondition error.
  EXPECT_THROW(AnalyticNetwork({2e-6, 450e9}, {}).allreduce_s(1e6, {16, 8}), std::invalid_argument);
}

TEST(Offload, StreamedLayersPayTheHostLink) {
  // Llama-3.1-8B, 8 of 32 layers in host memory, streamed over PCIe 4 (32 GB/s, 3.5 µs) each
  // iteration: per layer (2·4096² + 2·4096·1024 + 3·4096·14336)·2 = 436,207,616 bytes;
  // 8 layers 3,489,660,928 bytes → 3.5 µs + 109.05 ms.
  const auto& m = catalog().model("llama-3.1-8b");
  const auto& g = catalog().gpu("rtx-4090");
  auto d = make_deployment(m, {}, g, {}, full_test_eff(g));
  d.offload.layers_on_host = 8;
  d.offload.host_link = {3.5e-6, 32e9};
  BatchShape b;
  b.decode_seqs = 1;
  b.logits_tokens = 1;
  b.decode_ctx_tokens = 100;
  expect_rel(estimate_step(d, b).offload_s, 3.5e-6 + 3489660928.0 / 32e9);
  // Host compute instead: those 8 layers run at the host's rates (here 1 TFLOP/s, 100 GB/s):
  // their weights (3.49 GB) stream from host DRAM at 100 GB/s ≈ 34.9 ms and more.
  d.offload.mode = Offload::Mode::kHostCompute;
  d.offload.host_flops_per_s = 1e12;
  d.offload.host_memory_bw_bytes_per_s = 100e9;
  const double host = estimate_step(d, b).offload_s;
  EXPECT_GT(host, 3489660928.0 / 100e9);
  EXPECT_LT(host, 3489660928.0 / 100e9 * 1.01);
}

TEST(Precision, MathUnitRules) {
  EXPECT_EQ(Precision::of(DType::kFp8, DType::kFp8, DType::kBf16).math, DType::kFp8);   // W8A8
  EXPECT_EQ(Precision::of(DType::kInt4, DType::kFp8, DType::kBf16).math, DType::kFp8);  // W4A8
  EXPECT_EQ(Precision::of(DType::kInt8, DType::kInt8, DType::kBf16).math,
            DType::kInt8);                                                            // W8A8 int
  EXPECT_EQ(Precision::of(DType::kFp4, DType::kFp4, DType::kFp8).math, DType::kFp4);  // W4A4
  EXPECT_EQ(Precision::of(DType::kInt4, DType::kBf16, DType::kBf16).math, DType::kBf16);  // W4A16
  EXPECT_EQ(Precision::of(DType::kQ4_0, DType::kBf16, DType::kBf16).weight_bytes, 18.0 / 32);
  EXPECT_EQ(Precision::of(DType::kBf16, DType::kBf16, DType::kFp8).kv_bytes, 1.0);
  // FP4 math on Hopper (no FP4 units) falls back to FP8: the same step as W8A8 FP8 compute.
  const auto& m = catalog().model("llama-3.1-8b");
  const auto& h100 = catalog().gpu("h100-sxm");
  BatchShape b;
  b.prefill_tokens = 8192;
  Precision p4 = Precision::of(DType::kFp4, DType::kFp4, DType::kBf16);
  Precision p8 = p4;
  p8.math = DType::kFp8;
  EXPECT_EQ(estimate_step(m, {}, h100, p4, full_test_eff(h100), b).gemm_s,
            estimate_step(m, {}, h100, p8, full_test_eff(h100), b).gemm_s);
}

TEST(Precision, TheResidualStreamIsReducedAtSixteenBits) {
  // FP8/FP4 GEMMs write BF16 outputs and the tensor-parallel all-reduce sums them at that
  // width: residual_bytes = max(act_bytes, 2).
  EXPECT_EQ(Precision::of(DType::kFp8, DType::kFp8, DType::kFp8).residual_bytes(), 2.0);
  EXPECT_EQ(Precision::of(DType::kFp4, DType::kFp4, DType::kFp8).residual_bytes(), 2.0);
  EXPECT_EQ(Precision::of(DType::kBf16, DType::kBf16, DType::kBf16).residual_bytes(), 2.0);
  // Llama-3.1-70B (hidden 8192, 80 layers), TP 4 in one scale-up domain, prefill of 1024
  // tokens: each all-reduce carries 1024 · 8192 · 2 B = 16,777,216 B, a ring of 4 costing
  // 2·3·α + 2·3/4 · bytes / bw; 80 after attention and 80 after the MLP. The FP8 step (act 1
  // B) moves exactly the BF16 step's bytes.
  const auto& m = catalog().model("llama-3.1-70b");
  const auto& g = catalog().gpu("h100-sxm");
  const Efficiency e = full_test_eff(g);
  BatchShape b;
  b.prefill_tokens = 1024;
  const double ring = 6 * e.allreduce_latency_s + 1.5 * 16777216.0 / e.link_bw_bytes_per_s;
  for (const DType dt : {DType::kBf16, DType::kFp8}) {
    const StepBreakdown s = estimate_step(m, Parallelism{4}, g, Precision::of(dt, dt, dt), e, b);
    expect_rel(s.communication_s, 2 * 80 * ring);
  }
}

TEST(MemoryFit, DeepSeekNeedsFp8OnEightH200s) {
  // DeepSeek-V3 weights: 671e9 params. On 8 × H200 (141 GB, 90 % usable = 136 GB) at BF16:
  // 1.34e12 / 8 = 168 GB per GPU: does not fit. At FP8: 84 GB per GPU: fits.
  const auto& m = catalog().model("deepseek-v3");
  const auto& g = catalog().gpu("h200-sxm");
  Parallelism p{8};
  EXPECT_THROW(fit_memory(m, p, g, {}, 0.9, 1e9, 8192, 16, 4096), InputError);
  const Precision fp8 = Precision::of(DType::kFp8, DType::kFp8, DType::kBf16);
  const MemoryFit f = fit_memory(m, p, g, fp8, 0.9, 1e9, 8192, 16, 4096);
  EXPECT_NEAR(f.weight_bytes, m.derived_params() / 8, 0.01 * m.derived_params() / 8);
  // MLA: every TP rank holds the whole latent, 61·576·2 = 70,272 bytes per token.
  EXPECT_EQ(f.kv_bytes_per_token, 61 * 576 * 2.0);
}

TEST(Lora, AdapterBytesAndStepCostByHand) {
  // Llama-3.1-8B, rank 16, adapters on q, k, v, o, gate, up, down: Σ(in + out) per layer =
  // (4096+4096) + 2·(4096+1024) + (4096+4096) + 2·(4096+14336) + (14336+4096) = 81,920;
  // 16 · 81,920 · 32 layers · 2 B = 83,886,080 bytes per adapter.
  const auto& m = catalog().model("llama-3.1-8b");
  EXPECT_EQ(lora_adapter_bytes(m, 16, 2.0), 83886080.0);
  // 64 rows using 4 adapters on an H100 (test efficiencies): FLOPs 2·64·16·81,920·32 =
  // 5.37e9 (10.9 µs at 494.7 TFLOP/s); bytes 4·83,886,080 + 64·2·16·32·7·2 = 335,544,320 +
  // 917,504 = 336,461,824 (125.5 µs at 2.68 TB/s): memory-bound.
  const auto& g = catalog().gpu("h100-sxm");
  const auto d = make_deployment(m, {}, g, {}, full_test_eff(g));
  expect_rel(lora_step_s(d, 64, 4, 16), 336461824.0 / (3.35e12 * 0.8));
}

// ---- calibration ----------------------------------------------------------------------------

class CalibrationFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "fleetsim-calib-XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& text) {
    const std::string p = (fs::path(dir_) / "t.csv").string();
    std::ofstream(p) << text;
    return p;
  }
  static std::string header(const std::string& gpu = "h100-sxm") {
    return "# fleetsim-calibration: 1\n# gpu: " + gpu +
           "\n# source: test\n# driver: none\n# cuda: none\n# date: 2026-11-29\n"
           "op,dtype,m,n,k,batch,q_len,kv_len,heads,kv_heads,head_dim,causal,time_us,citation\n";
  }
  std::string dir_;
};

// Two compute-bound BF16 GEMM rows on H100 (989.4 TFLOP/s):
//   1024³: 2.147e9 FLOPs → 2.1705 µs at peak; measured 4.3410 µs → fraction 0.5
//   8192³: 1.0995e12 FLOPs → 1111.28 µs at peak; measured 1389.10 µs → fraction 0.8
const double kF1 = 2.0 * 1024 * 1024 * 1024, kF2 = 2.0 * 8192 * 8192 * 8192;
std::string two_rows() {
  char buf[256];
  std::string s;
  std::snprintf(buf, sizeof buf, "gemm,bf16,1024,1024,1024,,,,,,,,%.6f,row one\n",
                kF1 / 989.4e12 / 0.5 * 1e6);
  s += buf;
  std::snprintf(buf, sizeof buf, "gemm,bf16,8192,8192,8192,,,,,,,,%.6f,row two\n",
                kF2 / 989.4e12 / 0.8 * 1e6);
  return s + buf;
}

TEST_F(CalibrationFile, FractionsAndLogInterpolation) {
  const CalibrationTable t = load_calibration(write(header() + two_rows()), catalog());
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_NEAR(t.rows[0].fraction, 0.5, 1e-6);
  EXPECT_NEAR(t.rows[1].fraction, 0.8, 1e-6);
  EXPECT_TRUE(t.rows[0].compute_bound);
  CalibrationSet set;
  set.add(t);
  const auto* rows = set.rows("h100-sxm", CalibOp::kGemm, "bf16", true);
  ASSERT_NE(rows, nullptr);
  // Halfway in log10(FLOPs): 0.5 + 0.5·(0.8 − 0.5) = 0.65; clamped outside the range.
  EXPECT_NEAR(CalibrationSet::fraction_at(*rows, std::sqrt(kF1 * kF2)), 0.65, 1e-6);
  EXPECT_NEAR(CalibrationSet::fraction_at(*rows, 1.0), 0.5, 1e-6);
  EXPECT_NEAR(CalibrationSet::fraction_at(*rows, 1e18), 0.8, 1e-6);
  // No memory-bound rows: a memory-bound operator keeps the catalog efficiency.
  EXPECT_EQ(set.rows("h100-sxm", CalibOp::kGemm, "bf16", false), nullptr);

  // In the model: a 4096-token prefill of Llama-3.1-8B's GEMMs is compute-bound; with the
  // table each GEMM costs its peak roofline over the interpolated fraction instead of over 0.5.
  const auto& m = catalog().model("llama-3.1-8b");
  const auto& g = catalog().gpu("h100-sxm");
  auto d = make_deployment(m, {}, g, {}, full_test_eff(g));
  BatchShape b;
  b.prefill_tokens = 4096;
  const double plain = estimate_step(d, b).gemm_s;
  d.bind_calibration(std::make_shared<const CalibrationSet>(set));
  const double calibrated = estimate_step(d, b).gemm_s;
  EXPECT_LT(calibrated, plain);  // every fraction in (0.5, 0.8] beats the test's 0.5
  EXPECT_GT(calibrated, plain * 0.5 / 0.8 * 0.99);
}

TEST_F(CalibrationFile, AComputeTwinLendsItsComputeBoundRowsOnly) {
  // H200 SXM names H100 SXM as its compute twin (same GH100, 989.4 TFLOP/s BF16). An H100
  // table with the two compute-bound rows and one memory-bound row: 1 × 8192 × 8192 moves
  // (8192 + 8192² + 8192)·2 B = 134.25 MB, 40.07 µs at 3.35 TB/s vs 0.04 µs of FLOPs at
  // peak; measured 50.09 µs → fraction 0.8.
  const double bytes = (8192.0 + 8192.0 * 8192.0 + 8192.0) * 2.0;
  char mem_row[128];
  std::snprintf(mem_row, sizeof mem_row, "gemm,bf16,1,8192,8192,,,,,,,,%.6f,memory row\n",
                bytes / 3.35e12 / 0.8 * 1e6);
  const CalibrationTable h100 = load_calibration(write(header() + two_rows() + mem_row), catalog());
  CalibrationSet set;
  set.add(h100);
  auto shared = std::make_shared<const CalibrationSet>(set);
  const auto& m = catalog().model("llama-3.1-8b");
  ASSERT_EQ(catalog().gpu("h200-sxm").compute_twin, "h100-sxm");
  auto d = make_deployment(m, {}, catalog().gpu("h200-sxm"), {},
                           full_test_eff(catalog().gpu("h200-sxm")));
  d.bind_calibration(shared);
  // [gemm][compute-bound] borrows H100's rows; [gemm][memory-bound] does not (the memory
  // differs); nothing is invented for attention.
  EXPECT_EQ(d.calib_rows[0][1], shared->rows("h100-sxm", CalibOp::kGemm, "bf16", true));
  EXPECT_EQ(d.calib_rows[0][0], nullptr);
  EXPECT_EQ(d.calib_rows[1][1], nullptr);
  EXPECT_TRUE(d.uses_table(shared->tables()[0]));

  // A table of H200's own for that slot wins over the twin's.
  const std::string own = header("h200-sxm") + two_rows();
  set.add(load_calibration(write(own), catalog()));
  shared = std::make_shared<const CalibrationSet>(set);
  d.bind_calibration(shared);
  EXPECT_EQ(d.calib_rows[0][1], shared->rows("h200-sxm", CalibOp::kGemm, "bf16", true));
  EXPECT_FALSE(d.uses_table(shared->tables()[0]));

  // A GPU without a twin borrows nothing.
  auto a100 = make_deployment(m, {}, catalog().gpu("a100-80gb-sxm"), {},
                              full_test_eff(catalog().gpu("a100-80gb-sxm")));
  a100.bind_calibration(shared);
  EXPECT_EQ(a100.calib_rows[0][1], nullptr);
}

TEST_F(CalibrationFile, AShapeFarFromTheRidgeIsCostedFromRowsFarFromIt) {
  // H100 SXM: 989.4 TFLOP/s BF16, 3.35 TB/s. Three compute-bound BF16 GEMM rows:
  //   1,048,576 × 768 × 768: 1.2370e12 FLOPs → 1250.20 µs at peak; bytes
  //     2·(2^20·768 + 768² + 2^20·768) = 3.2224e9 → 961.91 µs: ridge ratio 1250.20 / 961.91
  //     = 1.30, on the ridge; measured at fraction 0.4 (3125.51 µs)
  //   4096³: 1.3744e11 FLOPs, ridge ratio 4.62; fraction 0.7 (198.44 µs)
  //   8192³: 1.0995e12 FLOPs, ridge ratio 9.25; fraction 0.8 (1389.10 µs)
  const double kFr = 2.0 * 1048576.0 * 768 * 768, kF3 = 2.0 * 4096.0 * 4096 * 4096;
  char rows[512];
  std::snprintf(rows, sizeof rows,
                "gemm,bf16,1048576,768,768,,,,,,,,%.6f,ridge row\n"
                "gemm,bf16,4096,4096,4096,,,,,,,,%.6f,row three\n"
                "gemm,bf16,8192,8192,8192,,,,,,,,%.6f,row two\n",
                kFr / 989.4e12 / 0.4 * 1e6, kF3 / 989.4e12 / 0.7 * 1e6, kF2 / 989.4e12 / 0.8 * 1e6);
  const CalibrationTable t = load_calibration(write(header() + rows), catalog());
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_NEAR(t.rows[0].ridge_ratio, 1.2997, 1e-3);
  EXPECT_NEAR(t.rows[1].ridge_ratio, 4.6229, 1e-3);
  EXPECT_NEAR(t.rows[2].ridge_ratio, 9.2457, 1e-3);
  CalibrationSet set;
  set.add(t);
  // All three are compute-bound; only the two with ratio >= kFarFromRidge (2) are far.
  ASSERT_EQ(set.rows("h100-sxm", CalibOp::kGemm, "bf16", true)->size(), 3u);
  const auto* far = set.rows_far("h100-sxm", CalibOp::kGemm, "bf16");
  ASSERT_NE(far, nullptr);
  ASSERT_EQ(far->size(), 2u);
  EXPECT_NEAR(far->back().fraction, 0.8, 1e-6);

  // Llama-3.1-8B prefill of 8192 tokens: MLP up+gate is 2·8192·4096·28672 = 1.9241e12 FLOPs
  // per layer, bytes 2·(8192·4096 + 4096·28672 + 8192·28672) = 772.8 MB: ratio
  // (1.9241e12 / 989.4e12) / (772.8e6 / 3.35e12) = 1944.7 µs / 230.7 µs = 8.4, far. Beyond
  // every row's FLOPs, it clamps to the largest far row (0.8), not to the ridge row (0.4)
  // that has the most FLOPs: 32 layers · 1944.7 µs / 0.8 = 77.79 ms.
  const auto& m = catalog().model("llama-3.1-8b");
  const auto& g = catalog().gpu("h100-sxm");
  auto d = make_deployment(m, {}, g, {}, full_test_eff(g));
  const auto shared = std::make_shared<const CalibrationSet>(set);
  d.bind_calibration(shared);
  ASSERT_EQ(d.calib_rows[0][2], shared->rows_far("h100-sxm", CalibOp::kGemm, "bf16"));
  BatchShape b;
  b.prefill_tokens = 8192;
  bool found = false;
  for (const OpCost& op : explain_step(d, b)) {
    if (op.name != "MLP up+gate") continue;
    found = true;
    EXPECT_NEAR(op.flops, 2.0 * 8192 * 4096 * 28672, 1.0);
    EXPECT_NEAR(op.time_s, 32 * op.flops / 989.4e12 / 0.8, 1e-9);
    EXPECT_NEAR(op.time_s, 77.79e-3, 0.01e-3);
    EXPECT_EQ(op.bound, "compute (calibrated, rows far from the ridge)");  // --explain says so
  }
  EXPECT_TRUE(found);
}

TEST_F(CalibrationFile, Fp4RowsCostW4A4GemmsShapeByShape) {
  // B200: 9,000 TFLOP/s FP4, 8 TB/s. fp4 rows count every operand at half a byte.
  //   compute row 8192³: 2·8192³ = 1.0995e12 FLOPs → 122.17 µs at peak; bytes 3·8192²·0.5 =
  //     100.66 MB → 12.58 µs: ratio 9.7 (far from the ridge); measured at fraction 0.5.
  //   memory row 1 × 8192 × 8192: bytes (8192 + 8192² + 8192)·0.5 = 33.562 MB → 4.195 µs at
  //     8 TB/s (FLOPs 0.015 µs); measured at fraction 0.25 (16.78 µs).
  const auto& g = catalog().gpu("b200");
  const double flops = 2.0 * 8192 * 8192 * 8192, bytes = (8192.0 + 8192.0 * 8192 + 8192) * 0.5;
  char rows[256];
  std::snprintf(rows, sizeof rows,
                "gemm,fp4,8192,8192,8192,,,,,,,,%.6f,fp4 compute row\n"
                "gemm,fp4,1,8192,8192,,,,,,,,%.6f,fp4 memory row\n",
                flops / 9000e12 / 0.5 * 1e6, bytes / 8e12 / 0.25 * 1e6);
  const CalibrationTable t = load_calibration(write(header("b200") + rows), catalog());
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_TRUE(t.rows[0].compute_bound);
  EXPECT_NEAR(t.rows[0].fraction, 0.5, 1e-6);
  EXPECT_NEAR(t.rows[0].ridge_ratio, (flops / 9000e12) / (3 * 8192.0 * 8192 * 0.5 / 8e12), 1e-6);
  EXPECT_FALSE(t.rows[1].compute_bound);
  EXPECT_NEAR(t.rows[1].fraction, 0.25, 1e-6);
  CalibrationSet set;
  set.add(t);
  const auto shared = std::make_shared<const CalibrationSet>(set);

  // W4A4 Llama-3.1-70B on one B200: the GEMM slots take the fp4 rows.
  const auto& m = catalog().model("llama-3.1-70b");
  auto d = make_deployment(m, {}, g, Precision::of(DType::kFp4, DType::kFp4, DType::kFp8),
                           full_test_eff(g));
  d.bind_calibration(shared);
  EXPECT_EQ(d.calib_rows[0][1], shared->rows("b200", CalibOp::kGemm, "fp4", true));
  EXPECT_EQ(d.calib_rows[0][0], shared->rows("b200", CalibOp::kGemm, "fp4", false));
  EXPECT_TRUE(d.uses_table(shared->tables()[0]));
  // Prefill of 8192 tokens: MLP up+gate 2·8192·8192·57344 = 7.6965e12 FLOPs a layer, beyond
  // the compute row: clamped to its 0.5 (not the catalog's 3797.9/9000 = 0.422), 80 layers.
  BatchShape p;
  p.prefill_tokens = 8192;
  const OpCost up = [&] {
    for (const OpCost& op : explain_step(d, p))
      if (op.name == "MLP up+gate") return op;
    return OpCost{};
  }();
  EXPECT_NEAR(up.flops, 2.0 * 8192 * 8192 * 57344, 1.0);
  EXPECT_NEAR(up.time_s, 80 * up.flops / 9000e12 / 0.5, 1e-9);
  EXPECT_EQ(up.bound, "compute (calibrated, rows far from the ridge)");
  // Decode of one sequence: MLP down moves 8192·28672·0.5 B of weights (+ (28672 + 8192)·0.5
  // of activations) = 117.45 MB, memory-bound, above the memory row: 0.25 of 8 TB/s.
  BatchShape dec;
  dec.decode_seqs = 1;
  dec.decode_ctx_tokens = 100;
  bool found = false;
  for (const OpCost& op : explain_step(d, dec)) {
    if (op.name != "MLP down") continue;
    found = true;
    const double b = 8192.0 * 28672 * 0.5 + (28672.0 + 8192) * 0.5;
    EXPECT_NEAR(op.bytes, b, 1.0);
    EXPECT_NEAR(op.time_s, 80 * b / 8e12 / 0.25, 1e-9);
    EXPECT_EQ(op.bound, "memory (calibrated)");
  }
  EXPECT_TRUE(found);

  // FP4 weights with 16-bit activations (W4A16) run on the 16-bit unit: no fp4 rows.
  auto w4a16 = make_deployment(m, {}, g, Precision::of(DType::kFp4, DType::kBf16, DType::kFp8),
                               full_test_eff(g));
  w4a16.bind_calibration(shared);
  EXPECT_EQ(w4a16.calib_rows[0][1], nullptr);
  EXPECT_FALSE(w4a16.uses_table(shared->tables()[0]));

  // W4A4 Qwen3-30B-A3B (MoE) on one B200: the routed experts' grouped GEMM keeps the
  // catalog's single FP4 fraction and memory efficiency (the rows time dense kernels), so it
  // costs exactly what it costs with no table; the dense projections take the rows.
  const auto& moe = catalog().model("qwen3-30b-a3b");
  auto with = make_deployment(moe, {}, g, Precision::of(DType::kFp4, DType::kFp4, DType::kFp8),
                              full_test_eff(g));
  auto without = with;
  with.bind_calibration(shared);
  BatchShape mix;
  mix.prefill_tokens = 2048;
  mix.decode_seqs = 64;
  mix.decode_ctx_tokens = 64 * 1000;
  auto find = [](const std::vector<OpCost>& ops, const std::string& prefix) {
    for (const OpCost& op : ops)
      if (op.name.rfind(prefix, 0) == 0) return op;
    return OpCost{};
  };
  const auto ops_with = explain_step(with, mix), ops_without = explain_step(without, mix);
  const OpCost grouped = find(ops_with, "routed experts (grouped GEMM");
  ASSERT_GT(grouped.time_s, 0.0);
  EXPECT_DOUBLE_EQ(grouped.time_s, find(ops_without, "routed experts (grouped GEMM").time_s);
  EXPECT_EQ(grouped.bound.find("calibrated"), std::string::npos) << grouped.bound;
  const OpCost proj = find(ops_with, "output projection");
  EXPECT_NE(proj.bound.find("calibrated"), std::string::npos) << proj.bound;
  EXPECT_NE(proj.time_s, find(ops_without, "output projection").time_s);
}

TEST_F(CalibrationFile, ErrorsNameLineAndColumn) {
  auto error_of = [&](const std::string& text) {
    try {
      load_calibration(write(text), catalog());
    } catch (const InputError& e) {
      return e;
    }
    ADD_FAILURE() << "no error for:\n" << text;
    return InputError("none");
  };
  // A row faster than the datasheet roofline (fraction 2): line 8 (7 header lines + 1).
  InputError e = error_of(header() + "gemm,bf16,8192,8192,8192,,,,,,,,555.64,too fast\n");
  EXPECT_EQ(e.line(), 8);
  EXPECT_EQ(e.field(), "time_us");
  EXPECT_NE(e.message().find("faster than the datasheet roofline"), std::string::npos) << e.what();
  // Missing provenance.
  e = error_of(
      "# fleetsim-calibration: 1\n# gpu: h100-sxm\n"
      "op,dtype,m,n,k,batch,q_len,kv_len,heads,kv_heads,head_dim,causal,time_us,citation\n");
  EXPECT_EQ(e.field(), "source");
  // Unknown GPU, with did-you-mean.
  e = error_of(header("h100") + two_rows());
  EXPECT_EQ(e.field(), "gpu");
  EXPECT_NE(e.message().find("'h100-sxm'"), std::string::npos) << e.what();
  // Unknown op and a non-number.
  e = error_of(header() + "matmul,bf16,1,1,1,,,,,,,,1,x\n");
  EXPECT_EQ(e.field(), "op");
  e = error_of(header() + "gemm,bf16,1,abc,1,,,,,,,,1,x\n");
  EXPECT_EQ(e.field(), "n");
  EXPECT_EQ(e.line(), 8);
  // fp4 rows: only on a GPU with an FP4 rate (H100 has none), and only GEMMs.
  e = error_of(header() + "gemm,fp4,8192,8192,8192,,,,,,,,1000,x\n");
  EXPECT_EQ(e.field(), "dtype");
  EXPECT_NE(e.message().find("no fp4 tensor rate"), std::string::npos) << e.what();
  e = error_of(header("b200") + "attn_decode,fp4,,,,8,,4096,64,8,128,,100,x\n");
  EXPECT_EQ(e.field(), "dtype");
  EXPECT_NE(e.message().find("GEMMs only"), std::string::npos) << e.what();
}

TEST(Calibration, PublishedFp4TableIsOnB200sFp4Rate) {
  // hw_models/calibration/b200-gemm-fp4-published.csv: every row is an fp4 GEMM on B200's
  // FP4 rate, and its 8192³ row is compute-bound at 2·8192³ / 205 µs = 5,364 TFLOP/s =
  // 0.596 of 9,000.
  const CalibrationTable t = load_calibration(
      std::string(FLEETSIM_SOURCE_DIR) + "/hw_models/calibration/b200-gemm-fp4-published.csv",
      catalog());
  EXPECT_EQ(t.gpu, "b200");
  EXPECT_EQ(t.rows.size(), 49u);
  bool cube = false;
  for (const auto& r : t.rows) {
    EXPECT_EQ(r.dtype, "fp4") << t.file << ":" << r.line;
    // (8192 x 4096 x 16384 has the same FLOPs; the bytes tell them apart.)
    if (r.flops != 2.0 * 8192 * 8192 * 8192 || r.bytes != 3.0 * 8192 * 8192 * 0.5) continue;
    cube = true;
    EXPECT_TRUE(r.compute_bound);
    EXPECT_NEAR(r.fraction, 2.0 * 8192 * 8192 * 8192 / 205e-6 / 9000e12, 1e-9);
  }
  EXPECT_TRUE(cube);
}

TEST(Calibration, ShippedTablesLoadAndCiteTheirRows) {
  const CalibrationSet set = CalibrationSet::load_dir(
      std::string(FLEETSIM_SOURCE_DIR) + "/hw_models/calibration", catalog());
  EXPECT_GE(set.tables().size(), 5u);
  for (const auto& t : set.tables()) {
    EXPECT_FALSE(t.source.empty()) << t.file;
    for (const auto& r : t.rows) {
      EXPECT_FALSE(r.citation.empty()) << t.file << ":" << r.line;
      EXPECT_GT(r.fraction, 0.0) << t.file << ":" << r.line;
      EXPECT_LE(r.fraction, 1.0) << t.file << ":" << r.line;
    }
  }
}

}  // namespace
}  // namespace fleetsim::hw
