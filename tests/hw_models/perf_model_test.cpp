// Tests for hw_models/perf_model: hand-computed rooflines, the decode affine property,
// tensor parallelism and memory fit.
//
// The expected numbers are worked out in the comments from the formulas in perf_model.h and
// the catalog figures (A100: 312 TFLOP/s BF16, 2.039 TB/s, 81920 MiB, NVLink 300 GB/s per
// direction, α = 3.2 µs; Llama-2-7B: 32 layers, h 4096, 32 heads and 32 KV heads of 128,
// ffn 11008, vocab 32000). To keep the arithmetic checkable the efficiencies are set by the
// test: compute 0.5 → C = 156e12 FLOP/s, memory 0.8 → B = 1.6312e12 B/s.
#include "hw_models/perf_model.h"
#include "tests/hw_models/hw_test_util.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "hw_models/catalog.h"
#include "hw_models/error.h"

namespace fleetsim::hw {
namespace {

using test_util::catalog;

constexpr double kC = 156e12;     // 312e12 · 0.5
constexpr double kB = 1.6312e12;  // 2.039e12 · 0.8

Efficiency test_eff(const GpuSpec& gpu) {
  Efficiency e = catalog_efficiency(gpu);
  e.compute = 0.5;
  e.memory = 0.8;
  e.iteration_overhead_s = 50e-6;
  return e;
}

using test_util::expect_rel;

TEST(PerfModel, EmptyBatchCostsNothing) {
  const auto& m = catalog().model("llama-2-7b");
  const auto& g = catalog().gpu("a100-80gb-sxm");
  EXPECT_EQ(estimate_step(m, {}, g, {}, test_eff(g), BatchShape{}).total_s(), 0.0);
}

TEST(PerfModel, DecodeBatchLlama2_7bOnA100) {
  const auto& m = catalog().model("llama-2-7b");
  const auto& g = catalog().gpu("a100-80gb-sxm");
  BatchShape b;
  b.decode_seqs = 16;
  b.logits_tokens = 16;
  b.decode_ctx_tokens = 16000;  // 16 sequences of 1000 tokens
  const StepBreakdown s = estimate_step(m, {}, g, {}, test_eff(g), b);

  // T = 16 rows. Every GEMM is memory-bound (16 FLOP/byte against a ridge of
  // C/B = 95.6), so time = bytes / B with bytes = in·out·2 + T·(in + out)·2:
  //   QKV  4096 x 12288 (32+2·32 heads · 128): 100,663,296 + 16·16384·2 = 101,187,584
  //   O    4096 x 4096:                         33,554,432 + 16·8192·2  =  33,816,576
  //   up   4096 x 22016 (gate + up):           180,355,072 + 16·26112·2 = 181,190,656
  //   down 11008 x 4096:                        90,177,536 + 16·15104·2 =  90,660,864
  //   one layer 406,855,680; 32 layers 13,019,381,760
  //   LM head 4096 x 32000, 16 rows: 262,144,000 + 16·36096·2 = 263,299,072
  //   (its compute, 2·16·4096·32000 / C = 26.9 µs, is below 263,299,072 / B = 161 µs)
  //   GEMMs 13,282,680,832 bytes / 1.6312e12 = 8.1429 ms
  //   embedding gather: 16 rows of 4096 read (2 B) and written (2 B): 262,144 bytes, 0.16 µs
  //   at B: it takes the shortest kernel, 2 µs
  expect_rel(s.gemm_s, 13282680832.0 / kB + 2e-6);
  // Attention per context token and layer: 4·32·128 = 16384 FLOPs (0.105 ns at C) and
  // K+V 2·32·128·2 = 16384 bytes (10.04 ns at B): memory-bound.
  //   32 layers · 16384 B · 16000 tokens = 8,388,608,000 bytes / B = 5.1426 ms
  expect_rel(s.attention_s, 8388608000.0 / kB);
  EXPECT_EQ(s.communication_s, 0.0);  // tp = 1
  EXPECT_EQ(s.overhead_s, 50e-6);
  // 8.1449 + 5.1426 + 0.05 = 13.337 ms
  expect_rel(s.total_s(), (13282680832.0 + 8388608000.0) / kB + 2e-6 + 50e-6);
  EXPECT_NEAR(s.total_s(), 13.337e-3, 0.001e-3);
}

TEST(PerfModel, PrefillBatchLlama2_7bOnA100) {
  const auto& m = catalog().model("llama-2-7b");
  const auto& g = catalog().gpu("a100-80gb-sxm");
  BatchShape b;
  b.prefill_tokens = 2048;  // one fresh prompt: chunk c = 2048 after p = 0 cached tokens
  b.prefill_attn_pairs = 2048.0 * (0 + 2049.0 / 2);  // c·(p + (c+1)/2) = 2,098,176
  b.prefill_kv_tokens = 2048;                        // p + c
  b.logits_tokens = 1;
  const StepBreakdown s = estimate_step(m, {}, g, {}, test_eff(g), b);

  // T = 2048 rows: every layer GEMM is compute-bound (≈1000+ FLOP/byte, ridge 95.6), e.g.
  // QKV: 2·2048·4096·12288 = 206.2e9 FLOPs (1.32 ms) vs 167,772,160 bytes (0.10 ms).
  // Layer FLOPs = 2·T·(4096·(12288 + 4096 + 22016) + 11008·4096) = 2·2048·202,375,168
  //             = 828,928,688,128;  32 layers: 26,525,718,020,096 FLOPs / C = 170.04 ms.
  // LM head, 1 row: 2·4096·32000 = 262e6 FLOPs (1.7 µs) vs 262,144,000 + 36096·2 =
  //             262,216,192 bytes / B = 160.8 µs: memory-bound.
  // Embedding gather: 2048·4096·(2 + 2) = 33,554,432 bytes / B = 20.6 µs.
  expect_rel(s.gemm_s, 26525718020096.0 / kC + (262216192.0 + 33554432.0) / kB);
  // Attention per layer: 4·32·128·2,098,176 = 34,376,515,584 FLOPs (220 µs at C) vs
  // K,V read 2048·2·32·128·2 + Q read/O write 2048·2·32·128·2 = 67,108,864 B (41 µs).
  //   32 layers: 1,100,048,498,688 FLOPs / C = 7.0516 ms
  expect_rel(s.attention_s, 1100048498688.0 / kC);
  EXPECT_EQ(s.communication_s, 0.0);
  // 170.04 + 0.16 + 0.02 + 7.05 + 0.05 = 177.32 ms
  EXPECT_NEAR(s.total_s(), 177.32e-3, 0.01e-3);
}

TEST(PerfModel, TensorParallelHalvesComputeBoundWorkAndAddsAllReduce) {
  const auto& m = catalog().model("llama-2-7b");
  const auto& g = catalog().gpu("a100-80gb-sxm");
  BatchShape b;  // a 2048-token prefill chunk that does not sample (no LM head)
  b.prefill_tokens = 2048;
  b.prefill_attn_pairs = 2048.0 * 2049.0 / 2;
  b.prefill_kv_tokens = 2048;
  const Efficiency e = test_eff(g);
  const StepBreakdown one = estimate_step(m, {1}, g, {}, e, b);
  const StepBreakdown two = estimate_step(m, {2}, g, {}, e, b);
  // Compute-bound GEMMs and attention: each GPU does half the FLOPs. The embedding gather
  // (2048·4096·4 = 33,554,432 bytes, memory-bound) is not split.
  const double emb = 33554432.0 / kB;
  expect_rel(one.gemm_s, 26525718020096.0 / kC + emb);
  expect_rel(two.gemm_s - emb, (one.gemm_s - emb) / 2);
  expect_rel(two.attention_s, one.attention_s / 2);
  // All-reduce of 2048·4096·2 = 16,777,216 bytes over 2 GPUs, α = 3.2 µs, 300 GB/s:
  //   2·(2−1)·3.2 µs + 2·(2−1)/2 · 16,777,216 / 300e9 = 6.4 µs + 55.92 µs = 62.32 µs
  //   2 per layer · 32 layers = 64 · 62.32 µs = 3.9887 ms
  expect_rel(two.communication_s, 64 * (2 * 3.2e-6 + 16777216.0 / 300e9));
  EXPECT_NEAR(two.communication_s, 3.9887e-3, 0.0001e-3);
  // tp = 4: 2·3·α + 2·3/4 · bytes / bw per all-reduce.
  const StepBreakdown four = estimate_step(m, {4}, g, {}, e, b);
  expect_rel(four.communication_s, 64 * (6 * 3.2e-6 + 1.5 * 16777216.0 / 300e9));
}

TEST(PerfModel, Fp8GemmsUseTheFp8RateOnHopper) {
  const auto& m = catalog().model("llama-2-7b");
  const auto& g = catalog().gpu("h100-sxm");
  BatchShape b;
  b.prefill_tokens = 4096;  // compute-bound at both precisions
  Efficiency e = catalog_efficiency(g);
  Precision bf16;
  const Precision fp8 = Precision::of(DType::kFp8, DType::kFp8, DType::kBf16);
  EXPECT_EQ(fp8.math, DType::kFp8);  // W8A8 FP8
  const double t16 = estimate_step(m, {}, g, bf16, e, b).gemm_s;
  const double t8 = estimate_step(m, {}, g, fp8, e, b).gemm_s;
  // 32 · 2·4096·202,375,168 FLOPs at 989.4e12 vs 1978.9e12 (times the same efficiency),
  // plus the memory-bound embedding gather of 4096·4096·(weight + act bytes): 4 B at BF16,
  // 2 B at FP8, at 3.35e12 · memory efficiency.
  const double bw = 3.35e12 * e.memory;
  expect_rel(t16, 32 * 2 * 4096 * 202375168.0 / (989.4e12 * e.compute) + 4096.0 * 4096 * 4 / bw);
  expect_rel(t8, 32 * 2 * 4096 * 202375168.0 / (1978.9e12 * e.compute) + 4096.0 * 4096 * 2 / bw);
  // Weight-only FP8 (W8A16) dequantises and multiplies at the BF16 rate.
  EXPECT_EQ(Precision::of(DType::kFp8, DType::kBf16, DType::kBf16).math, DType::kBf16);
  // On A100 (no FP8) the same precision runs at the BF16 rate.
  const auto& a100 = catalog().gpu("a100-80gb-sxm");
  expect_rel(estimate_step(m, {}, a100, fp8, catalog_efficiency(a100), b).gemm_s,
             32 * 2 * 4096 * 202375168.0 / (312e12 * a100.compute_efficiency) +
                 4096.0 * 4096 * 2 / (2.039e12 * a100.memory_efficiency));
}

// t(n, S) = decode_affine(n).fixed_s + decode_affine(n).per_ctx_token_s · S, for every n and S,
// also for batches above the CUDA-graph limit whose eager launches (50 µs each here: 14.5 ms
// for the 7B's 290, more than its weights take to stream) partly show past the GPU's work.
TEST(PerfModel, DecodeIsAffineInContext) {
  for (const char* model_id : {"llama-2-7b", "llama-3.1-8b", "llama-3.1-70b"}) {
    for (const char* gpu_id : {"a100-80gb-sxm", "h100-sxm", "h200-sxm"}) {
      for (int tp : {1, 2, 8}) {
        const auto& m = catalog().model(model_id);
        const auto& g = catalog().gpu(gpu_id);
        Efficiency e = catalog_efficiency(g);
        e.iteration_overhead_s = 30e-6;
        e.kernel_launch_s = 50e-6;
        e.cuda_graph_max_batch = 32;
        const double slope = decode_affine(m, {tp}, g, {}, e, 1).per_ctx_token_s;
        for (int64_t n : {1, 7, 64, 256}) {
          const DecodeAffine a = decode_affine(m, {tp}, g, {}, e, n);
          EXPECT_EQ(a.per_ctx_token_s, slope);  // the slope does not depend on n
          for (int64_t ctx : {int64_t{0}, n, 1000 * n, int64_t{123457}, int64_t{5000000}}) {
            BatchShape b;
            b.decode_seqs = n;
            b.logits_tokens = n;
            b.decode_ctx_tokens = ctx;
            const double t = estimate_step(m, {tp}, g, {}, e, b).total_s();
            expect_rel(t, a.fixed_s + a.per_ctx_token_s * static_cast<double>(ctx));
          }
        }
      }
    }
  }
}

TEST(PerfModel, DecodeSlopeByHand) {
  // Llama-3.1-8B on A100, test efficiencies: per token and layer 4·32·128 = 16384 FLOPs vs
  // 2·8·128·2 = 4096 bytes (GQA). 16384 / 156e12 = 0.105 ns < 4096 / 1.6312e12 = 2.51 ns:
  // memory-bound. 32 layers: 131072 / 1.6312e12 = 80.35 ns per context token.
  const auto& g = catalog().gpu("a100-80gb-sxm");
  const DecodeAffine a = decode_affine(catalog().model("llama-3.1-8b"), {}, g, {}, test_eff(g), 8);
  expect_rel(a.per_ctx_token_s, 131072.0 / kB);
}

TEST(PerfModel, MissingLinkBandwidthIsAPreconditionError) {
  const auto& m = catalog().model("llama-2-7b");
  const auto& g = catalog().gpu("a100-80gb-sxm");
  Efficiency e;  // defaults: no link bandwidth
  BatchShape b;
  b.decode_seqs = 1;
  EXPECT_THROW(estimate_step(m, {2}, g, {}, e, b), std::invalid_argument);
  EXPECT_NO_THROW(estimate_step(m, {1}, g, {}, e, b));
}

// ---- memory fit ----------------------------------------------------------------------------

TEST(MemoryFit, Llama2_7bFitsOnA100) {
  const auto& m = catalog().model("llama-2-7b");
  const auto& g = catalog().gpu("a100-80gb-sxm");
  const MemoryFit f = fit_memory(m, {1}, g, {}, 0.9, 1e9, 2048, 16, 4096);
  // usable = 85,899,345,920 · 0.9 = 77,309,411,328
  expect_rel(f.usable_bytes, 77309411328.0);
  // weights = 6,738,415,616 · 2 = 13,476,831,232
  expect_rel(f.weight_bytes, 13476831232.0);
  // activations: 2048 · 2 · (2·4096 + (32 + 2·32)·128 + 32·128 + 3·11008)
  //            = 2048 · 2 · 57,600 = 235,929,600, plus logits 256 · 32000 · 4 = 32,768,000
  //            = 268,697,600
  expect_rel(f.activation_bytes, 268697600.0);
  EXPECT_EQ(f.reserve_bytes, 1e9);
  // kv = 77,309,411,328 − 13,476,831,232 − 268,697,600 − 1,000,000,000 = 62,563,882,496
  expect_rel(f.kv_bytes, 62563882496.0);
  // block = 16 tokens · 524,288 B = 8,388,608 B; 62,563,882,496 / 8,388,608 = 7458.2
  EXPECT_EQ(f.kv_blocks, 7458);
}

TEST(MemoryFit, Llama70bOnOneA100SaysByHowMuchAndWhatFits) {
  const auto& m = catalog().model("llama-3.1-70b");
  const auto& g = catalog().gpu("a100-80gb-sxm");
  try {
    fit_memory(m, {1}, g, {}, 0.9, 1e9, 2048, 16, 4096);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    // need = weights 70,553,706,496·2 = 141,107,412,992
    //      + activations 2048·2·(16384 + 80·128 + 64·128 + 3·28672) = 494,927,872
    //                    + logits 256·128256·4 = 131,334,144
    //      + reserve 1e9 + KV 4096 · 327,680 = 1,342,177,280
    //      = 144,075,852,288; usable 77,309,411,328; short by 66,766,440,960 = 66.8 GB
    const std::string msg = e.message();
    EXPECT_NE(msg.find("llama-3.1-70b does not fit on 1 x a100-80gb-sxm"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("weights 141 GB"), std::string::npos) << msg;
    EXPECT_NE(msg.find("77.3 GB usable"), std::string::npos) << msg;
    EXPECT_NE(msg.find("short by 66.8 GB"), std::string::npos) << msg;
    // tp 2: 70.6 GB of weights + 0.41 GB activations + 1 GB + 0.67 GB KV = 72.6 GB < 77.3.
    EXPECT_NE(e.hint().find("try tp: 2 or more"), std::string::npos) << e.hint();
    // FP8 weights at tp 1: 70.6 + 0.63 + 1 + 1.34 = 73.5 GB < 77.3.
    EXPECT_NE(e.hint().find("FP8 weights (fit at tp 1)"), std::string::npos) << e.hint();
    // Fewer batched tokens cannot make 141 GB of weights fit in 77.3 GB.
    EXPECT_EQ(e.hint().find("max_batched_tokens"), std::string::npos) << e.hint();
  }
}

TEST(MemoryFit, Llama70bFitsAtTp4) {
  const auto& m = catalog().model("llama-3.1-70b");
  const auto& g = catalog().gpu("a100-80gb-sxm");
  const MemoryFit f = fit_memory(m, {4}, g, {}, 0.9, 1e9, 2048, 16, 4096);
  // weights: the norm vectors (80·2·8192 + 8192 = 1,318,912 params) are replicated, the
  // rest split: (70,553,706,496 − 1,318,912)·2 / 4 + 1,318,912·2 = 35,278,831,616
  // activations 2048·2·(16384 + (16 + 2·2)·128 + 16·128 + 3·7168) = 2048·2·42,496
  //             = 174,063,616, plus vocab-parallel logits 256·(128256/4)·4 = 32,833,536
  //             = 206,897,152
  // kv = 77,309,411,328 − 35,278,831,616 − 206,897,152 − 1e9 = 40,823,682,560
  // block = 16 · 2·80·(8/4)·128·2 = 16 · 81,920 = 1,310,720; 40,823,682,560 / 1,310,720 = 31145.998
  expect_rel(f.weight_bytes, 35278831616.0);
  expect_rel(f.activation_bytes, 206897152.0);
  expect_rel(f.kv_bytes, 40823682560.0);
  EXPECT_EQ(f.kv_blocks, 31145);
}

TEST(MemoryFit, SuggestsFewerBatchedTokensWhenActivationsAreTheDifference) {
  // Llama-2-7B on one A100, KV room for 110,000 tokens required (6875 blocks of 16):
  //   KV 110,000 · 524,288 = 57,671,680,000; usable 77,309,411,328; weights 13,476,831,232;
  //   reserve 1e9 → left for activations 5,160,900,096.
  //   activations(T) = T·2·57,600 + 256·32000·4 = 115,200·T + 32,768,000
  //   → T ≤ (5,160,900,096 − 32,768,000) / 115,200 = 44,515: 65536 does not fit, 32768 does.
  const auto& g = catalog().gpu("a100-80gb-sxm");
  try {
    fit_memory(catalog().model("llama-2-7b"), {1}, g, {}, 0.9, 1e9, 65536, 16, 110000);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_NE(e.hint().find("max_batched_tokens: 32768 or less"), std::string::npos) << e.hint();
  }
  EXPECT_NO_THROW(
      fit_memory(catalog().model("llama-2-7b"), {1}, g, {}, 0.9, 1e9, 32768, 16, 110000));
}

TEST(MemoryFit, TpMustDivideTheHeads) {
  const auto& g = catalog().gpu("a100-80gb-sxm");
  EXPECT_THROW(fit_memory(catalog().model("llama-2-7b"), {3}, g, {}, 0.9, 1e9, 2048, 16, 4096),
               InputError);
}

}  // namespace
}  // namespace fleetsim::hw
