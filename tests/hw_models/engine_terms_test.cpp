// Tests for the serving-engine terms of hw_models/perf_model: per-sequence CPU
// overhead, the CUDA-graph batch limit, kernel and compute efficiency, the MoE grouped-GEMM
// occupancy curve and efficiency (whole and compute side), expert-parallel imbalance from the hottest expert, the
// fixed all-to-all call cost, redundant experts (EPLB), two-batch overlap, GGUF
// dequantisation bandwidth, the FP16 copy of batched GGUF matmuls, FP16 accumulation,
// sequential pipeline stages and the measured FP4 GEMM rate. Each test changes one term and checks the difference against
// the formula in perf_model.h, worked out in the comment.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "hw_models/catalog.h"
#include "hw_models/perf_model.h"
#include "tests/hw_models/hw_test_util.h"

namespace fleetsim::hw {
namespace {

using test_util::catalog;

using test_util::expect_rel;

// Llama-2-7B on one A100 with the ideal engine's terms (none) and no calibration tables.
Deployment llama7b(Efficiency* e = nullptr) {
  const auto& g = catalog().gpu("a100-80gb-sxm");
  Efficiency eff = catalog_efficiency(g);
  apply_engine(catalog().engine("ideal"), &eff);
  if (e != nullptr) eff = *e;
  return make_deployment(catalog().model("llama-2-7b"), {}, g, {}, eff);
}

// Llama-2-7B on 4 attention-DP ranks of A100s with the ideal engine's terms, `tweak` applied.
Deployment llama7b_dp4(void (*tweak)(Efficiency&) = nullptr) {
  const auto& g = catalog().gpu("a100-80gb-sxm");
  Efficiency eff = catalog_efficiency(g);
  apply_engine(catalog().engine("ideal"), &eff);
  if (tweak != nullptr) tweak(eff);
  Parallelism p;
  p.dp_attention = 4;
  return make_deployment(catalog().model("llama-2-7b"), p, g, {}, eff);
}

BatchShape decode(int64_t n, int64_t ctx_each) {
  BatchShape b;
  b.decode_seqs = n;
  b.logits_tokens = n;
  b.decode_ctx_tokens = n * ctx_each;
  return b;
}

BatchShape prefill(int64_t tokens) {
  BatchShape b;
  b.prefill_tokens = tokens;
  b.prefill_kv_tokens = tokens;
  const double t = static_cast<double>(tokens);
  b.prefill_attn_pairs = t * (t + 1.0) / 2.0;
  b.logits_tokens = 1;
  return b;
}

const OpCost& find_op(const std::vector<OpCost>& ops, const std::string& name) {
  for (const auto& o : ops)
    if (o.name == name) return o;
  static const OpCost none;
  ADD_FAILURE() << "no operator " << name;
  return none;
}

TEST(EngineTerms, IdealEngineAddsNothing) {
  Efficiency e = catalog_efficiency(catalog().gpu("a100-80gb-sxm"));
  const StepBreakdown a = estimate_step(llama7b(&e), decode(16, 1000));
  const StepBreakdown b = estimate_step(llama7b(), decode(16, 1000));
  EXPECT_EQ(a.total_s(), b.total_s());
  EXPECT_EQ(b.overhead_s, 0.0);
}

TEST(EngineTerms, PerSequenceOverheadIsPerSamplingSequence) {
  // 16 sequences sample a token: overhead = 16 · 10 µs = 160 µs, nothing else moves.
  Deployment d = llama7b();
  const StepBreakdown base = estimate_step(d, decode(16, 1000));
  d.eff.per_sequence_overhead_s = 10e-6;
  const StepBreakdown s = estimate_step(d, decode(16, 1000));
  expect_rel(s.overhead_s - base.overhead_s, 160e-6);
  EXPECT_EQ(s.gemm_s, base.gemm_s);
  // A prefill iteration of one prompt samples once: 10 µs.
  expect_rel(estimate_step(d, prefill(512)).overhead_s, 10e-6);
}

TEST(EngineTerms, ChunkedAttentionCapsPrefillPairsAtHalfAChunkPerToken) {
  // Llama-2-7B with 24 of its 32 layers chunked at C = 1024 tokens (as Llama 4's 3 of 4 at
  // 8192). A 4096-token prompt: full attention has 4096 · 4097 / 2 = 8,390,656 query-key
  // pairs; a chunked layer 4 chunks of 1024 · 1025 / 2 = 2,099,200 pairs, 4096 · 1025 / 2.
  // FLOPs per pair: 4 · 32 heads · 128 = 16,384 (QK^T and PV, 2 FLOPs each per dimension).
  Deployment d = llama7b();
  auto m = std::make_shared<fleetsim::hw::ModelSpec>(*d.model);
  m->attention_chunk_tokens = 1024;
  m->chunked_attention_layers = 24;
  d.model = m;
  const auto ops = explain_step(d, prefill(4096));
  const OpCost& full = find_op(ops, "prefill attention");
  const OpCost& chunked = find_op(ops, "prefill attention (chunked)");
  EXPECT_EQ(full.count, 8.0);
  EXPECT_EQ(chunked.count, 24.0);
  expect_rel(full.flops, 16384.0 * 8390656.0);
  expect_rel(chunked.flops, 16384.0 * 2099200.0);
  // A prompt of one chunk or less attends to everything before it either way: 512 tokens,
  // 512 · 513 / 2 = 131,328 pairs in both kinds of layer.
  const auto short_ops = explain_step(d, prefill(512));
  expect_rel(find_op(short_ops, "prefill attention (chunked)").flops, 16384.0 * 131328.0);
  expect_rel(find_op(short_ops, "prefill attention").flops, 16384.0 * 131328.0);
  // Decode is priced as full attention in every layer (an upper bound past one chunk).
  const Deployment plain = llama7b();
  EXPECT_EQ(estimate_step(d, decode(8, 3000)).attention_s,
            estimate_step(plain, decode(8, 3000)).attention_s);
}

TEST(EngineTerms, DecodeBatchesAboveTheGraphLimitLaunchEagerly) {
  // Graph-replayed decode: one launch of kernel_launch. Eager: (9 kernels per layer · 32
  // layers + 2) = 290 launches (dense model, one GPU: no MoE or collective kernels), queued
  // by the CPU while the GPU runs: only the launch time beyond the GPU's work shows.
  Deployment d = llama7b();
  d.eff.kernel_launch_s = 5e-6;
  d.eff.cuda_graphs = true;
  d.eff.cuda_graph_max_batch = 8;
  expect_rel(estimate_step(d, decode(8, 100)).overhead_s, 5e-6);
  // 290 · 5 µs = 1.45 ms of launches, hidden: the 7B weights alone (13.5 GB) take more than
  // 6.6 ms at the A100's full 2.039 TB/s.
  EXPECT_EQ(estimate_step(d, decode(9, 100)).overhead_s, 0.0);
  // 290 · 100 µs = 29 ms of launches: 29 ms less the GPU's work shows. The GPU's work here
  // is the GEMMs (the decode attention over the context is not counted as hiding launches).
  d.eff.kernel_launch_s = 100e-6;
  const StepBreakdown s = estimate_step(d, decode(9, 100));
  EXPECT_GT(s.gemm_s, 6.6e-3);
  expect_rel(s.overhead_s, 290 * 100e-6 - s.gemm_s);
  expect_rel(s.total_s(), 290 * 100e-6 + s.attention_s);
  d.eff.cuda_graph_max_batch = 0;  // 0: every decode batch replays a graph
  expect_rel(estimate_step(d, decode(4096, 100)).overhead_s, 100e-6);
}

TEST(EngineTerms, AttentionDataParallelRanksEachReplayTheirOwnGraph) {
  // Llama-2-7B with 4 attention-DP ranks (4 GPUs), graphs up to 8 sequences: 32 sequences
  // are 8 per rank, so each rank replays its graph (one launch); 36 are 9 per rank: eager
  // launches, hidden here by the GEMMs. kernel_launch 1 s makes the two cases tell apart:
  // a graph launch costs 1 s, eager launches ((9 + 2 collective) kernels · 32 layers + 2 =
  // 354) 354 s less the GPU's work (milliseconds).
  const Deployment d = llama7b_dp4([](Efficiency& eff) {
    eff.kernel_launch_s = 1.0;
    eff.cuda_graph_max_batch = 8;
  });
  expect_rel(estimate_step(d, decode(32, 100)).overhead_s, 1.0);
  EXPECT_GT(estimate_step(d, decode(36, 100)).overhead_s, 300.0);
}

TEST(EngineTerms, AWholePromptStaysOnOneAttentionDataParallelRank) {
  // Llama-2-7B on 4 attention-DP ranks (ideal engine, no tables). One 4,096-token prompt
  // sits whole on one rank and the ranks step together, so the iteration's attention side
  // is that rank's 4,096 tokens; spread evenly it would be 1,024 tokens a rank. The causal
  // prefill attention is linear in its pairs (compute-bound, no tables): 4,096·4,097/2 pairs
  // against a quarter of them, exactly 4 times the time. The MLP runs on all 4,096 tokens
  // over the 4 GPUs either way (equal gemm share of the MLP).
  const Deployment d = llama7b_dp4();
  const BatchShape even = prefill(4096);
  BatchShape whole = even;
  whole.largest_chunk_tokens = 4096;
  whole.largest_chunk_pairs = even.prefill_attn_pairs;
  whole.largest_chunk_kv_tokens = 4096;
  const std::vector<OpCost> ops_even = explain_step(d, even), ops_whole = explain_step(d, whole);
  expect_rel(find_op(ops_whole, "prefill attention").time_s,
             4.0 * find_op(ops_even, "prefill attention").time_s);
  // QKV projection: 4,096 rows on the busy rank against 1,024: more than twice the time
  // (compute-bound rows at 4,096 are 4x the FLOPs; at 1,024 the weights weigh more).
  EXPECT_GT(find_op(ops_whole, "QKV projection").time_s,
            2.0 * find_op(ops_even, "QKV projection").time_s);
  expect_rel(find_op(ops_whole, "MLP down").time_s, find_op(ops_even, "MLP down").time_s);
  // Four prompts of 1,024 tokens, one a rank: the largest chunk is an even share, nothing
  // changes (bit for bit).
  BatchShape four = prefill(1024);
  four.prefill_tokens = 4096;
  four.prefill_kv_tokens = 4096;
  four.prefill_attn_pairs *= 4;
  four.logits_tokens = 4;
  BatchShape four_even = four;
  four.largest_chunk_tokens = 1024;
  four.largest_chunk_pairs = four_even.prefill_attn_pairs / 4;
  four.largest_chunk_kv_tokens = 1024;
  EXPECT_EQ(estimate_step(d, four).total_s(), estimate_step(d, four_even).total_s());
  // Without attention DP the chunk changes nothing either.
  const Deployment one = llama7b();
  EXPECT_EQ(estimate_step(one, whole).total_s(), estimate_step(one, even).total_s());
}

TEST(EngineTerms, EagerLaunchesHiddenByALongPrefill) {
  // A 4096-token prefill on one A100: 739 GFLOP in the MLP up+gate alone (> 2 ms at 312
  // TFLOP/s) against 290 launches · 5 µs = 1.45 ms: no launch time shows.
  Deployment d = llama7b();
  d.eff.kernel_launch_s = 5e-6;
  const StepBreakdown s = estimate_step(d, prefill(4096));
  EXPECT_GT(s.gemm_s, 290 * 5e-6);
  EXPECT_EQ(s.overhead_s, 0.0);
}

TEST(EngineTerms, EveryGpuOperatorTakesAtLeastTheShortestKernel) {
  // Batch-1 decode: the embedding gather reads and writes one 4096-wide row, 4096 · (2 + 2)
  // = 16,384 bytes: 8 ns at 2.039 TB/s, so it takes min_kernel, whatever that is.
  Deployment d = llama7b();
  d.eff.min_kernel_s = 10e-6;
  expect_rel(find_op(explain_step(d, decode(1, 100)), "embedding gather").time_s, 10e-6);
  d.eff.min_kernel_s = 0;
  EXPECT_LT(find_op(explain_step(d, decode(1, 100)), "embedding gather").time_s, 1e-7);
  // A device-side latency per operator (dataflow parts) is added for every eager kernel,
  // never hidden, even with CUDA graphs: 290 · 1 µs.
  d.eff.operator_latency_s = 1e-6;
  const double base = estimate_step(llama7b(), decode(1, 100)).overhead_s;
  expect_rel(estimate_step(d, decode(1, 100)).overhead_s - base, 290 * 1e-6);
}

TEST(EngineTerms, KernelEfficiencyScalesEveryGpuOperator) {
  // At 0.5 every GPU operator takes twice as long; overheads do not change. (No shortest
  // kernel: the embedding gather would sit at it either way.)
  Deployment d = llama7b();
  d.eff.min_kernel_s = 0;
  d.eff.iteration_overhead_s = 1e-3;
  const StepBreakdown base = estimate_step(d, decode(32, 2000));
  d.eff.kernel_efficiency = 0.5;
  const StepBreakdown s = estimate_step(d, decode(32, 2000));
  expect_rel(s.gemm_s, 2 * base.gemm_s);
  expect_rel(s.attention_s, 2 * base.attention_s);
  EXPECT_EQ(s.overhead_s, base.overhead_s);
}

TEST(EngineTerms, ComputeEfficiencySlowsOnlyTheComputeSide) {
  // A 4096-token prefill: the MLP up+gate GEMM (4096 × 4096 × 22016, 739 GFLOP) is
  // compute-bound and takes 1/0.5 = 2x as long; the embedding gather (bytes only) does not
  // change; a batch-1 decode (memory-bound GEMMs) does not change at all.
  Deployment d = llama7b();
  const auto base = explain_step(d, prefill(4096));
  const double dec = estimate_step(d, decode(1, 100)).gemm_s;
  d.eff.compute_efficiency = 0.5;
  const auto slow = explain_step(d, prefill(4096));
  expect_rel(find_op(slow, "MLP up+gate").time_s, 2 * find_op(base, "MLP up+gate").time_s);
  EXPECT_EQ(find_op(slow, "embedding gather").time_s, find_op(base, "embedding gather").time_s);
  EXPECT_EQ(estimate_step(d, decode(1, 100)).gemm_s, dec);
}

// Mixtral-8x7B (8 experts, top-2, expert ffn 14336, hidden 4096, 32 MoE layers) on H100s,
// its hottest expert at `hot` × the mean expert's tokens.
Deployment mixtral(int tp, bool ep, double hot = 1.0, int dp_attention = 1) {
  const auto& g = catalog().gpu("h100-sxm");
  Efficiency eff = catalog_efficiency(g);
  apply_engine(catalog().engine("ideal"), &eff);
  Parallelism p;
  p.tp = tp;
  p.dp_attention = dp_attention;
  p.expert_parallel = ep;
  ModelSpec m = catalog().model("mixtral-8x7b");
  m.moe->hot_expert = hot;
  return make_deployment(m, p, g, {}, eff);
}

TEST(EngineTerms, GroupedGemmOccupancyCurve) {
  // Tensor-parallel experts, 4096 prompt tokens: every expert is hit (A = 8), m = T·k / A =
  // 4096·2/8 = 1024 rows per expert. With m_half = 1024 the compute side runs at
  // m/(m + m_half) = 1/2 of the rate: the compute-bound grouped GEMM takes 2x as long.
  Deployment d = mixtral(1, false);
  const auto base = explain_step(d, prefill(4096));
  d.eff.moe_half_tokens = 1024;
  const auto slow = explain_step(d, prefill(4096));
  const char* op = "routed experts (grouped GEMM, TP)";
  expect_rel(find_op(slow, op).time_s, 2 * find_op(base, op).time_s, 1e-9);
  // One decode token, m_half = 64: A = 8·(1 − (6/8)^1) = 2 experts hit, m = 2/2 = 1 row each,
  // so the compute side costs (1 + 64)/1 = 65x: 2·2·3·4096·14336 = 7.05e8 FLOPs → 46 µs at
  // the 989 TFLOP/s peak (58 µs at the catalog's 794.5/989 = 0.80), still under the weight
  // read of 2 experts, 2·3·4096·14336·2 B = 704.6 MB → 237 µs at the measured 2.97 TB/s:
  // memory-bound, unchanged.
  d.eff.moe_half_tokens = 64;
  const auto one = explain_step(d, decode(1, 10));
  d.eff.moe_half_tokens = 0;
  const auto one_base = explain_step(d, decode(1, 10));
  EXPECT_EQ(find_op(one, op).time_s, find_op(one_base, op).time_s);
}

TEST(EngineTerms, MoeEfficiencyScalesTheRoutedExperts) {
  Deployment d = mixtral(1, false);
  const char* op = "routed experts (grouped GEMM, TP)";
  const auto base = explain_step(d, prefill(2048));
  d.eff.moe_efficiency = 0.8;  // 1/0.8 = 1.25x as long; the router is a dense GEMM
  const auto slow = explain_step(d, prefill(2048));
  expect_rel(find_op(slow, op).time_s, 1.25 * find_op(base, op).time_s);
  EXPECT_EQ(find_op(slow, "router").time_s, find_op(base, "router").time_s);
}

TEST(EngineTerms, SmallExpertsStreamAtTheirSizeOverSizePlusTheHalfSize) {
  // Mixtral's experts, BF16: w = 3 · 4096 · 14336 · 2 B = 352.3 MB each. Tensor-parallel
  // experts over 1 GPU keep the whole expert. With w_half = w the routed experts run at
  // w / (w + w_half) = 1/2 of the rate: 2x as long, in prefill and in decode alike.
  Deployment d = mixtral(1, false);
  const char* op = "routed experts (grouped GEMM, TP)";
  const auto base = explain_step(d, prefill(2048));
  const double dec = find_op(explain_step(d, decode(1, 100)), op).time_s;
  const double w = 3.0 * 4096 * 14336 * 2;
  d.eff.moe_half_expert_bytes = w;
  expect_rel(find_op(explain_step(d, prefill(2048)), op).time_s, 2 * find_op(base, op).time_s);
  expect_rel(find_op(explain_step(d, decode(1, 100)), op).time_s, 2 * dec);
  // w_half = w / 4: w / (w + w/4) = 0.8 of the rate, 1.25x as long; the router (a dense
  // GEMM) does not move.
  d.eff.moe_half_expert_bytes = w / 4;
  const auto slow = explain_step(d, prefill(2048));
  expect_rel(find_op(slow, op).time_s, 1.25 * find_op(base, op).time_s);
  EXPECT_EQ(find_op(slow, "router").time_s, find_op(base, "router").time_s);
}

TEST(EngineTerms, MoeComputeEfficiencySlowsOnlyTheComputeSideOfTheRoutedExperts) {
  // A 2048-token prefill of Mixtral: 2048 · 2 = 4096 token copies over 8 experts, 512 rows
  // each: compute-bound, so at 0.5 it takes 1/0.5 = 2x as long. A one-sequence decode reads
  // 2 experts' weights (2 · 3 · 4096 · 14336 · 2 B = 704 MB) for 0.7 GFLOP: memory-bound
  // before and after (the compute side at half rate is still ~250x shorter), unchanged.
  Deployment d = mixtral(1, false);
  const char* op = "routed experts (grouped GEMM, TP)";
  const auto base = explain_step(d, prefill(2048));
  const double dec = find_op(explain_step(d, decode(1, 100)), op).time_s;
  d.eff.moe_compute_efficiency = 0.5;
  expect_rel(find_op(explain_step(d, prefill(2048)), op).time_s, 2 * find_op(base, op).time_s);
  EXPECT_EQ(find_op(explain_step(d, decode(1, 100)), op).time_s, dec);
  // Dense operators do not move.
  EXPECT_EQ(find_op(explain_step(d, prefill(2048)), "router").time_s,
            find_op(base, "router").time_s);
}

TEST(EngineTerms, MlaEfficiencyScalesOnlyTheLatentAttention) {
  // DeepSeek-R1 (MLA) on 8 x MI300X, TP 8: at mla_efficiency 0.25 its prefill and decode
  // attention take 1/0.25 = 4x as long; its GEMMs and experts do not move. Llama-2-7B (no
  // MLA) keeps its attention whatever the factor.
  const auto& g = catalog().gpu("mi300x");
  Efficiency eff = catalog_efficiency(g);
  apply_engine(catalog().engine("ideal"), &eff);
  Parallelism p;
  p.tp = 8;
  Deployment d = make_deployment(catalog().model("deepseek-r1"), p, g, {}, eff);
  const auto pre = explain_step(d, prefill(2048));
  const auto dec = explain_step(d, decode(32, 3600));
  d.eff.mla_efficiency = 0.25;
  const auto pre4 = explain_step(d, prefill(2048));
  const auto dec4 = explain_step(d, decode(32, 3600));
  expect_rel(find_op(pre4, "prefill attention").time_s,
             4 * find_op(pre, "prefill attention").time_s);
  expect_rel(find_op(dec4, "decode attention").time_s, 4 * find_op(dec, "decode attention").time_s);
  EXPECT_EQ(find_op(pre4, "routed experts (grouped GEMM, TP)").time_s,
            find_op(pre, "routed experts (grouped GEMM, TP)").time_s);
  EXPECT_EQ(find_op(dec4, "output projection").time_s, find_op(dec, "output projection").time_s);

  Efficiency plain = catalog_efficiency(catalog().gpu("a100-80gb-sxm"));
  apply_engine(catalog().engine("ideal"), &plain);
  const double llama =
      find_op(explain_step(llama7b(&plain), decode(8, 1000)), "decode attention").time_s;
  plain.mla_efficiency = 0.25;
  EXPECT_EQ(find_op(explain_step(llama7b(&plain), decode(8, 1000)), "decode attention").time_s,
            llama);
}

TEST(EngineTerms, HottestExpertSetsTheBusiestGpu) {
  // EP over G GPUs, n = E/G = 8/G experts each; the busiest GPU gets (hot + n − 1)/n of the
  // mean GPU's token copies: G = 8, n = 1: hot = 3 → 3x; G = 2, n = 4: (3 + 3)/4 = 1.5x. The
  // routed-expert FLOPs are 2·copies·3·h·fe, so their ratio is the imbalance.
  const char* op = "routed experts (grouped GEMM, EP)";
  for (const auto& [tp, expected] : {std::pair{8, 3.0}, std::pair{2, 1.5}}) {
    const double base = find_op(explain_step(mixtral(tp, true), prefill(1024)), op).flops;
    Deployment d = mixtral(tp, true, 3.0);
    expect_rel(find_op(explain_step(d, prefill(1024)), op).flops, expected * base);
    // An explicit floor above it wins.
    d.eff.moe_imbalance = 4.0;
    expect_rel(find_op(explain_step(d, prefill(1024)), op).flops, 4.0 * base);
  }
}

TEST(EngineTerms, RedundantExpertsCapTheImbalanceAndAddTheirWeights) {
  // Mixtral (E = 8 experts, hidden 4096, expert_ffn 14336, 32 MoE layers) on EP 8 with a hot
  // expert of 3: 3x the balanced routed FLOPs. With R = 8 redundant experts (EPLB) the
  // busiest rank gets at most 1.11x the mean (TensorRT-LLM blog4 Table 1).
  const char* op = "routed experts (grouped GEMM, EP)";
  const double base = find_op(explain_step(mixtral(8, true), prefill(1024)), op).flops;
  Deployment d = mixtral(8, true, 3.0);
  const MemoryFit before = fit_memory(d, 0.9, 0, 8192, 16, 1);
  d.par.redundant_experts = 8;
  expect_rel(find_op(explain_step(d, prefill(1024)), op).flops, 1.11 * base);
  // Each GPU holds R/G = 1 more expert per MoE layer: 32 · 3 · 4096 · 14336 parameters
  // (5,637,144,576) at 2 bytes (BF16) = 11,274,289,152 bytes more weights.
  const MemoryFit after = fit_memory(d, 0.9, 0, 8192, 16, 1);
  expect_rel(after.weight_bytes - before.weight_bytes, 11'274'289'152.0, 1e-9);
  // A model that is balanced already stays balanced (min(1, 1.11) = 1).
  Deployment flat = mixtral(8, true);
  flat.par.redundant_experts = 8;
  expect_rel(find_op(explain_step(flat, prefill(1024)), op).flops, base);
}

TEST(EngineTerms, TwoBatchOverlapHidesHalfOfTheShorterSide) {
  // Two micro-batches with compute c and all-to-all m per layer, drained per layer:
  // 2·max(c, m) + min(c, m) instead of 2c + 2m, so min(C, M)/2 of the iteration's compute C
  // (gemm + attention + moe) and EP all-to-all M is hidden. The TP all-reduces are not.
  for (int64_t tokens : {64, 8192}) {         // all-to-all-bound and compute-bound iterations
    Deployment d = mixtral(1, true, 1.0, 8);  // attention DP 8: tokens move by all-to-all
    const StepBreakdown base = estimate_step(d, prefill(tokens));
    const double m =
        find_op(explain_step(d, prefill(tokens)), "EP dispatch + combine all-to-all").time_s;
    const double c = base.gemm_s + base.attention_s + base.moe_s;
    d.par.two_batch_overlap = true;
    const StepBreakdown tbo = estimate_step(d, prefill(tokens));
    expect_rel(tbo.overlap_s, -0.5 * std::min(c, m), 1e-12);
    expect_rel(tbo.total_s(), base.total_s() - 0.5 * std::min(c, m), 1e-12);
    EXPECT_LT(tbo.total_s(), base.total_s());
  }
}

TEST(EngineTerms, AllToAllCallCost) {
  // EP over 8 attention-DP ranks: 2 calls (dispatch, combine) per MoE layer · 32 layers = 64
  // calls; each costs 25 µs more: 1.6 ms.
  Deployment d = mixtral(1, true, 1.0, 8);
  const StepBreakdown base = estimate_step(d, decode(64, 100));
  d.eff.ep_alltoall_call_s = 25e-6;
  expect_rel(estimate_step(d, decode(64, 100)).communication_s - base.communication_s, 64 * 25e-6,
             1e-9);
}

TEST(EngineTerms, AttentionTensorParallelExpertsAllReduceInsteadOfAllToAll) {
  // Under attention TP every GPU holds every token: EP experts run on them where they are
  // and the MoE output is all-reduced like a dense MLP's (TensorRT-LLM enables its MoE
  // all-to-all only with enable_attention_dp). Mixtral (32 layers, all MoE), 64 decode rows
  // on 8 x H100, EP: no dispatch/combine; 32 all-reduces after attention and 32 after the
  // MoE, each of 64 rows · 4096 · 2 bytes (the BF16 residual) = 524,288 bytes, as many as
  // the same model's experts split by TP. With attention DP 8 instead, 64 all-to-all calls
  // and no all-reduce.
  const BatchShape b = decode(64, 100);
  Deployment ep = mixtral(8, true);
  ep.eff.ep_alltoall_call_s = 25e-6;  // would show if any all-to-all were charged
  const auto ops = explain_step(ep, b);
  for (const auto& op : ops) EXPECT_EQ(op.name.find("all-to-all"), std::string::npos) << op.name;
  const OpCost& attn = find_op(ops, "TP all-reduce after attention");
  const OpCost& mlp = find_op(ops, "TP all-reduce after MLP");
  EXPECT_EQ(attn.count, 32);
  EXPECT_EQ(mlp.count, 32);
  // Ring all-reduce on the α-β link of the catalog's H100 efficiency: 2·7 steps of α and
  // 2·7/8 of the buffer over the link bandwidth.
  const double one =
      14 * ep.eff.allreduce_latency_s + 14.0 / 8 * 524288.0 / ep.eff.link_bw_bytes_per_s;
  expect_rel(mlp.time_s, 32 * one, 1e-9);
  expect_rel(find_op(explain_step(mixtral(8, false), b), "TP all-reduce after MLP").time_s,
             mlp.time_s, 1e-12);
  EXPECT_EQ(hw::ep_alltoall(ep, 64).calls, 0);
  const Deployment dep = mixtral(1, true, 1.0, 8);
  EXPECT_EQ(find_op(explain_step(dep, b), "EP dispatch + combine all-to-all").count, 64);
  EXPECT_EQ(hw::ep_alltoall(dep, 64).calls, 64);
}

TEST(EngineTerms, GgufWeightsStreamAtQuantBandwidth) {
  // q4_0 weights (18 bytes per 32): the QKV projection of Llama-2-7B (4096 × 12288) reads
  // 4096·12288·18/32 = 28,311,552 B; at quant_bandwidth 0.5 it is charged twice that, plus
  // the activations 1·(4096 + 12288)·2 = 32,768 B either way.
  Deployment d = llama7b();
  d.prec = Precision::of(DType::kQ4_0, DType::kFp16, DType::kFp16);
  d.eff.quant_bandwidth = 0.5;
  const auto ops = explain_step(d, decode(1, 100));
  expect_rel(find_op(ops, "QKV projection").bytes, 2 * 28311552.0 + 32768.0);
  // BF16 weights are not block-quantised: no extra bytes.
  d.prec = Precision::of(DType::kBf16, DType::kBf16, DType::kBf16);
  expect_rel(find_op(explain_step(d, decode(1, 100)), "QKV projection").bytes,
             4096.0 * 12288 * 2 + 32768.0);
}

TEST(EngineTerms, BatchedGgufMatmulsRunOnAnFp16CopyOfTheWeights) {
  // dequant_gemm_min_tokens 9 (llama.cpp's CUDA backend before MMQ): a q4_0 matmul over
  // ≥ 9 tokens first reads the blocks (18 B per 32 weights) and writes FP16 (2 B per
  // weight), then the GEMM reads the FP16 copy. QKV of Llama-2-7B (4096 × 12288 =
  // 50,331,648 weights) at 512 prompt tokens:
  //   dequantise: 50,331,648 · (18/32 + 2) = 128,974,848 B, no FLOPs;
  //   GEMM: 50,331,648 · 2 + 512 · (4096 + 12288) · 2 = 117,440,512 B.
  Deployment d = llama7b();
  d.prec = Precision::of(DType::kQ4_0, DType::kFp16, DType::kFp16);
  d.eff.dequant_gemm_min_tokens = 9;
  auto ops = explain_step(d, prefill(512));
  const OpCost& dq = find_op(ops, "dequantize weights to FP16");  // the first: QKV's
  expect_rel(dq.bytes, 128974848.0);
  EXPECT_EQ(dq.flops, 0.0);
  expect_rel(find_op(ops, "QKV projection").bytes, 117440512.0);
  // 8 tokens (MMVQ's largest batch) multiply the blocks in place: 28,311,552 B of blocks
  // plus 8 · 16384 · 2 = 262,144 B of activations, and no copy.
  ops = explain_step(d, decode(8, 100));
  expect_rel(find_op(ops, "QKV projection").bytes, 28311552.0 + 262144.0);
  for (const auto& o : ops) EXPECT_NE(o.name, "dequantize weights to FP16");
  // Metal dequantises inside its kernels: an Apple GPU never makes the copy.
  const auto& m2 = catalog().gpu("m2-ultra");
  Efficiency e = catalog_efficiency(m2);
  e.dequant_gemm_min_tokens = 9;
  const Deployment apple =
      make_deployment(catalog().model("llama-2-7b"), {}, m2,
                      Precision::of(DType::kQ4_0, DType::kFp16, DType::kFp16), e);
  for (const auto& o : explain_step(apple, prefill(512)))
    EXPECT_NE(o.name, "dequantize weights to FP16");
}

TEST(EngineTerms, Fp16AccumulationRunsAtTheGeForceFp16AccumulateRate) {
  // RTX 4090 (no calibration tables, assumed compute efficiency 0.7): FP16 GEMMs that
  // accumulate in FP16 run at fp16_accumulate_dense 330.3 TFLOP/s, twice bf16_dense 165.2.
  // MLP up+gate of Llama-2-7B at 4096 tokens: 2 · 4096 · 4096 · 22016 FLOPs per layer,
  // compute-bound, time = flops / (rate · 0.7) per layer.
  const auto& g = catalog().gpu("rtx-4090");
  ASSERT_DOUBLE_EQ(g.fp16_acc16_flops_per_s, 330.3e12);
  Efficiency eff = catalog_efficiency(g);
  apply_engine(catalog().engine("ideal"), &eff);
  const Precision fp16 = Precision::of(DType::kFp16, DType::kFp16, DType::kFp16);
  Deployment d = make_deployment(catalog().model("llama-2-7b"), {}, g, fp16, eff);
  const OpCost fp32acc = find_op(explain_step(d, prefill(4096)), "MLP up+gate");
  expect_rel(fp32acc.flops, 2.0 * 4096 * 4096 * 22016);
  expect_rel(fp32acc.time_s, fp32acc.count * fp32acc.flops / (165.2e12 * 0.7), 1e-9);
  d.eff.fp16_accumulate = true;
  const OpCost fp16acc = find_op(explain_step(d, prefill(4096)), "MLP up+gate");
  expect_rel(fp16acc.time_s, fp16acc.count * fp16acc.flops / (330.3e12 * 0.7), 1e-9);
  // A data-centre part has no faster FP16-accumulate rate: nothing changes on an A100.
  Deployment a = llama7b();
  const double before = find_op(explain_step(a, prefill(4096)), "MLP up+gate").time_s;
  a.eff.fp16_accumulate = true;
  EXPECT_EQ(find_op(explain_step(a, prefill(4096)), "MLP up+gate").time_s, before);
}

TEST(EngineTerms, MatVecKernelsStreamNoFasterThanTheirPerSmLimit) {
  // matvec_sm_bandwidth 10 GB/s on an A100 (108 SMs): a matmul of at most 8 tokens streams
  // at most 108 · 10e9 = 1.08e12 B/s, below the A100's 2039 GB/s · 0.834 (measured) =
  // 1.70e12. QKV of Llama-2-7B (BF16) for one decode token: 4096 · 12288 · 2 B of weights
  // + (4096 + 12288) · 2 B of activations = 100,696,064 B per layer, 32 layers.
  Deployment d = llama7b();
  ASSERT_EQ(d.gpu->sm_count, 108);
  const double free_s = find_op(explain_step(d, decode(1, 100)), "QKV projection").time_s;
  expect_rel(free_s, 32 * 100696064.0 / (2039e9 * (1.70 / 2.039)), 1e-3);
  d.eff.matvec_sm_bandwidth = 10e9;
  const OpCost capped = find_op(explain_step(d, decode(1, 100)), "QKV projection");
  expect_rel(capped.time_s, 32 * 100696064.0 / 1.08e12, 1e-9);
  EXPECT_EQ(capped.bound, std::string("memory (mat-vec, per-SM limit)"));
  // 9 tokens are a matrix multiplication (MMVQ_MAX_BATCH_SIZE = 8): no limit.
  Deployment nine = llama7b();
  const double nine_free = find_op(explain_step(nine, decode(9, 100)), "QKV projection").time_s;
  nine.eff.matvec_sm_bandwidth = 10e9;
  EXPECT_EQ(find_op(explain_step(nine, decode(9, 100)), "QKV projection").time_s, nine_free);
  // An RTX 4090 (128 SMs: 1.28e12 B/s) is limited by its 1008 GB/s memory instead.
  const auto& g = catalog().gpu("rtx-4090");
  Efficiency eff = catalog_efficiency(g);
  apply_engine(catalog().engine("ideal"), &eff);
  Deployment r = make_deployment(catalog().model("llama-2-7b"), {}, g, {}, eff);
  const double r_free = find_op(explain_step(r, decode(1, 100)), "QKV projection").time_s;
  r.eff.matvec_sm_bandwidth = 10e9;
  EXPECT_EQ(find_op(explain_step(r, decode(1, 100)), "QKV projection").time_s, r_free);
  // A GPU whose SM count the catalog does not give (B200) is never limited.
  const auto& b = catalog().gpu("b200");
  ASSERT_EQ(b.sm_count, 0);
  Efficiency be = catalog_efficiency(b);
  apply_engine(catalog().engine("ideal"), &be);
  Deployment bd = make_deployment(catalog().model("llama-2-7b"), {}, b, {}, be);
  const double b_free = find_op(explain_step(bd, decode(1, 100)), "QKV projection").time_s;
  bd.eff.matvec_sm_bandwidth = 10e9;
  EXPECT_EQ(find_op(explain_step(bd, decode(1, 100)), "QKV projection").time_s, b_free);
}

TEST(EngineTerms, SequentialPipelineRunsTheWholeBatchThroughEachStage) {
  // pp = 2, 2048 prompt tokens. Overlapped: 2 micro-batches of 1024 rows; each GPU runs its
  // 16 layers for each (count 32 per GPU), so an MLP op has 1024 rows. Sequential: one
  // micro-batch of 2048 rows through 16 + 16 layers (count 32): twice the FLOPs per op.
  Deployment d = llama7b();
  d.par.pp = 2;
  const auto over = explain_step(d, prefill(2048));
  d.eff.pipeline_sequential = true;
  const auto seq = explain_step(d, prefill(2048));
  EXPECT_EQ(find_op(seq, "MLP down").count, find_op(over, "MLP down").count);
  expect_rel(find_op(seq, "MLP down").flops, 2 * find_op(over, "MLP down").flops);
}

TEST(EngineTerms, Fp4GemmsRunAtTheMeasuredFp4Rate) {
  // B200, W4A4 FP4, no calibration tables: a compute-bound GEMM runs at the measured NVFP4
  // rate (catalog: fp4_gemm_achieved 3797.9 TFLOP/s of 9,000), not at compute_efficiency
  // (0.776, BF16's best shape) of the FP4 peak. MLP up+gate of Llama-3.1-70B at 8192 tokens:
  // 2 · 8192 · 8192 · 57344 FLOPs / 3797.9e12.
  const auto& g = catalog().gpu("b200");
  ASSERT_NEAR(g.fp4_compute_efficiency, 3797.9 / 9000, 1e-12);
  Efficiency eff = catalog_efficiency(g);
  apply_engine(catalog().engine("ideal"), &eff);
  const Deployment d = make_deployment(catalog().model("llama-3.1-70b"), {}, g,
                                       Precision::of(DType::kFp4, DType::kFp4, DType::kFp8), eff);
  const auto ops = explain_step(d, prefill(8192));
  const OpCost& up = find_op(ops, "MLP up+gate");
  expect_rel(up.flops, 2.0 * 8192 * 8192 * 57344);
  expect_rel(up.time_s, up.count * up.flops / 3797.9e12, 1e-9);
  // Attention keeps the 16-bit unit's efficiency.
  const OpCost& at = find_op(ops, "prefill attention");
  EXPECT_EQ(at.bound, "compute");
  expect_rel(at.time_s, at.count * at.flops / (g.bf16_flops_per_s * g.compute_efficiency), 1e-9);
}

}  // namespace
}  // namespace fleetsim::hw
