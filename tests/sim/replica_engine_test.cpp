// The replica engine's own contract (replica_engine.h), seen through the policies that set
// its rules: closed-form decode stretches, paged against reserved KV, closed batches with
// padding rows, and how token gaps are reported. Each case is small enough to check by
// hand; the math is next to each assertion.
#include "sim/serving/replica_engine.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "sim/serving/registry.h"
#include "tests/sim/serving_test_util.h"

using namespace fleetsim;
using namespace fleetsim::serving;
using workload::RequestSpec;
using namespace fleetsim::serving::testing;

namespace {

struct Calls final : ServingObserver {
  std::vector<SegmentRecord> segments;
  std::vector<std::pair<SimTime, uint64_t>> gap_calls;  // (gap, count) of on_token_gaps
  std::vector<std::pair<uint64_t, SimTime>> done;       // (id, time) in completion order
  int rejected = 0;
  void on_segment(const SegmentRecord& s) override { segments.push_back(s); }
  void on_token_gaps(SimTime g, uint64_t c) override { gap_calls.emplace_back(g, c); }
  void on_completion(const RequestRecord& r) override { done.emplace_back(r.spec->id, r.done_ns); }
  void on_reject(const RequestSpec&, int, RejectReason, SimTime) override { ++rejected; }
};

Calls run(const std::string& policy_name, const StepModel& steps, const ServingConfig& cfg,
          std::vector<RequestSpec> reqs) {
  core::Engine eng;
  Calls calls;
  const std::unique_ptr<Replica> rep = policy(policy_name).make(0, eng, calls, steps, cfg);
  run_to_completion(eng, *rep, std::move(reqs));
  return calls;
}

ServingConfig config(int64_t max_seqs, int64_t kv_blocks, int block_tokens, bool ff) {
  ServingConfig c;
  c.block_tokens = block_tokens;
  c.kv_blocks = kv_blocks;
  c.max_num_seqs = max_seqs;
  c.max_batched_tokens = 4096;
  c.fast_forward = ff;
  return c;
}

// Decode: 10 ms per decoding row (a batch of n costs 10·n ms). Prefill: 1 ms per prompt
// token, plus 10 ms per decoding row in the same iteration.
StepModel per_row_steps() {
  return StepModel({0, 10 * kMs, 20 * kMs, 30 * kMs}, 0.0, [](const hw::BatchShape& b) {
    return b.prefill_tokens * kMs + b.decode_seqs * 10 * kMs;
  });
}

TEST(ReplicaEngine, AStretchRunsToTheFirstCompletionAndPagedKvGrowsAtBlockBoundaries) {
  const StepModel steps = simple_steps(8, 10);
  // vllm, blocks of 4 tokens. A (t=0, 4 prompt, 6 output).
  // Prefill 0..4 ms (1 ms per token): ⌈4/4⌉ = 1 block; first token at 4.
  // Five decodes (tokens 2..6), 10 ms each, 4..54 ms: they write context positions 4..8 and
  // take a new block at positions 4 and 8, so 1 + 2 = 3 blocks at the end.
  const Calls fast = run("vllm", steps, config(8, 100, 4, true), {req(0, 0, 4, 6)});
  ASSERT_EQ(fast.segments.size(), 2u);  // the prefill, then one stretch of 5 iterations
  EXPECT_EQ(fast.segments[1].iterations, 5);
  EXPECT_EQ(fast.segments[1].start_ns, 4 * kMs);
  EXPECT_EQ(fast.segments[1].end_ns, 54 * kMs);  // 4 + 5 × 10
  EXPECT_EQ(fast.segments[1].kv_blocks_start, 1);
  EXPECT_EQ(fast.segments[1].kv_blocks_end, 3);
  EXPECT_EQ(fast.done, (std::vector<std::pair<uint64_t, SimTime>>{{0, 54 * kMs}}));
  // One iteration per event: the same end, with the blocks after each iteration: position 4
  // → 2 blocks, positions 5, 6, 7 → still 2, position 8 → 3.
  const Calls slow = run("vllm", steps, config(8, 100, 4, false), {req(0, 0, 4, 6)});
  ASSERT_EQ(slow.segments.size(), 6u);
  std::vector<int64_t> kv_end;
  for (size_t i = 1; i < slow.segments.size(); ++i)
    kv_end.push_back(slow.segments[i].kv_blocks_end);
  EXPECT_EQ(kv_end, (std::vector<int64_t>{2, 2, 2, 2, 3}));
  EXPECT_EQ(slow.done, fast.done);
}

TEST(ReplicaEngine, ReservedKvIsTakenWholeAtAdmission) {
  const StepModel steps = simple_steps(8, 10);
  // orca, blocks of 4 tokens. A (4 prompt, 6 output) reserves ⌈(4 + 6)/4⌉ = 3 blocks when
  // admitted, and holds 3 through its prefill (0..4 ms) and its 5 decodes (4..54 ms).
  const Calls c = run("orca", steps, config(8, 100, 4, true), {req(0, 0, 4, 6)});
  ASSERT_EQ(c.segments.size(), 2u);
  for (const SegmentRecord& s : c.segments) {
    EXPECT_EQ(s.kv_blocks_start, 3);
    EXPECT_EQ(s.kv_blocks_end, 3);
  }
  EXPECT_EQ(c.done, (std::vector<std::pair<uint64_t, SimTime>>{{0, 54 * kMs}}));
}

TEST(ReplicaEngine, ARequestFitsPagedKvThatItsReservationWouldNot) {
  const StepModel steps = simple_steps(8, 10);
  // 2 blocks of 4 tokens. A (4 prompt, 5 output): paged, its final context is
  // 4 + 5 − 1 = 8 tokens (the last token is never fed back) = 2 blocks: it runs. Reserved,
  // it needs ⌈(4 + 5)/4⌉ = 3 blocks > 2: rejected on arrival.
  const Calls paged = run("vllm", steps, config(8, 2, 4, true), {req(0, 0, 4, 5)});
  EXPECT_EQ(paged.rejected, 0);
  EXPECT_EQ(paged.done.size(), 1u);
  const Calls reserved = run("orca", steps, config(8, 2, 4, true), {req(0, 0, 4, 5)});
  EXPECT_EQ(reserved.rejected, 1);
  EXPECT_TRUE(reserved.done.empty());
}

TEST(ReplicaEngine, AClosedBatchKeepsFinishedRowsAsPaddingUntilItEnds) {
  const StepModel steps = per_row_steps();
  // A (t=0, 2 prompt, 2 output), B (t=0, 2 prompt, 4 output); both prefill 0..4 ms
  // (4 tokens, no decodes).
  // static: the batch keeps 2 rows to the end: 3 decodes of 20 ms, 4..64 ms. A has its 2nd
  //   (last) token at 24 but stays as padding; B's tokens come at 24, 44, 64. Both return
  //   at 64.
  // orca: A leaves at 24; B's last 2 decodes cost 10 ms each: 24..34..44.
  for (bool ff : {true, false}) {
    SCOPED_TRACE(ff ? "fast" : "step");
    const Calls s =
        run("static", steps, config(2, 100, 16, ff), {req(0, 0, 2, 2), req(1, 0, 2, 4)});
    EXPECT_EQ(s.done, (std::vector<std::pair<uint64_t, SimTime>>{{0, 64 * kMs}, {1, 64 * kMs}}));
    int64_t tokens = 0;
    for (const SegmentRecord& r : s.segments) tokens += r.decode_tokens;
    EXPECT_EQ(tokens, 4);  // emitted tokens only: A 1 + B 3; padding rows emit none
    const Calls o = run("orca", steps, config(2, 100, 16, ff), {req(0, 0, 2, 2), req(1, 0, 2, 4)});
    EXPECT_EQ(o.done, (std::vector<std::pair<uint64_t, SimTime>>{{0, 24 * kMs}, {1, 44 * kMs}}));
  }
  // With fast_forward a closed batch's stretch ends when a row stops emitting: [4, 24] with
  // 2 emitting rows, then [24, 64] (2 iterations) with 1.
  const Calls s =
      run("static", steps, config(2, 100, 16, true), {req(0, 0, 2, 2), req(1, 0, 2, 4)});
  ASSERT_EQ(s.segments.size(), 3u);
  EXPECT_EQ(s.segments[1].end_ns, 24 * kMs);
  EXPECT_EQ(s.segments[1].decode_tokens, 2);  // 1 iteration × 2 emitting
  EXPECT_EQ(s.segments[2].iterations, 2);
  EXPECT_EQ(s.segments[2].decode_tokens, 2);  // 2 iterations × 1 emitting
}

TEST(ReplicaEngine, AClosedBatchReturnsInTheOrderItsMembersStoppedEmitting) {
  const StepModel steps = simple_steps(8, 10);
  // static, one batch {A (4 output), B (2 output), C (2 output)}, all at t=0, 1-token
  // prompts: prefill 0..3 ms, 3 decodes 3..33 ms. Members stop emitting by output length,
  // arrival order breaking ties: B, C, then A; the batch returns at 33 in that order.
  const Calls c = run("static", steps, config(8, 100, 16, true),
                      {req(0, 0, 1, 4), req(1, 0, 1, 2), req(2, 0, 1, 2)});
  EXPECT_EQ(c.done, (std::vector<std::pair<uint64_t, SimTime>>{
                        {1, 33 * kMs}, {2, 33 * kMs}, {0, 33 * kMs}}));
}

TEST(ReplicaEngine, BackToBackPoliciesReportAnIterationsGapsInOneCall) {
  const StepModel steps = simple_steps(8, 10);
  // A, B (t=0, 2 prompt, 2 output): prefill 0..4 ms, then one decode 4..14 ms gives each
  // its 2nd token, a 10 ms gap.
  // vllm reports a newly joined sequence's first gap on its own (its last token may come
  // from an earlier iteration): two calls of one gap each.
  const Calls v = run("vllm", steps, config(8, 100, 16, true), {req(0, 0, 2, 2), req(1, 0, 2, 2)});
  EXPECT_EQ(v.gap_calls, (std::vector<std::pair<SimTime, uint64_t>>{{10 * kMs, 1}, {10 * kMs, 1}}));
  // orca runs iterations back to back: one call of 2 gaps.
  const Calls o = run("orca", steps, config(8, 100, 16, true), {req(0, 0, 2, 2), req(1, 0, 2, 2)});
  EXPECT_EQ(o.gap_calls, (std::vector<std::pair<SimTime, uint64_t>>{{10 * kMs, 2}}));
}

TEST(ReplicaEngine, ASequenceThatAdvancesMoreThanABlockPerIterationTakesEveryBlockItCrosses) {
  const StepModel steps = simple_steps(8, 10);
  // Blocks of 3 tokens; forced tokens with share 0.75 give τ = 1 / (1 − 0.75) = 4 tokens per
  // decode iteration, more than a block. A (t=0, 3 prompt, 9 output).
  // Prefill 0..3 ms: ⌈3/3⌉ = 1 block, first token at 3 ms; then ⌈(9 − 1) / 4⌉ = 2 decode
  // iterations, 10 ms each (3..13, 13..23 ms).
  // Iteration 1 writes positions 3..6: it crosses the block boundaries at 3 and 6, so it
  // takes 2 blocks (1 + 2 = 3). Iteration 2 writes 7..10: the boundary at 9, 1 block
  // (3 + 1 = 4 = ⌈11/3⌉ for the 11 positions 0..10).
  // (Counting one block per iteration at most gave 1 + 1 + 1 = 3, one short.)
  for (bool ff : {true, false}) {
    SCOPED_TRACE(ff ? "fast_forward" : "one iteration per event");
    ServingConfig cfg = config(8, 100, 3, ff);
    cfg.forced_token_share = 0.75;
    const Calls c = run("vllm", steps, cfg, {req(0, 0, 3, 9)});
    if (ff) {
      ASSERT_EQ(c.segments.size(), 2u);  // the prefill, then one stretch of 2 iterations
      EXPECT_EQ(c.segments[1].iterations, 2);
      EXPECT_EQ(c.segments[1].kv_blocks_start, 1);
      EXPECT_EQ(c.segments[1].kv_blocks_end, 4);
    } else {
      ASSERT_EQ(c.segments.size(), 3u);
      EXPECT_EQ(c.segments[1].kv_blocks_start, 1);
      EXPECT_EQ(c.segments[1].kv_blocks_end, 3);
      EXPECT_EQ(c.segments[2].kv_blocks_end, 4);
    }
    EXPECT_EQ(c.done, (std::vector<std::pair<uint64_t, SimTime>>{{0, 23 * kMs}}));
  }
}

}  // namespace
