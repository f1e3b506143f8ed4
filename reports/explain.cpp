#include "reports/explain.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "hw_models/units.h"
#include "sim/workload/workload.h"

namespace fleetsim::reports {

using units::Dim;
using units::format;

Representative representative_iterations(const scenario::Scenario& sc) {
  Representative r;
  auto w = sc.make_workload(sc.seed);
  double p = 0, o = 0;
  int n = 0;
  for (; n < 2000; ++n) {
    auto req = w->next_arrival();
    if (!req) break;
    p += static_cast<double>(req->prompt_tokens);
    o += static_cast<double>(req->output_tokens);
  }
  r.mean_prompt = n > 0 ? p / n : 512;
  r.mean_output = n > 0 ? o / n : 128;
  const int64_t prompt = std::max<int64_t>(1, static_cast<int64_t>(r.mean_prompt + 0.5));
  const int64_t chunk = std::min(prompt, sc.vllm.max_batched_tokens);
  // A prompt longer than the token budget runs in chunks, each attending to the chunks
  // before it: the mean chunk has (prompt − chunk) / 2 tokens of the prompt cached before
  // it (prior tokens grow linearly chunk by chunk), and its attention pairs grow with them.
  r.prefill_prior = (prompt - chunk) / 2;
  r.prefill.prefill_tokens = chunk;
  r.prefill.prefill_attn_pairs =
      static_cast<double>(chunk) *
      (static_cast<double>(r.prefill_prior) + (static_cast<double>(chunk) + 1.0) / 2.0);
  r.prefill.prefill_kv_tokens = r.prefill_prior + chunk;
  r.prefill.logits_tokens = chunk == prompt ? 1 : 0;
  // A lone chunk sits on one attention-DP rank, as in the simulation.
  r.prefill.largest_chunk_tokens = chunk;
  r.prefill.largest_chunk_pairs = r.prefill.prefill_attn_pairs;
  r.prefill.largest_chunk_kv_tokens = r.prefill.prefill_kv_tokens;
  r.decode_seqs = std::min<int64_t>(sc.vllm.max_num_seqs, 32);
  const int64_t ctx = static_cast<int64_t>(r.mean_prompt + r.mean_output / 2 + 0.5);
  r.decode.decode_seqs = r.decode_seqs;
  r.decode.logits_tokens = r.decode_seqs;
  r.decode.decode_ctx_tokens = r.decode_seqs * ctx;
  return r;
}

std::string explain_table(const scenario::Scenario& sc, const hw::BatchShape& b,
                          const std::string& title) {
  const auto ops = hw::explain_step(sc.dep, b);
  const hw::StepBreakdown s = hw::estimate_step(sc.dep, b);
  std::ostringstream o;
  char line[256];
  o << title << "\n";
  std::snprintf(line, sizeof line, "  %-46s %7s %11s %11s %11s %7s  %s\n", "operator", "count",
                "FLOPs/op", "bytes/op", "time", "share", "bound");
  o << line;
  const double total = s.total_s();
  for (const auto& op : ops) {
    std::snprintf(line, sizeof line, "  %-46s %7.4g %11s %11s %11s %6.1f%%  %s\n",
                  (op.category + ": " + op.name).substr(0, 46).c_str(), op.count,
                  op.flops > 0 ? units::format_count(op.flops).c_str() : "-",
                  op.bytes > 0 ? format(op.bytes, Dim::kBytes).c_str() : "-",
                  format(op.time_s, Dim::kTime).c_str(), total > 0 ? 100 * op.time_s / total : 0.0,
                  op.bound.c_str());
    o << line;
  }
  const std::pair<const char*, double> cats[] = {
      {"gemm", s.gemm_s},       {"attention", s.attention_s},
      {"moe", s.moe_s},         {"communication", s.communication_s},
      {"offload", s.offload_s}, {"overhead", s.overhead_s},
      {"overlap", s.overlap_s}};
  o << "  totals:";
  for (const auto& [name, t] : cats)
    if (t > 0)
      o << " " << name << " " << format(t, Dim::kTime);
    else if (t < 0)
      o << " " << name << " -" << format(-t, Dim::kTime);
  o << "; iteration " << format(total, Dim::kTime) << "\n";
  return o.str();
}

namespace {
// A loaded run's decode batch is often far above 32: its mean iteration (the simulation's
// mean decode batch, rounded) at the representative context `r` of the scenario.
std::string loaded_decode_table(const scenario::Scenario& sc, const Representative& r,
                                double simulated_decode_batch) {
  const auto seqs = static_cast<int64_t>(simulated_decode_batch + 0.5);
  if (seqs <= r.decode_seqs) return "";
  hw::BatchShape d = r.decode;
  const int64_t ctx = r.decode.decode_ctx_tokens / std::max<int64_t>(1, r.decode_seqs);
  d.decode_seqs = seqs;
  d.logits_tokens = seqs;
  d.decode_ctx_tokens = seqs * ctx;
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "decode at the simulation's mean decode batch: %lld sequences at %lld context "
                "tokens each",
                static_cast<long long>(seqs), static_cast<long long>(ctx));
  return explain_table(sc, d, buf);
}
}  // namespace

std::string explain_loaded_decode(const scenario::Scenario& sc, double simulated_decode_batch) {
  return loaded_decode_table(sc, representative_iterations(sc), simulated_decode_batch);
}

std::string explain(const scenario::Scenario& sc, double simulated_decode_batch) {
  const Representative r = representative_iterations(sc);
  std::ostringstream o;
  char buf[256];
  o << "explain: " << sc.model.id << " on " << sc.par.gpus() << " x " << sc.gpu.id << " (tp "
    << sc.par.tp << ", pp " << sc.par.pp << ", dp_attention " << sc.par.dp_attention
    << (sc.par.expert_parallel ? ", expert-parallel" : "") << "), weights " << sc.weights_dtype
    << ", activations " << sc.activations_dtype << ", KV " << sc.kv_dtype
    << "; efficiency: " << sc.efficiency_source << "\n";
  if (r.prefill_prior > 0)
    std::snprintf(buf, sizeof buf,
                  "prefill: the mean chunk of the mean prompt (%.0f tokens): %lld tokens after "
                  "%lld of the prompt already in the KV cache",
                  r.mean_prompt, static_cast<long long>(r.prefill.prefill_tokens),
                  static_cast<long long>(r.prefill_prior));
  else
    std::snprintf(buf, sizeof buf, "prefill: one chunk of %lld tokens (mean prompt %.0f tokens)",
                  static_cast<long long>(r.prefill.prefill_tokens), r.mean_prompt);
  o << explain_table(sc, r.prefill, buf);
  std::snprintf(
      buf, sizeof buf,
      "decode: %lld sequences at %lld context tokens each (mean prompt + half the mean "
      "output %.0f)",
      static_cast<long long>(r.decode_seqs),
      static_cast<long long>(r.decode.decode_ctx_tokens / std::max<int64_t>(1, r.decode_seqs)),
      r.mean_output);
  o << explain_table(sc, r.decode, buf);
  o << loaded_decode_table(sc, r, simulated_decode_batch);
  return o.str();
}

}  // namespace fleetsim::reports
