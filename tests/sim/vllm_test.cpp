// Batching behaviour of the vLLM-style replica on tiny hand-checked cases, and the fast
// path (closed-form decode stretches) against one-iteration-per-event stepping on random
// small scenarios, with the replica's invariants checked before every event.
#include "sim/serving/vllm.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <vector>

#include "sim/core/rng.h"
#include "sim/serving/registry.h"
#include "tests/sim/serving_test_util.h"

using namespace fleetsim;
using namespace fleetsim::serving;
using workload::RequestSpec;
using namespace fleetsim::serving::testing;

namespace {

struct Outcome {
  SimTime scheduled = -1, first = -1, done = -1;
  int preemptions = 0;
  bool operator==(const Outcome& o) const {
    return scheduled == o.scheduled && first == o.first && done == o.done &&
           preemptions == o.preemptions;
  }
};

struct Log final : ServingObserver {
  std::map<uint64_t, Outcome> out;
  std::vector<SimTime> gaps;  // every inter-token gap, expanded
  int rejected = 0;
  int preemptions = 0;
  void on_preemption(const RequestSpec&, int, SimTime) override { ++preemptions; }
  void on_completion(const RequestRecord& r) override {
    out[r.spec->id] = {r.scheduled_ns, r.first_token_ns, r.done_ns, r.preemptions};
  }
  void on_reject(const RequestSpec&, int, RejectReason, SimTime) override { ++rejected; }
  std::vector<std::pair<int64_t, int64_t>> lookups;  // (prefill tokens, cached tokens)
  int64_t host_loaded = 0;
  void on_prefix_host_load(int, int64_t t) override { host_loaded += t; }
  void on_prefix_lookup(int, int64_t p, int64_t h) override { lookups.emplace_back(p, h); }
  void on_token_gaps(SimTime g, uint64_t c) override { gaps.insert(gaps.end(), c, g); }
  void on_token_gap_series(const StepSeries& s, int64_t k, uint64_t per) override {
    for (int64_t j = 1; j < k; ++j) gaps.insert(gaps.end(), per, s.step_ns(j));
  }
};

struct RunLog {
  Log log;
  int64_t iterations = 0;
  uint64_t events = 0;
  int64_t cache_entries = 0, evictions = 0;
};

RunLog simulate(const StepModel& steps, ServingConfig cfg, std::vector<RequestSpec> reqs) {
  core::Engine eng;
  RunLog run;
  // The vllm policy: prefill-first (Vllm), or chunked prefill (Sarathi) with chunked_prefill.
  const std::unique_ptr<Replica> made = policy("vllm").make(0, eng, run.log, steps, cfg);
  ReplicaEngine& rep = static_cast<ReplicaEngine&>(*made);
  drive(eng, rep, std::move(reqs));
  // Only cached prefixes (if any) still hold KV blocks.
  const int64_t per_entry = cfg.prefix_caching ? cfg.prefix_block_tokens / cfg.block_tokens : 0;
  EXPECT_EQ(rep.kv_blocks_used(), rep.prefix_cache().entries() * per_entry);
  run.cache_entries = rep.prefix_cache().entries();
  run.evictions = rep.prefix_cache().evictions();
  run.iterations = rep.iterations();
  run.events = eng.events_dispatched();
  return run;
}

ServingConfig config(bool chunked, int64_t budget, int64_t kv_blocks, int block_tokens = 16) {
  ServingConfig c;
  c.block_tokens = block_tokens;
  c.kv_blocks = kv_blocks;
  c.max_num_seqs = 8;
  c.max_batched_tokens = budget;
  c.chunked_prefill = chunked;
  return c;
}

RequestSpec with_hashes(RequestSpec r, uint32_t begin, uint32_t count) {
  r.hash_begin = begin;
  r.hash_count = count;
  return r;
}

TEST(Vllm, PrefillFirstTwoRequests) {
  const StepModel steps = simple_steps(8, 10);
  // A (t=0, 100 prompt, 3 output): prefill-only iteration 0..100 ms → first token at 100.
  // B (t=50, 200 prompt, 2 output) waits; at 100 it is admitted: prefill 100..300 ms (the
  //   running decode of A waits: prefill-first). B's first token at 300: TTFT 250 ms.
  // 300..310: decode A and B → B's 2nd token: B done at 310 (e2e 260 ms); A has 2 tokens.
  // 310..320: decode A → A done at 320 (TTFT 100, e2e 320, TPOT (320-100)/2 = 110 ms).
  // Gaps: A 100→310 = 210 ms, 310→320 = 10 ms; B 300→310 = 10 ms.
  for (bool ff : {true, false}) {
    ServingConfig cfg = config(false, 4096, 1000);
    cfg.fast_forward = ff;
    RunLog r = simulate(steps, cfg, {req(0, 0, 100, 3), req(1, 50 * kMs, 200, 2)});
    EXPECT_EQ(r.log.out[0], (Outcome{0, 100 * kMs, 320 * kMs, 0}));
    EXPECT_EQ(r.log.out[1], (Outcome{100 * kMs, 300 * kMs, 310 * kMs, 0}));
    std::vector<SimTime> gaps = r.log.gaps;
    std::sort(gaps.begin(), gaps.end());
    EXPECT_EQ(gaps, (std::vector<SimTime>{10 * kMs, 10 * kMs, 210 * kMs}));
  }
}

TEST(Vllm, ChunkedPrefillSharesIterationsWithDecodes) {
  const StepModel steps = simple_steps(8, 10);
  // Budget 64 tokens. A (t=0, 100 prompt, 2 output): chunk 64 (0..64 ms), chunk 36
  //   (64..100 ms) → A's first token at 100.
  // B (t=70, 30 prompt, 1 output) arrives during A's second chunk; at 100 the iteration
  //   holds A's decode (1 token) and B's whole prompt (30 ≤ 64 - 1): 30 ms + 10 ms = 40 ms.
  // At 140: A's 2nd token (A done, e2e 140) and B's first and only token (B done, TTFT 70).
  for (bool ff : {true, false}) {
    ServingConfig cfg = config(true, 64, 1000);
    cfg.fast_forward = ff;
    RunLog r = simulate(steps, cfg, {req(0, 0, 100, 2), req(1, 70 * kMs, 30, 1)});
    EXPECT_EQ(r.log.out[0], (Outcome{0, 100 * kMs, 140 * kMs, 0}));
    EXPECT_EQ(r.log.out[1], (Outcome{100 * kMs, 140 * kMs, 140 * kMs, 0}));
    EXPECT_EQ(r.iterations, 3);
  }
}

TEST(Vllm, WholePromptsJoinTheDecodesWithoutSplitting) {
  const StepModel steps = simple_steps(8, 10);
  // TensorRT-LLM-style in-flight batching: budget 64, whole prompts only.
  // A (t=0, 100 prompt, 2 output): the first prompt of an iteration may exceed the budget,
  //   so A prefills whole, 0..100 ms → A's first token at 100.
  // B (t=10, 30 prompt, 1 output) and C (t=20, 40 prompt, 1 output) wait. At 100 the
  //   iteration holds A's decode (1 token) and B's whole prompt (1 + 30 = 31 ≤ 64); C's 40
  //   would make 71 > 64, so C waits (split prompts would have taken 33 of C's tokens):
  //   30 ms + 10 ms = 40 ms, 100..140. A done at 140 (2nd token), B done at 140 (TTFT 130).
  // At 140 only C is left: its whole prompt, 140..180 → C done at 180 (TTFT 160).
  // TensorRT-LLM's reserving admission (room for all three lives here) keeps the token
  // budget, so it gives the same times.
  for (bool reserve : {false, true}) {
    for (bool ff : {true, false}) {
      ServingConfig cfg = config(true, 64, 1000);
      cfg.split_prompts = false;
      cfg.fast_forward = ff;
      cfg.reserve_at_admission = reserve;
      RunLog r = simulate(steps, cfg,
                          {req(0, 0, 100, 2), req(1, 10 * kMs, 30, 1), req(2, 20 * kMs, 40, 1)});
      EXPECT_EQ(r.log.out[0], (Outcome{0, 100 * kMs, 140 * kMs, 0}));
      EXPECT_EQ(r.log.out[1], (Outcome{100 * kMs, 140 * kMs, 140 * kMs, 0}));
      EXPECT_EQ(r.log.out[2], (Outcome{140 * kMs, 180 * kMs, 180 * kMs, 0}));
      EXPECT_EQ(r.iterations, 3);
    }
  }
}

TEST(Vllm, PreemptionByRecompute) {
  const StepModel steps = simple_steps(8, 10);
  // 3 KV blocks of 4 tokens. A and B (t=0, 4 prompt, 5 output each) are admitted together
  //   (1 block each) and prefilled 0..8 ms: both first tokens at 8 (context 4 each).
  // At 8 each needs a 2nd block to write position 4, but only 1 is free: B (the later
  //   arrival) is preempted, freeing its block; B waits with 1 token generated.
  // A decodes alone 8..48 ms (4 iterations, tokens 2..5; it takes its 2nd block) and
  //   completes at 48. B's readmission needs blocks for 4 + 1 = 5 tokens = 2 blocks, which
  //   only fit once A is gone.
  // 48..53: B recomputes 5 tokens (5 ms) and samples its 2nd token; 53..83: 3 decodes.
  for (bool ff : {true, false}) {
    ServingConfig cfg = config(false, 4096, 3, 4);
    cfg.fast_forward = ff;
    RunLog r = simulate(steps, cfg, {req(0, 0, 4, 5), req(1, 0, 4, 5)});
    EXPECT_EQ(r.log.out[0], (Outcome{0, 8 * kMs, 48 * kMs, 0}));
    EXPECT_EQ(r.log.out[1], (Outcome{0, 8 * kMs, 83 * kMs, 1}));
  }
}

TEST(Vllm, AdmissionThatReservesTheWholeLifeNeverPreempts) {
  const StepModel steps = simple_steps(8, 10);
  // As PreemptionByRecompute (3 KV blocks of 4 tokens; A and B at t=0, 4 prompt, 5 output)
  // with TensorRT-LLM's guaranteed-no-evict admission: each needs ceil((4 + 5 - 1) / 4) = 2
  // blocks for its whole life (the last token is never written back). A claims 2; B's 2
  // more would make 4 > 3, so B waits although its prompt's 1 block is free.
  // A: prefill 0..4 ms (first token at 4), 4 decodes 4..44, done at 44, no preemption.
  // B: admitted at 44, prefill 44..48 (first token at 48), 4 decodes 48..88.
  for (bool ff : {true, false}) {
    ServingConfig cfg = config(false, 4096, 3, 4);
    cfg.fast_forward = ff;
    cfg.reserve_at_admission = true;
    RunLog r = simulate(steps, cfg, {req(0, 0, 4, 5), req(1, 0, 4, 5)});
    EXPECT_EQ(r.log.out[0], (Outcome{0, 4 * kMs, 44 * kMs, 0}));
    EXPECT_EQ(r.log.out[1], (Outcome{44 * kMs, 48 * kMs, 88 * kMs, 0}));
    EXPECT_EQ(r.log.preemptions, 0);
  }
  // With 4 blocks both claims fit (2 + 2 = 4): prefilled together 0..8, first tokens at 8,
  // 4 decodes 8..48 (the reservation changes nothing when the KV cache is big enough).
  for (bool ff : {true, false}) {
    ServingConfig cfg = config(false, 4096, 4, 4);
    cfg.fast_forward = ff;
    cfg.reserve_at_admission = true;
    RunLog r = simulate(steps, cfg, {req(0, 0, 4, 5), req(1, 0, 4, 5)});
    EXPECT_EQ(r.log.out[0], (Outcome{0, 8 * kMs, 48 * kMs, 0}));
    EXPECT_EQ(r.log.out[1], (Outcome{0, 8 * kMs, 48 * kMs, 0}));
  }
}

TEST(Vllm, ReservingAdmissionSubtractsCachedPrefixes) {
  const StepModel steps = simple_steps(8, 10);
  // Prefix caching: KV blocks of 4 tokens, prefix blocks of 8 (2 KV blocks), 8 KV blocks.
  // A (t=0, 20 prompt, 2 output, hashes [11, 12]): claims ceil(21 / 4) = 6; prefill 0..20,
  //   decode 20..30. Its 2 entries (4 blocks) stay cached, unreferenced.
  // B (t=100, 20 prompt, 9 output, same hashes): 16 tokens hit; it claims ceil(28 / 4) = 7
  //   less the 4 cached = 3, and pins the 4: 3 + 4 = 7 <= 8, admitted (without subtracting
  //   the hits, 7 + 4 = 11 > 8 would keep it out). Computes 4 tokens 100..104, 8 decodes
  //   104..184.
  // C (t=110, 4 prompt, 5 output, no hashes): claims 2; 3 + 4 pinned + 2 = 9 > 8, so it
  //   waits for B (paged admission would take it at once: its 1 prompt block is free).
  //   184..188 prefill, 4 decodes 188..228.
  const std::vector<uint64_t> hashes = {11, 12};
  for (bool ff : {true, false}) {
    ServingConfig cfg = config(false, 64, 8, 4);
    cfg.fast_forward = ff;
    cfg.prefix_caching = true;
    cfg.prefix_block_tokens = 8;
    cfg.hashes = &hashes;
    cfg.reserve_at_admission = true;
    RunLog r = simulate(steps, cfg,
                        {with_hashes(req(0, 0, 20, 2), 0, 2),
                         with_hashes(req(1, 100 * kMs, 20, 9), 0, 2), req(2, 110 * kMs, 4, 5)});
    EXPECT_EQ(r.log.out[0], (Outcome{0, 20 * kMs, 30 * kMs, 0}));
    EXPECT_EQ(r.log.out[1], (Outcome{100 * kMs, 104 * kMs, 184 * kMs, 0}));
    EXPECT_EQ(r.log.out[2], (Outcome{184 * kMs, 188 * kMs, 228 * kMs, 0}));
  }
}

TEST(Vllm, RejectsRequestsThatCanNeverRun) {
  const StepModel steps = simple_steps(8, 10);
  ServingConfig cfg = config(false, 256, 4, 4);  // 16 KV tokens, 256-token batches
  cfg.max_context_tokens = 1000;
  // 10 + 8 - 1 = 17 KV tokens > 16: never fits the cache.
  // 300-token prompt > 256 batched tokens without chunked prefill.
  // 900 + 200 > 1000 context.
  RunLog r = simulate(steps, cfg,
                      {req(0, 0, 10, 8), req(1, 0, 300, 1), req(2, 0, 900, 200), req(3, 0, 8, 8)});
  EXPECT_EQ(r.log.rejected, 3);
  EXPECT_EQ(r.log.out.size(), 1u);  // 8 + 8 - 1 = 15 tokens fit
}

TEST(Vllm, PrefillFirstCutsALongPromptIntoPrefillIterationsWhenSplitting) {
  const StepModel steps = simple_steps(8, 10);
  // SGLang-style prefill-first, budget 64 tokens, split_long_prompts.
  // A (t=0, 100 prompt, 2 output) is longer than the budget: 64 tokens 0..64 ms.
  // B (t=10, 40 prompt, 1 output) waits. At 64 the rest of A goes first (36 tokens), then B
  //   is cut to the 64 - 36 = 28 tokens left: 64..128 ms. A's prompt is complete: its first
  //   token at 128.
  // At 128 B's last 12 tokens run alone (prefill-first: A's decode waits), 128..140 → B's
  //   first and only token at 140 (TTFT 130). 140..150: A's decode → A done at 150.
  for (bool ff : {true, false}) {
    ServingConfig cfg = config(false, 64, 1000);
    cfg.split_long_prompts = true;
    cfg.fast_forward = ff;
    RunLog r = simulate(steps, cfg, {req(0, 0, 100, 2), req(1, 10 * kMs, 40, 1)});
    EXPECT_EQ(r.log.rejected, 0);
    EXPECT_EQ(r.log.out[0], (Outcome{0, 128 * kMs, 150 * kMs, 0}));
    EXPECT_EQ(r.log.out[1], (Outcome{64 * kMs, 140 * kMs, 140 * kMs, 0}));
    EXPECT_EQ(r.iterations, 4);
  }
  // vLLM V0 (the default): A can never run and is rejected; B prefills alone 10..50 ms.
  ServingConfig cfg = config(false, 64, 1000);
  RunLog r = simulate(steps, cfg, {req(0, 0, 100, 2), req(1, 10 * kMs, 40, 1)});
  EXPECT_EQ(r.log.rejected, 1);
  EXPECT_EQ(r.log.out[1], (Outcome{10 * kMs, 50 * kMs, 50 * kMs, 0}));
}

TEST(Vllm, PrefixHitSkipsCachedPrefillAndEvictsLeastRecentlyUsed) {
  const StepModel steps = simple_steps(8, 10);
  // KV blocks of 4 tokens, prefix (hash) blocks of 8 tokens = 2 KV blocks, 8 KV blocks.
  // Hashes: A and B share [11, 12]; C has [21, 22, 23]; D starts with 11 then differs.
  const std::vector<uint64_t> hashes = {11, 12, 21, 22, 23, 11, 99};
  for (bool chunked : {false, true}) {
    for (bool ff : {true, false}) {
      ServingConfig cfg = config(chunked, 64, 8, 4);
      cfg.fast_forward = ff;
      cfg.prefix_caching = true;
      cfg.prefix_block_tokens = 8;
      cfg.hashes = &hashes;
      // A (t=0, 20 prompt, 2 output): nothing cached; prefill 0..20 ms, first token at 20;
      //   its two full prefix blocks (16 tokens) go into the cache. Decode 20..30: done.
      // B (t=100, same 20-token prompt prefix): 16 tokens cached (2 entries; at most
      //   (20−1)/8 = 2 may be used), only 4 computed: 100..104 ms. TTFT 4 ms, not 20.
      // C (t=200, 24 prompt, hashes 21..23): needs 6 blocks; 8 − 4 cached = 4 free, so one
      //   unreferenced entry is evicted — the deepest of A's prefix, 12 — and C computes 24
      //   tokens 200..224. Its 3 entries join the cache: 11, 21, 22, 23 = 8 blocks.
      // D (t=300, 20 prompt, hashes [11, 99]): 11 is cached (8 tokens), 99 is not; it needs
      //   blocks_for(20) − 2 = 3 blocks and evicts C's deepest two (23, then 22) to get 4;
      //   computes 12 tokens 300..312. Then 99's entry is added: 11, 21, 99 = 6 blocks.
      RunLog r = simulate(
          steps, cfg,
          {with_hashes(req(0, 0, 20, 2), 0, 2), with_hashes(req(1, 100 * kMs, 20, 1), 0, 2),
           with_hashes(req(2, 200 * kMs, 24, 1), 2, 3),
           with_hashes(req(3, 300 * kMs, 20, 1), 5, 2)});
      SCOPED_TRACE(std::string(chunked ? "chunked" : "prefill-first") + (ff ? " fast" : " step"));
      EXPECT_EQ(r.log.out[0], (Outcome{0, 20 * kMs, 30 * kMs, 0}));
      EXPECT_EQ(r.log.out[1], (Outcome{100 * kMs, 104 * kMs, 104 * kMs, 0}));
      EXPECT_EQ(r.log.out[2], (Outcome{200 * kMs, 224 * kMs, 224 * kMs, 0}));
      EXPECT_EQ(r.log.out[3], (Outcome{300 * kMs, 312 * kMs, 312 * kMs, 0}));
      EXPECT_EQ(r.log.lookups,
                (std::vector<std::pair<int64_t, int64_t>>{{20, 0}, {20, 16}, {24, 0}, {20, 8}}));
      EXPECT_EQ(r.evictions, 3);
      EXPECT_EQ(r.cache_entries, 3);
    }
  }
}

TEST(Vllm, AnAnswersBlocksAreCachedForTheSessionsNextTurn) {
  const StepModel steps = simple_steps(8, 10);
  // Fleet sessions' generated hashes (no shared system prompt): KV blocks of 4 tokens,
  // prefix blocks of 8 tokens (2 KV blocks); 1 ms a prompt token, 10 ms a decode step.
  // A (t=0, session 1, 6-token prompt: no whole prefix block, 12 output): prefill 0..6 ms,
  //   11 decodes to 116 ms. Its KV then holds 6 + 12 − 1 = 17 tokens: the answer completes
  //   17 / 8 = 2 prefix blocks, which are cached when it finishes (vLLM v1, SGLang).
  // B (t=500 ms, session 1's next turn: 6 + 12 + 2 = 20-token prompt, 1 output): finds both
  //   blocks (16 tokens; at most (20 − 1) / 8 = 2 may be used) and computes 4: 500..504 ms.
  //   Caching the prompt's blocks alone would have found nothing (A had none) and taken 20.
  for (bool chunked : {false, true}) {
    for (bool ff : {true, false}) {
      ServingConfig cfg = config(chunked, 64, 8, 4);
      cfg.fast_forward = ff;
      cfg.prefix_caching = true;
      cfg.prefix_block_tokens = 8;
      cfg.generated_shared_blocks = 0;
      RunLog r = simulate(
          steps, cfg,
          {with_hashes(req(0, 0, 6, 12), 1, 0), with_hashes(req(1, 500 * kMs, 20, 1), 1, 2)});
      SCOPED_TRACE(std::string(chunked ? "chunked" : "prefill-first") + (ff ? " fast" : " step"));
      EXPECT_EQ(r.log.out[0], (Outcome{0, 6 * kMs, 116 * kMs, 0}));
      EXPECT_EQ(r.log.out[1], (Outcome{500 * kMs, 504 * kMs, 504 * kMs, 0}));
      EXPECT_EQ(r.log.lookups, (std::vector<std::pair<int64_t, int64_t>>{{6, 0}, {20, 16}}));
      EXPECT_EQ(r.cache_entries, 2);
    }
  }
}

TEST(Vllm, APromptWithoutAWholeBlockStillEvictsCachedBlocks) {
  const StepModel steps = simple_steps(8, 10);
  // As above, 5 KV blocks. After A (done at 116 ms) its answer's 2 entries hold 4 blocks,
  // 1 is free. C (t=300 ms, another session, 7-token prompt: no whole prefix block, 1
  // output) needs blocks_for(7) = 2: it evicts the least recently used entry (A's deepest)
  // and runs 300..307 ms. (It once waited forever: only requests with a whole prompt block
  // counted the cache's unreferenced blocks as free.)
  for (bool chunked : {false, true}) {
    for (bool ff : {true, false}) {
      ServingConfig cfg = config(chunked, 64, 5, 4);
      cfg.fast_forward = ff;
      cfg.prefix_caching = true;
      cfg.prefix_block_tokens = 8;
      cfg.generated_shared_blocks = 0;
      RunLog r = simulate(
          steps, cfg,
          {with_hashes(req(0, 0, 6, 12), 1, 0), with_hashes(req(1, 300 * kMs, 7, 1), 2, 0)});
      SCOPED_TRACE(std::string(chunked ? "chunked" : "prefill-first") + (ff ? " fast" : " step"));
      EXPECT_EQ(r.log.out[1], (Outcome{300 * kMs, 307 * kMs, 307 * kMs, 0}));
      EXPECT_EQ(r.evictions, 1);
      EXPECT_EQ(r.cache_entries, 1);
    }
  }
}

TEST(PrefixCache, MatchPinUnpinAndEvictionOrder) {
  PrefixCache c;
  const uint64_t a[] = {1, 2, 3}, b[] = {1, 2, 7};
  EXPECT_EQ(c.match(a, 3), 0);
  EXPECT_TRUE(c.insert_pinned(1));
  EXPECT_TRUE(c.insert_pinned(2));
  EXPECT_TRUE(c.insert_pinned(3));
  EXPECT_FALSE(c.insert_pinned(1));  // already there: a second reference
  EXPECT_EQ(c.match(a, 3), 3);
  EXPECT_EQ(c.match(b, 3), 2);  // diverges at the third block
  EXPECT_EQ(c.evictable(), 0);
  EXPECT_FALSE(c.evict_one());  // everything is referenced
  c.unpin(a, 3);                // 1 still has one reference
  EXPECT_EQ(c.refs(1), 1);
  EXPECT_EQ(c.evictable(), 2);
  EXPECT_TRUE(c.evict_one());  // the deepest first: 3
  EXPECT_EQ(c.match(a, 3), 2);
  const uint64_t one[] = {1};
  c.unpin(one, 1);
  EXPECT_TRUE(c.evict_one());  // then 2 (queued before 1)
  EXPECT_TRUE(c.evict_one());
  EXPECT_FALSE(c.evict_one());
  EXPECT_EQ(c.entries(), 0);
  EXPECT_EQ(c.evictions(), 3);
}

// Prefill/decode disaggregation: a prefill replica hands requests over; the test moves the
// KV cache to the decode replica after a fixed 5 ms transfer.
struct DisaggLog final : ServingObserver, core::EventTarget {
  core::Engine* eng = nullptr;
  Replica* decode = nullptr;
  std::map<uint64_t, Outcome> out;
  std::vector<Handoff> inflight;
  void on_prefill_done(const Handoff& h, int) override {
    inflight.push_back(h);
    eng->schedule(eng->now() + 5 * kMs, kPhaseArrival, this, 0, inflight.size() - 1);
  }
  void on_event(const core::Event& e) override {
    Handoff h = inflight[e.data];
    h.first_token_ns = e.time;
    decode->submit_prefilled(h);
  }
  void on_completion(const RequestRecord& r) override {
    out[r.spec->id] = {r.scheduled_ns, r.first_token_ns, r.done_ns, r.preemptions};
  }
};

TEST(Vllm, DisaggregatedPrefillHandsOverAndTtftIncludesTheTransfer) {
  const StepModel steps = simple_steps(8, 10);
  for (bool ff : {true, false}) {
    core::Engine eng;
    DisaggLog log;
    log.eng = &eng;
    ServingConfig pc = config(false, 4096, 1000), dc = config(false, 4096, 1000);
    pc.fast_forward = dc.fast_forward = ff;
    pc.role = EngineConfig::Role::kPrefill;
    dc.role = EngineConfig::Role::kDecode;
    Vllm prefill(0, eng, log, steps, pc), decode(1, eng, log, steps, dc);
    log.decode = &decode;
    Driver d;
    d.rep = &prefill;
    // A (t=0, 100 prompt, 3 output): prefill 0..100 ms on the prefill replica; its KV
    //   arrives at the decode replica at 105 (5 ms transfer): first token at 105 (TTFT
    //   105 ms). Decode iterations 105..115 and 115..125: done at 125.
    // B (t=50, 100 prompt, 2 output): the prefill replica is busy until 100 (A's decodes
    //   no longer hold it back), prefills B 100..200; KV at the decode replica at 205; one
    //   decode iteration 205..215: done at 215. The decode replica ran no prefill at all.
    d.reqs = {req(0, 0, 100, 3), req(1, 50 * kMs, 100, 2)};
    d.start(eng);
    Checker c1;
    c1.rep = &decode;
    eng.add_observer(&c1);
    eng.run();
    prefill.check_invariants();
    EXPECT_EQ(log.out[0], (Outcome{0, 105 * kMs, 125 * kMs, 0}));
    EXPECT_EQ(log.out[1], (Outcome{100 * kMs, 205 * kMs, 215 * kMs, 0}));
    EXPECT_EQ(prefill.outstanding(), 0);
    EXPECT_EQ(decode.outstanding(), 0);
    EXPECT_EQ(prefill.kv_blocks_used(), 0);
    EXPECT_EQ(decode.kv_blocks_used(), 0);
    EXPECT_EQ(prefill.decode_iterations(), 0);
  }
}

TEST(Speculative, TokensPerIterationHasTheExpectedMean) {
  ServingConfig cfg;
  EXPECT_EQ(tokens_per_iteration(cfg, 7), 1);  // off
  cfg.spec_k = 4;
  cfg.spec_acceptance = 0.7;
  // E[tokens] = (1 − 0.7^5) / (1 − 0.7) = (1 − 0.16807) / 0.3 = 2.7731: each request gets 2 or
  // 3, 3 with probability 0.7731.
  double sum = 0;
  for (uint64_t id = 0; id < 100000; ++id) {
    const int32_t t = tokens_per_iteration(cfg, id);
    ASSERT_TRUE(t == 2 || t == 3) << t;
    sum += t;
  }
  EXPECT_NEAR(sum / 100000, 2.7731, 0.01);
  cfg.spec_acceptance = 0;
  EXPECT_EQ(tokens_per_iteration(cfg, 3), 1);  // nothing accepted: one token per step
  // A per-request spread keeps every τ within [1, k + 1].
  cfg.spec_acceptance = 0.5;
  cfg.spec_acceptance_spread = 0.5;
  for (uint64_t id = 0; id < 1000; ++id) {
    EXPECT_GE(tokens_per_iteration(cfg, id), 1);
    EXPECT_LE(tokens_per_iteration(cfg, id), 5);
  }
}

TEST(Speculative, AcceptedTokensShortenTheDecode) {
  const StepModel steps = simple_steps(8, 10);
  ServingConfig cfg = config(false, 4096, 1000);
  cfg.spec_k = 3;
  cfg.spec_acceptance = 0.999;  // E = (1 − 0.999^4)/0.001 = 3.994: almost always τ = 4
  uint64_t id = 0;
  while (tokens_per_iteration(cfg, id) != 4) ++id;
  // A (10 prompt, 9 output), τ = 4: prefill 0..10 ms gives token 1; the other 8 come 4 per
  // decode iteration: 10..20 and 20..30 ms. Done at 30 (TPOT (30 − 10)/8 = 2.5 ms); without
  // speculation it would take 8 iterations (done at 90).
  for (bool ff : {true, false}) {
    cfg.fast_forward = ff;
    RunLog r = simulate(steps, cfg, {req(id, 0, 10, 9)});
    EXPECT_EQ(r.log.out[id], (Outcome{0, 10 * kMs, 30 * kMs, 0}));
    EXPECT_EQ(r.iterations, 3);
  }
}

TEST(Vllm, PreemptionBySwapPaysTheHostLink) {
  const StepModel steps = simple_steps(8, 10);
  // As PreemptionByRecompute (3 KV blocks of 4 tokens; A and B with 4-token prompts and 5
  // output tokens, both prefilled 0..8 ms), but B is swapped out at 8 instead of dropped:
  // its 1 block goes to host memory, which stalls the GPU 2 ms (2 ms per block, no latency).
  // 8..20: A's decode iteration after the 2 ms stall (token 2). B may come back only when its
  //   block and the block of its next token fit (2 blocks); 1 is free while A runs, so A
  //   decodes alone 20..50 (tokens 3..5) and completes.
  // 50: B is swapped in (2 ms stall) and decodes 50..62 (token 2), then 62..92 (3..5).
  //   No recompute: B's first token stays at 8; done at 92 with one preemption.
  for (bool ff : {true, false}) {
    ServingConfig cfg = config(false, 4096, 3, 4);
    cfg.fast_forward = ff;
    cfg.swap = true;
    cfg.host_blocks = 10;
    cfg.swap_ns_per_block = 2.0 * kMs;
    RunLog r = simulate(steps, cfg, {req(0, 0, 4, 5), req(1, 0, 4, 5)});
    EXPECT_EQ(r.log.out[0], (Outcome{0, 8 * kMs, 50 * kMs, 0}));
    EXPECT_EQ(r.log.out[1], (Outcome{0, 8 * kMs, 92 * kMs, 1}));
  }
}

TEST(Vllm, LoadSheddingRejectsPastTheQueueLimit) {
  const StepModel steps = simple_steps(8, 10);
  // max_queue 1. A (t=0) is admitted at once; B (t=1 ms) waits behind A's 100 ms prefill;
  // C (t=2 ms) finds one request waiting: rejected (queue full). B runs after A's prefill.
  ServingConfig cfg = config(false, 100, 1000);
  cfg.max_queue = 1;
  RunLog r =
      simulate(steps, cfg, {req(0, 0, 100, 1), req(1, 1 * kMs, 100, 1), req(2, 2 * kMs, 100, 1)});
  EXPECT_EQ(r.log.rejected, 1);
  EXPECT_EQ(r.log.out.size(), 2u);
  EXPECT_EQ(r.log.out[1], (Outcome{100 * kMs, 200 * kMs, 200 * kMs, 0}));
}

TEST(Vllm, ForcedTokensNeedNoDecodeStep) {
  const StepModel steps = simple_steps(8, 10);
  ServingConfig cfg = config(false, 4096, 1000);
  cfg.forced_token_share = 0.5;  // τ = 1 / (1 − 0.5) = 2 tokens per decode iteration, exactly
  EXPECT_EQ(tokens_per_iteration(cfg, 12345), 2);
  EXPECT_EQ(max_tokens_per_iteration(cfg), 2);
  // 10-token prompt, 9 output: prefill 0..10 ms (token 1); the other 8 two per iteration:
  // 4 iterations 10..50 ms. Without forced tokens: 8 iterations, done at 90.
  for (bool ff : {true, false}) {
    cfg.fast_forward = ff;
    RunLog r = simulate(steps, cfg, {req(0, 0, 10, 9)});
    EXPECT_EQ(r.log.out[0], (Outcome{0, 10 * kMs, 50 * kMs, 0}));
  }
}

TEST(Vllm, PrefixHostTierLoadsEvictedBlocksBackOverTheHostLink) {
  const StepModel steps = simple_steps(8, 10);
  const std::vector<uint64_t> hashes = {1, 2, 3, 4, 1, 2};
  // KV blocks of 4 tokens, prefix entries of 8 tokens (2 blocks), 6 KV blocks on the GPU, a
  // host tier of 10 entries, 1 ms per block over the host link.
  // A (t=0, 16 prompt, hashes 1 2): prefill 0..16 ms, done; entries 1, 2 stay cached (4 blocks).
  // B (t=100, 16 prompt, hashes 3 4): needs 4 blocks, 2 free: the deepest unreferenced entry,
  //   2, is evicted — to the host tier. Prefill 100..116; entries 1, 3, 4 on the GPU (6 blocks).
  // C (t=200, 17 prompt, hashes 1 2): 1 is on the GPU, 2 in host memory: 16 tokens cached.
  //   It needs 5 − 4 = 1 block of its own and 2 blocks to load entry 2 back: 2 is promoted
  //   (8 blocks in use), then 4 and 3 are evicted to the host to make room. The load stalls
  //   the GPU 2 ms; C computes its 1 remaining token: 200..203 ms (TTFT 3 ms, not 17).
  for (bool ff : {true, false}) {
    ServingConfig cfg = config(false, 64, 6, 4);
    cfg.fast_forward = ff;
    cfg.prefix_caching = true;
    cfg.prefix_block_tokens = 8;
    cfg.hashes = &hashes;
    cfg.prefix_host_entries = 10;
    cfg.swap_ns_per_block = 1.0 * kMs;
    RunLog r =
        simulate(steps, cfg,
                 {with_hashes(req(0, 0, 16, 1), 0, 2), with_hashes(req(1, 100 * kMs, 16, 1), 2, 2),
                  with_hashes(req(2, 200 * kMs, 17, 1), 4, 2)});
    EXPECT_EQ(r.log.out[2], (Outcome{200 * kMs, 203 * kMs, 203 * kMs, 0}));
    EXPECT_EQ(r.log.lookups,
              (std::vector<std::pair<int64_t, int64_t>>{{16, 0}, {16, 0}, {17, 16}}));
    EXPECT_EQ(r.log.host_loaded, 8);
    EXPECT_EQ(r.evictions, 3);
    EXPECT_EQ(r.cache_entries, 2);
  }
}

TEST(PrefixCache, HostTierKeepsEvictedEntries) {
  PrefixCache c;
  c.set_host_capacity(1);
  const uint64_t a[] = {1, 2};
  c.insert_pinned(1);
  c.insert_pinned(2);
  c.unpin(a, 2);
  EXPECT_TRUE(c.evict_one());  // 2 → host
  EXPECT_EQ(c.match_tiers(a, 2).gpu, 1);
  EXPECT_EQ(c.match_tiers(a, 2).host, 1);
  EXPECT_TRUE(c.evict_one());  // 1 → host; the host holds one entry: 2 falls out
  EXPECT_EQ(c.match_tiers(a, 2).gpu, 0);
  EXPECT_EQ(c.match_tiers(a, 2).host, 1);
  EXPECT_EQ(c.host_entries(), 1);
  c.promote(a, 1);  // 1 back on the GPU, referenced
  EXPECT_EQ(c.refs(1), 1);
  EXPECT_EQ(c.host_entries(), 0);
}

RequestSpec with_priority(RequestSpec r, uint8_t p) {
  r.priority = p;
  return r;
}

TEST(Vllm, HigherPriorityIsAdmittedFirstAndShedsLowerPriority) {
  const StepModel steps = simple_steps(8, 10);
  // One 100-token prompt per prefill-first iteration (budget 100), 1 output token each.
  // A (t=0, priority 0) is admitted at once: 0..100 ms. B (t=1 ms, priority 0) and C (t=2 ms,
  // priority 1) wait; at 100 C goes first although it arrived later: 100..200; B 200..300.
  {
    ServingConfig cfg = config(false, 100, 1000);
    RunLog r = simulate(
        steps, cfg,
        {req(0, 0, 100, 1), req(1, 1 * kMs, 100, 1), with_priority(req(2, 2 * kMs, 100, 1), 1)});
    EXPECT_EQ(r.log.out[2], (Outcome{100 * kMs, 200 * kMs, 200 * kMs, 0}));
    EXPECT_EQ(r.log.out[1], (Outcome{200 * kMs, 300 * kMs, 300 * kMs, 0}));
  }
  // With max_queue 1 the queue is full when C arrives: B, lower priority and never started,
  // is shed for C. Without the priority, C itself would be rejected.
  {
    ServingConfig cfg = config(false, 100, 1000);
    cfg.max_queue = 1;
    RunLog r = simulate(
        steps, cfg,
        {req(0, 0, 100, 1), req(1, 1 * kMs, 100, 1), with_priority(req(2, 2 * kMs, 100, 1), 1)});
    EXPECT_EQ(r.log.rejected, 1);
    EXPECT_EQ(r.log.out.count(1), 0u);
    EXPECT_EQ(r.log.out[2], (Outcome{100 * kMs, 200 * kMs, 200 * kMs, 0}));
  }
}

TEST(Vllm, PreemptionTakesTheLowestPriorityFirst) {
  const StepModel steps = simple_steps(8, 10);
  // As PreemptionByRecompute, but A (the earlier arrival) has the lower priority: at 8 ms it
  // is A that is preempted, not B. B decodes alone 8..48 and completes; A recomputes 5
  // tokens 48..53 and decodes 53..83.
  ServingConfig cfg = config(false, 4096, 3, 4);
  RunLog r = simulate(steps, cfg, {req(0, 0, 4, 5), with_priority(req(1, 0, 4, 5), 1)});
  EXPECT_EQ(r.log.out[1], (Outcome{0, 8 * kMs, 48 * kMs, 0}));
  EXPECT_EQ(r.log.out[0], (Outcome{0, 8 * kMs, 83 * kMs, 1}));
}

TEST(Vllm, LoraAdaptersWaitForASlotAndPayTheirLoad) {
  const StepModel steps = simple_steps(8, 10);
  // One adapter slot, 5 ms to load an adapter; one 10-token prompt per iteration.
  // A (adapter 1, t=0): load 5 ms + prefill 10 ms: done at 15.
  // B (adapter 2, t=1 ms) waits for the slot: at 15 adapter 1 is idle and evicted; adapter 2
  //   loads (5 ms) and B prefills: 15..30.
  // C (adapter 2, t=2 ms): its adapter is resident now: 30..40, no load.
  for (bool ff : {true, false}) {
    ServingConfig cfg = config(false, 10, 1000);
    cfg.fast_forward = ff;
    cfg.lora_slots = 1;
    cfg.lora_load_ns = 5 * kMs;
    RequestSpec a = req(0, 0, 10, 1), b = req(1, 1 * kMs, 10, 1), c = req(2, 2 * kMs, 10, 1);
    a.adapter = 1;
    b.adapter = 2;
    c.adapter = 2;
    RunLog r = simulate(steps, cfg, {a, b, c});
    EXPECT_EQ(r.log.out[0], (Outcome{0, 15 * kMs, 15 * kMs, 0}));
    EXPECT_EQ(r.log.out[1], (Outcome{15 * kMs, 30 * kMs, 30 * kMs, 0}));
    EXPECT_EQ(r.log.out[2], (Outcome{30 * kMs, 40 * kMs, 40 * kMs, 0}));
  }
}

TEST(Vllm, LoraSkipsARequestWaitingForASlot) {
  const StepModel steps = simple_steps(8, 10);
  // One slot, 5 ms loads. A (adapter 1, t=0, 3 output): load + prefill 0..15, decodes follow.
  // B (adapter 2, t=1 ms) cannot get the slot while A runs; C (adapter 1, t=2 ms) can, so at
  // 15 C goes ahead of B: prefill 15..25 (prefill-first: A's decodes wait), done at 25.
  // A decodes 25..35 and 35..45: done at 45. Then adapter 1 is idle: B loads adapter 2
  // (5 ms) and prefills 45..60.
  for (bool ff : {true, false}) {
    ServingConfig cfg = config(false, 10, 1000);
    cfg.fast_forward = ff;
    cfg.lora_slots = 1;
    cfg.lora_load_ns = 5 * kMs;
    RequestSpec a = req(0, 0, 10, 3), b = req(1, 1 * kMs, 10, 1), c = req(2, 2 * kMs, 10, 1);
    a.adapter = 1;
    b.adapter = 2;
    c.adapter = 1;
    RunLog r = simulate(steps, cfg, {a, b, c});
    EXPECT_EQ(r.log.out[0], (Outcome{0, 15 * kMs, 45 * kMs, 0}));
    EXPECT_EQ(r.log.out[2], (Outcome{15 * kMs, 25 * kMs, 25 * kMs, 0}));
    EXPECT_EQ(r.log.out[1], (Outcome{45 * kMs, 60 * kMs, 60 * kMs, 0}));
  }
}

// The fast path must give the same per-request results as one iteration per event.
TEST(Vllm, FastPathMatchesSteppingOnRandomScenarios) {
  Rng rng(2024);
  int preemptions = 0, chunked_trials = 0;
  int64_t hit_tokens = 0, evictions = 0;
  int spec_trials = 0, swap_trials = 0, split_long_trials = 0, reserve_trials = 0;
  uint64_t fast_events = 0, slow_events = 0;
  for (int trial = 0; trial < 60; ++trial) {
    const int bs = 1 + static_cast<int>(rng.uniform_u64(16));
    const bool chunked = rng.uniform_u64(2) == 1;
    const int64_t max_seqs = 1 + static_cast<int64_t>(rng.uniform_u64(12));
    // Some prefill-first trials cut prompts longer than a 64-token budget (SGLang).
    const bool split_long = !chunked && trial % 5 == 1;
    const int64_t budget =
        chunked ? max_seqs + static_cast<int64_t>(rng.uniform_u64(200)) : (split_long ? 64 : 400);
    const int64_t kv_blocks = 8 + static_cast<int64_t>(rng.uniform_u64(80));
    // Affine decode cost with a real per-context slope, so stretch times are non-trivial.
    std::vector<SimTime> fixed(static_cast<size_t>(max_seqs) + 1);
    for (size_t n = 1; n < fixed.size(); ++n)
      fixed[n] = 3 * kMs + static_cast<SimTime>(n) * 100'000;
    const StepModel steps(fixed, 1234.5, [](const hw::BatchShape& b) {
      return 2 * kMs + b.prefill_tokens * 50'000 + b.decode_seqs * 100'000 +
             static_cast<SimTime>(b.prefill_attn_pairs * 10.0) + b.decode_ctx_tokens * 1234;
    });
    // Every third trial caches prefixes: requests of one of 4 "conversations" share their
    // leading hash blocks (4 KV blocks each), so hits, sharing and eviction all happen.
    const bool caching = trial % 3 == 2;
    const int pbt = bs * 4;
    std::vector<uint64_t> hashes;
    std::vector<RequestSpec> reqs;
    SimTime t = 0;
    for (uint64_t id = 0; id < 120; ++id) {
      t += static_cast<SimTime>(rng.exponential(20.0 * kMs));
      RequestSpec r = req(id, t, 1 + static_cast<int32_t>(rng.uniform_u64(150)),
                          1 + static_cast<int32_t>(rng.uniform_u64(60)));
      if (trial % 6 == 5) r.priority = static_cast<uint8_t>(rng.uniform_u64(3));
      if (trial % 7 == 4) r.adapter = static_cast<uint32_t>(rng.uniform_u64(6));  // 0 = base
      if (caching) {
        const uint64_t conv = rng.uniform_u64(4);
        r.hash_begin = static_cast<uint32_t>(hashes.size());
        r.hash_count = static_cast<uint32_t>(r.prompt_tokens / pbt + 1);
        for (uint32_t i = 0; i < r.hash_count; ++i) hashes.push_back(conv * 1000 + i);
      }
      reqs.push_back(r);
    }
    ServingConfig cfg;
    cfg.prefix_caching = caching;
    if (trial % 7 == 4) {
      cfg.lora_slots = 2;
      cfg.lora_load_ns = 2 * kMs;
    }
    if (caching && trial % 2 == 0) {
      cfg.prefix_host_entries = 1 + static_cast<int64_t>(rng.uniform_u64(20));
      cfg.swap_ns_per_block = 0.2 * kMs;
    }
    // Every fifth trial preempts by swap, with a host space that sometimes runs out.
    if (trial % 5 == 3) {
      cfg.swap = true;
      cfg.host_blocks = static_cast<int64_t>(rng.uniform_u64(40));
      cfg.swap_ns_per_block = 0.3 * kMs;
      cfg.swap_latency_ns = 50'000;
      ++swap_trials;
    }
    // Every fourth trial decodes speculatively (τ of 1..4 tokens per iteration).
    if (trial % 4 == 1 && bs >= 4) {
      cfg.spec_k = 3;
      cfg.spec_acceptance = 0.6;
      cfg.spec_acceptance_spread = 0.35;
      ++spec_trials;
    }
    // Every sixth trial admits with whole-life claims (TensorRT-LLM): never a preemption.
    cfg.reserve_at_admission = trial % 6 == 4;
    reserve_trials += cfg.reserve_at_admission;
    cfg.prefix_block_tokens = pbt;
    cfg.hashes = &hashes;
    cfg.block_tokens = bs;
    cfg.kv_blocks = kv_blocks;
    cfg.max_num_seqs = max_seqs;
    cfg.max_batched_tokens = budget;
    cfg.chunked_prefill = chunked;
    cfg.split_prompts = !(chunked && trial % 8 == 3);  // some chunked trials: whole prompts
    cfg.split_long_prompts = split_long;
    split_long_trials += split_long;
    cfg.fast_forward = true;
    RunLog fast = simulate(steps, cfg, reqs);
    cfg.fast_forward = false;
    RunLog slow = simulate(steps, cfg, reqs);
    SCOPED_TRACE("trial " + std::to_string(trial));
    ASSERT_EQ(fast.log.out.size() + static_cast<size_t>(fast.log.rejected), reqs.size());
    ASSERT_EQ(fast.log.out, slow.log.out);
    ASSERT_EQ(fast.log.rejected, slow.log.rejected);
    std::sort(fast.log.gaps.begin(), fast.log.gaps.end());
    std::sort(slow.log.gaps.begin(), slow.log.gaps.end());
    ASSERT_EQ(fast.log.gaps, slow.log.gaps);
    ASSERT_EQ(fast.iterations, slow.iterations);
    ASSERT_EQ(fast.log.preemptions, slow.log.preemptions);
    if (cfg.reserve_at_admission) {
      ASSERT_EQ(fast.log.preemptions, 0);
    }
    preemptions += fast.log.preemptions;
    chunked_trials += chunked;
    ASSERT_EQ(fast.log.lookups, slow.log.lookups);
    for (const auto& [p, h] : fast.log.lookups) hit_tokens += h;
    evictions += fast.evictions;
    fast_events += fast.events;
    slow_events += slow.events;
    // First token before completion, completion after arrival.
    for (const auto& [id, o] : fast.log.out) {
      ASSERT_LE(reqs[id].arrival_ns, o.scheduled);
      ASSERT_LT(o.scheduled, o.first);
      ASSERT_LE(o.first, o.done);
    }
  }
  // The trials must exercise what they are meant to: preemptions, both scheduling modes,
  // and stretches of several iterations (fewer events than stepping).
  EXPECT_GT(preemptions, 0);
  EXPECT_GT(chunked_trials, 10);
  EXPECT_GT(hit_tokens, 0);
  EXPECT_GT(spec_trials, 5);
  EXPECT_GT(swap_trials, 5);
  EXPECT_GT(split_long_trials, 3);
  EXPECT_GE(reserve_trials, 10);
  EXPECT_GT(evictions, 0);
  EXPECT_LT(fast_events * 2, slow_events);
}

}  // namespace
