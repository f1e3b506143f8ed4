// Attention benchmarks: causal prefill (full prompts at 16k tokens per batch, and chunks
// after a cached prefix) and paged decode (batch 1..256, context 128..32k) with the heads
// of Llama-3.1-8B (32/8, also Mixtral-8x7B's) and Llama-3.1-70B (64/8).
#include <algorithm>

#include "kernels/bench/bench_common.h"
#include "kernels/common/shapes.h"

namespace fleetsim::kernels::bench {
namespace {

struct PrefillCase {
  std::string model;
  int heads, kv_heads, batch, q_len, kv_len;
};

struct DecodeCase {
  std::string model;
  int heads, kv_heads, batch, ctx;
};

void run_prefill(benchmark::State& st, const PrefillCase& cs, const std::string& name) {
  guarded(st, name, [&] {
    PrefillProblem p;
    p.dims.batch = cs.batch;
    p.dims.q_len = cs.q_len;
    p.dims.kv_len = cs.kv_len;
    p.dims.heads = cs.heads;
    p.dims.kv_heads = cs.kv_heads;
    p.dims.head_dim = 128;
    p.dims.causal = true;
    p.seed_q = fresh_seed();
    p.seed_k = fresh_seed();
    p.seed_v = fresh_seed();
    const std::size_t nq = static_cast<std::size_t>(cs.batch) * cs.q_len * cs.heads * 128;
    const std::size_t nkv = static_cast<std::size_t>(cs.batch) * cs.kv_len * cs.kv_heads * 128;
    DeviceBuffer<bf16_bits> q(nq), k(nkv), v(nkv), o(nq);
    fill_prefill_inputs(p, q.get(), k.get(), v.get());
    PrefillArgs a;
    a.q = q.get();
    a.k = k.get();
    a.v = v.get();
    a.o = o.get();
    a.batch = cs.batch;
    a.q_len = cs.q_len;
    a.kv_len = cs.kv_len;
    a.heads = cs.heads;
    a.kv_heads = cs.kv_heads;
    a.causal = true;
    auto launch = [&] { FK_CHECK(attn_prefill_bf16(a, nullptr)); };
    o.poison();
    launch();
    FK_CHECK(cudaDeviceSynchronize());
    const CheckResult chk = check_prefill(p, o.get(), 4, 10);
    if (!chk.ok) return validation_failed(st, name, chk);
    Result r;
    r.section = "attn_prefill";
    r.impl = "own";
    r.dtype = "bf16";
    r.model = cs.model;
    r.label = cs.q_len == cs.kv_len ? "prompt" : "chunk";
    r.batch = cs.batch;
    r.q_len = cs.q_len;
    r.kv_len = cs.kv_len;
    r.heads = cs.heads;
    r.kv_heads = cs.kv_heads;
    r.head_dim = 128;
    r.causal = 1;
    r.work = prefill_work(cs.batch, cs.q_len, cs.kv_len, cs.heads, cs.kv_heads, 128, true, 2);
    r.check = chk.detail;
    time_and_record(st, r, launch);
  });
}

void run_decode(benchmark::State& st, const DecodeCase& cs, const std::string& name) {
  guarded(st, name, [&] {
    Context& c = ctx();
    const std::vector<int> lens(static_cast<std::size_t>(cs.batch), cs.ctx);
    DecodeProblem p = DecodeProblem::make(cs.batch, cs.heads, cs.kv_heads, lens, 16, fresh_seed());
    const std::size_t nq = static_cast<std::size_t>(cs.batch) * cs.heads * 128;
    const std::size_t nc = static_cast<std::size_t>(p.num_blocks) * cs.kv_heads * p.page_size * 128;
    DeviceBuffer<bf16_bits> q(nq), kc(nc), vc(nc), o(nq);
    DeviceBuffer<int> table(p.block_table.size()), seq(p.seq_lens.size());
    table.from_host(p.block_table);
    seq.from_host(p.seq_lens);
    fill_decode_inputs(p, q.get(), kc.get(), vc.get());
    DecodeArgs a;
    a.q = q.get();
    a.k_cache = kc.get();
    a.v_cache = vc.get();
    a.block_table = table.get();
    a.seq_lens = seq.get();
    a.o = o.get();
    a.batch = cs.batch;
    a.heads = cs.heads;
    a.kv_heads = cs.kv_heads;
    a.page_size = p.page_size;
    a.max_blocks_per_seq = p.max_blocks_per_seq;
    a.max_seq_len = cs.ctx;
    a.sm_count = c.dev.sm_count;
    DeviceBuffer<float> ws(attn_decode_workspace_bytes(a) / sizeof(float));
    a.workspace = ws.get();
    auto launch = [&] { FK_CHECK(attn_decode_bf16(a, nullptr)); };
    o.poison();
    ws.poison();
    launch();
    FK_CHECK(cudaDeviceSynchronize());
    const CheckResult chk = check_decode(p, o.get(), 3);
    if (!chk.ok) return validation_failed(st, name, chk);
    Result r;
    r.section = "attn_decode";
    r.impl = "own";
    r.dtype = "bf16";
    r.model = cs.model;
    r.label = "paged16 splits=" + std::to_string(attn_decode_splits(a));
    r.batch = cs.batch;
    r.kv_len = cs.ctx;
    r.heads = cs.heads;
    r.kv_heads = cs.kv_heads;
    r.head_dim = 128;
    r.work = decode_work(cs.batch, cs.ctx, cs.heads, cs.kv_heads, 128, 2);
    r.check = chk.detail;
    time_and_record(st, r, launch);
  });
}

}  // namespace

void register_attention() {
  Context& c = ctx();
  const hw::Catalog cat = hw::Catalog::load(c.opt.catalog_dir);
  std::vector<AttnShape> models;
  for (const char* id : {"llama-3.1-8b", "llama-3.1-70b"})
    models.push_back(model_attention(cat.model(id)));
  if (c.opt.smoke) models = {{"smoke", 4, 2, 128}};
  std::size_t free_b = 0, total_b = 0;
  cudaMemGetInfo(&free_b, &total_b);

  // Prefill: full prompts, batch·context = 16k tokens (the FlashAttention papers' setting),
  // and chunked prefill (1024 new tokens after a cached prefix).
  std::vector<int> ctxs = {128, 512, 1024, 2048, 4096, 8192, 16384, 32768};
  if (c.opt.quick) ctxs = {512, 8192};
  if (c.opt.smoke) ctxs = {70, 130};
  std::vector<PrefillCase> pcs;
  for (const auto& m : models) {
    for (int L : ctxs)
      pcs.push_back({m.model, m.heads, m.kv_heads, c.opt.smoke ? 1 : std::max(1, 16384 / L), L, L});
    if (!c.opt.quick && !c.opt.smoke)
      for (int kv : {4096, 16384}) pcs.push_back({m.model, m.heads, m.kv_heads, 1, 1024, kv});
  }
  for (const auto& cs : pcs) {
    const Work w = prefill_work(cs.batch, cs.q_len, cs.kv_len, cs.heads, cs.kv_heads, 128, true, 2);
    const std::string name = "attn_prefill/own/" + cs.model;
    add(name, reps_for(estimate_us(w) * 3),
        [cs, name](benchmark::State& st) {
          run_prefill(st, cs,
                      name + "/batch:" + std::to_string(cs.batch) + "/q_len:" +
                          std::to_string(cs.q_len) + "/kv_len:" + std::to_string(cs.kv_len));
        })
        ->ArgNames({"batch", "q_len", "kv_len"})
        ->Args({cs.batch, cs.q_len, cs.kv_len});
  }

  // Decode: batch × context, while the KV cache fits in 40 % of free memory.
  std::vector<int> batches = {1, 8, 32, 64, 128, 256};
  std::vector<int> dctx = {128, 512, 1024, 4096, 16384, 32768};
  if (c.opt.quick) {
    batches = {1, 64};
    dctx = {1024, 8192};
  }
  if (c.opt.smoke) {
    batches = {1, 3};
    dctx = {65, 300};
  }
  for (const auto& m : models)
    for (int b : batches)
      for (int L : dctx) {
        const double kv_bytes = 2.0 * b * L * m.kv_heads * 128 * 2;
        if (kv_bytes > 0.4 * static_cast<double>(free_b)) continue;
        const DecodeCase cs{m.model, m.heads, m.kv_heads, b, L};
        const Work w = decode_work(b, L, m.heads, m.kv_heads, 128, 2);
        const std::string name = "attn_decode/own/" + cs.model;
        add(name, reps_for(estimate_us(w) * 2),
            [cs, name](benchmark::State& st) {
              run_decode(st, cs,
                         name + "/batch:" + std::to_string(cs.batch) +
                             "/kv_len:" + std::to_string(cs.ctx));
            })
            ->ArgNames({"batch", "kv_len"})
            ->Args({b, L});
      }
}

}  // namespace fleetsim::kernels::bench
