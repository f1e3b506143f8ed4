// Tests for sim/workload/workload: open-loop rates and burstiness, limits, determinism,
// closed-loop concurrency, trace replay with time_scale, and every validation error.
#include "sim/workload/workload.h"

#include <gtest/gtest.h>

#include <cmath>
#include <queue>
#include <vector>

#include "hw_models/error.h"

namespace fleetsim::workload {
namespace {

const std::string kTestsDir = std::string(FLEETSIM_SOURCE_DIR) + "/tests";

// Builds the workload from the body of a `workload:` section in "scenario.yaml", with
// base_dir = tests/ so "data/..." names the excerpts.
std::unique_ptr<Workload> make(const std::string& yaml, uint64_t seed = 42) {
  auto src = std::make_shared<yaml::Source>();
  src->file = "scenario.yaml";
  yaml::Map m(YAML::Load(yaml), src, "workload");
  return Workload::from_yaml(m, RngStreams(seed), kTestsDir);
}

InputError make_error(const std::string& yaml) {
  try {
    make(yaml);
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "no InputError for: " << yaml;
  return InputError("none");
}

std::vector<RequestSpec> drain(Workload& w) {
  std::vector<RequestSpec> out;
  while (auto r = w.next_arrival()) out.push_back(*r);
  return out;
}

// Sample coefficient of variation of the gaps between consecutive arrivals (first gap from 0).
double gap_cv(const std::vector<RequestSpec>& rs) {
  double s = 0, ss = 0, prev = 0;
  for (const auto& r : rs) {
    const double g = ns_to_seconds(r.arrival_ns) - prev;
    prev = ns_to_seconds(r.arrival_ns);
    s += g;
    ss += g * g;
  }
  const double n = static_cast<double>(rs.size());
  const double mean = s / n;
  return std::sqrt(ss / n - mean * mean) / mean;
}

// ---- open loop ------------------------------------------------------------------------

TEST(WorkloadOpenLoop, PoissonRateAndGaps) {
  auto w = make(
      "requests: 100000\n"
      "arrival: {process: poisson, rate: 20/s}\n"
      "prompt_tokens: 512\n"
      "output_tokens: 128\n");
  EXPECT_EQ(w->nominal_rate_per_s(), 20.0);
  const auto rs = drain(*w);
  ASSERT_EQ(rs.size(), 100000u);  // exactly `requests`
  for (size_t i = 0; i < rs.size(); ++i) {
    ASSERT_EQ(rs[i].id, i);  // ids 0, 1, 2, ... in order
    ASSERT_EQ(rs[i].prompt_tokens, 512);
    ASSERT_EQ(rs[i].output_tokens, 128);
    ASSERT_EQ(rs[i].client, -1);
    if (i > 0) {
      ASSERT_GE(rs[i].arrival_ns, rs[i - 1].arrival_ns);
    }
  }
  // Mean gap 1/λ = 0.05 s; SE = 0.05/sqrt(1e5) = 1.58e-4 → 5 SE = 7.9e-4 s on the mean gap,
  // i.e. the observed rate n / t_last is 20/s within 1.6 %.
  const double mean_gap = ns_to_seconds(rs.back().arrival_ns) / 1e5;
  EXPECT_NEAR(mean_gap, 0.05, 7.9e-4);
  // Exponential gaps have cv 1. The sample cv's variance is (c²/n)(c² - γc + (κ-1)/4) with
  // skewness γ = 2 and kurtosis κ = 9: 1/n → SE 3.16e-3 → 5 SE = 0.0158.
  EXPECT_NEAR(gap_cv(rs), 1.0, 0.0158);
  EXPECT_FALSE(w->next_arrival());                          // stays exhausted
  EXPECT_FALSE(w->on_completion(rs[0], rs[0].arrival_ns));  // open loop: no follow-ups
}

TEST(WorkloadOpenLoop, GammaKeepsRateAndSetsCv) {
  auto w = make(
      "requests: 100000\n"
      "arrival: {process: gamma, rate: 10/s, cv: 2.0}\n"
      "prompt_tokens: 100\n"
      "output_tokens: 10\n");
  const auto rs = drain(*w);
  ASSERT_EQ(rs.size(), 100000u);
  // Gaps: shape k = 1/c² = 0.25, scale 1/(λk) = 0.4 s → mean 0.1 s, SD c/λ = 0.2 s.
  // SE(mean) = 0.2/sqrt(1e5) = 6.3e-4 → 5 SE = 3.2e-3.
  EXPECT_NEAR(ns_to_seconds(rs.back().arrival_ns) / 1e5, 0.1, 3.2e-3);
  // Gamma(k = 0.25): skewness 2/sqrt(k) = 4, kurtosis 3 + 6/k = 27; var(cv̂) =
  // (4/n)(4 - 8 + 26/4) = 10/n → SE 0.01 → 5 SE = 0.05.
  EXPECT_NEAR(gap_cv(rs), 2.0, 0.05);
}

TEST(WorkloadOpenLoop, DurationStopsArrivals) {
  auto w = make(
      "duration: 10s\n"
      "arrival: {rate: 100/s}\n"  // process defaults to poisson
      "prompt_tokens: 1\n"
      "output_tokens: 1\n");
  const auto rs = drain(*w);
  // Poisson count in 10 s at 100/s: mean 1000, SD sqrt(1000) = 31.6 → 5 SD = 158.
  EXPECT_NEAR(static_cast<double>(rs.size()), 1000.0, 158);
  for (const auto& r : rs) ASSERT_LT(r.arrival_ns, 10 * kNsPerSecond);
  EXPECT_FALSE(w->next_arrival());
}

// Arrivals of `rs` in [a, b) seconds.
double count_in(const std::vector<RequestSpec>& rs, double a, double b) {
  double n = 0;
  for (const auto& r : rs)
    n += ns_to_seconds(r.arrival_ns) >= a && ns_to_seconds(r.arrival_ns) < b ? 1 : 0;
  return n;
}

TEST(WorkloadOpenLoop, ShapedRateStepsAndRamps) {
  // 10/s for 100 s, a step to 50/s until 200 s, a ramp down to 0 at 300 s, then nothing.
  auto w = make(
      "duration: 1h\n"
      "arrival: {shape: [{at: 0s, rate: 10/s}, {at: 100s, rate: 10/s}, {at: 100s, rate: 50/s},"
      " {at: 200s, rate: 50/s}, {at: 300s, rate: 0/s}]}\n"
      "prompt_tokens: 1\n"
      "output_tokens: 1\n");
  const auto rs = drain(*w);
  // Poisson counts, each within 5 SD (sqrt of the mean) of its mean ∫ rate dt:
  //   [0, 100) s: 10 · 100 = 1000;  [100, 200) s: 50 · 100 = 5000;
  //   [200, 250) s: ∫ from 50 down to 25 over 50 s = 1875;  [250, 300) s: 25 → 0: 625.
  EXPECT_NEAR(count_in(rs, 0, 100), 1000, 5 * std::sqrt(1000.0));
  EXPECT_NEAR(count_in(rs, 100, 200), 5000, 5 * std::sqrt(5000.0));
  EXPECT_NEAR(count_in(rs, 200, 250), 1875, 5 * std::sqrt(1875.0));
  EXPECT_NEAR(count_in(rs, 250, 300), 625, 5 * std::sqrt(625.0));
  // The rate ends at 0: nothing after 300 s although the duration is an hour.
  EXPECT_EQ(count_in(rs, 300, 3600), 0);
  EXPECT_DOUBLE_EQ(w->nominal_rate_per_s(), 50.0);  // the peak

  EXPECT_NE(make_error("duration: 1h\narrival: {rate: 5/s, shape: [{at: 0s, rate: 1/s}]}\n"
                       "prompt_tokens: 1\noutput_tokens: 1\n")
                .message()
                .find("either rate (constant) or shape"),
            std::string::npos);
  EXPECT_NE(
      make_error("duration: 1h\narrival: {shape: [{at: 10s, rate: 1/s}, {at: 5s, rate: 2/s}]}\n"
                 "prompt_tokens: 1\noutput_tokens: 1\n")
          .message()
          .find("in time order"),
      std::string::npos);
  EXPECT_NE(make_error("duration: 1h\narrival: {shape: [{at: 0s, rate: 0/s}]}\n"
                       "prompt_tokens: 1\noutput_tokens: 1\n")
                .message()
                .find("nothing would arrive"),
            std::string::npos);
  EXPECT_NE(
      make_error("duration: 1h\narrival: {process: gamma, cv: 2, shape: [{at: 0s, rate: 1/s}]}\n"
                 "prompt_tokens: 1\noutput_tokens: 1\n")
          .message()
          .find("(non-homogeneous) Poisson process"),
      std::string::npos);
}

TEST(WorkloadOpenLoop, RequestsAndDurationWhicheverComesFirst) {
  // 1000/s for 1 s would give ~1000; 50 requests come first.
  auto w = make(
      "requests: 50\nduration: 1s\narrival: {rate: 1000/s}\nprompt_tokens: 1\noutput_tokens: 1\n");
  EXPECT_EQ(drain(*w).size(), 50u);
}

TEST(WorkloadOpenLoop, LengthDistributionsAreDrawnPerRequest) {
  auto w = make(
      "requests: 20000\n"
      "arrival: {rate: 5/s}\n"
      "prompt_tokens: {dist: uniform, min: 100, max: 200}\n"
      "output_tokens: {dist: exponential, mean: 50}\n");
  double sp = 0, so = 0;
  for (const auto& r : drain(*w)) {
    ASSERT_GE(r.prompt_tokens, 100);
    ASSERT_LE(r.prompt_tokens, 200);
    ASSERT_GE(r.output_tokens, 1);
    sp += r.prompt_tokens;
    so += r.output_tokens;
  }
  // Prompt: discrete uniform 100..200, mean 150, SD sqrt((101² - 1)/12) = 29.15;
  // SE = 29.15/sqrt(2e4) = 0.206 → 5 SE = 1.03.
  EXPECT_NEAR(sp / 20000, 150.0, 1.03);
  // Output: exponential mean 50 rounded (to nearest, at least 1) keeps mean ≈ 50 (rounding
  // moves it by < 0.1); SE = 50/sqrt(2e4) = 0.354 → 5 SE = 1.77.
  EXPECT_NEAR(so / 20000, 50.0, 1.77);
}

TEST(WorkloadOpenLoop, SameSeedSameRequestsAndStreamsAreSeparate) {
  const std::string base =
      "requests: 1000\narrival: {rate: 20/s}\nprompt_tokens: {dist: lognormal, median: 400, sigma: "
      "1}\n";
  auto a = drain(*make(base + "output_tokens: 128\n", 7));
  auto b = drain(*make(base + "output_tokens: 128\n", 7));
  auto c = drain(*make(base + "output_tokens: 128\n", 8));
  // Changing the output distribution draws differently from "lengths" only: arrival times
  // come from "arrivals" and must not move.
  auto d = drain(*make(base + "output_tokens: {dist: uniform, min: 1, max: 9}\n", 7));
  ASSERT_EQ(a.size(), 1000u);
  int same_c = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].arrival_ns, b[i].arrival_ns);
    EXPECT_EQ(a[i].prompt_tokens, b[i].prompt_tokens);
    EXPECT_EQ(a[i].arrival_ns, d[i].arrival_ns);
    same_c += a[i].arrival_ns == c[i].arrival_ns ? 1 : 0;
  }
  EXPECT_EQ(same_c, 0);  // another seed: continuous gaps never coincide
}

TEST(WorkloadOpenLoop, DescribeIsOneLine) {
  auto w = make(
      "requests: 10\narrival: {process: gamma, rate: 20/s, cv: 2}\nprompt_tokens: {dist: "
      "lognormal, median: 400, sigma: 1}\noutput_tokens: 128\n");
  const std::string d = w->describe();
  EXPECT_EQ(d.find('\n'), std::string::npos);
  EXPECT_NE(d.find("gamma 20/s cv=2"), std::string::npos) << d;
  EXPECT_NE(d.find("lognormal(median=400, sigma=1"), std::string::npos) << d;
  EXPECT_NE(d.find("fixed(128)"), std::string::npos) << d;
}

// ---- closed loop ----------------------------------------------------------------------

// Serves every request in `service_s` seconds (infinite parallelism) and returns all
// requests in the order they were generated; checks that no user ever has two outstanding.
std::vector<RequestSpec> run_closed_loop(Workload& w, int users, double service_s) {
  struct Done {
    SimTime t;
    RequestSpec r;
    bool operator>(const Done& o) const { return t != o.t ? t > o.t : r.id > o.r.id; }
  };
  std::priority_queue<Done, std::vector<Done>, std::greater<>> completions;
  std::vector<int> outstanding(static_cast<size_t>(users), 0);
  std::vector<RequestSpec> all;
  int total_outstanding = 0;
  auto submit = [&](const RequestSpec& r) {
    all.push_back(r);
    EXPECT_EQ(++outstanding[static_cast<size_t>(r.client)], 1) << "user " << r.client;
    EXPECT_LE(++total_outstanding, users);
    completions.push({r.arrival_ns + seconds_to_ns(service_s), r});
  };
  while (auto r = w.next_arrival()) submit(*r);
  while (!completions.empty()) {
    const Done d = completions.top();
    completions.pop();
    --outstanding[static_cast<size_t>(d.r.client)];
    --total_outstanding;
    if (auto next = w.on_completion(d.r, d.t)) {
      EXPECT_EQ(next->client, d.r.client);
      EXPECT_GE(next->arrival_ns, d.t);
      submit(*next);
    }
  }
  return all;
}

TEST(WorkloadClosedLoop, FixedThinkTimeSchedule) {
  auto w = make(
      "requests: 20\n"
      "clients: {users: 4, think_time: 1s}\n"
      "prompt_tokens: 64\n"
      "output_tokens: 8\n");
  EXPECT_EQ(w->nominal_rate_per_s(), 0.0);  // depends on the servers
  const auto all = run_closed_loop(*w, 4, 0.5);
  ASSERT_EQ(all.size(), 20u);  // the request limit counts across users
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(all[i].id, i);
    // Each user: think 1 s, served 0.5 s, think 1 s ... → request k (0-based) of every user
    // arrives at 1 + 1.5·k s; 4 users send 5 requests each.
    const size_t k = i / 4;
    EXPECT_EQ(all[i].arrival_ns, seconds_to_ns(1.0 + 1.5 * static_cast<double>(k))) << i;
    EXPECT_EQ(all[i].client, static_cast<int32_t>(i % 4));
    EXPECT_EQ(all[i].prompt_tokens, 64);
  }
}

TEST(WorkloadClosedLoop, RandomThinkKeepsAtMostOneOutstandingPerUser) {
  auto w = make(
      "requests: 5000\n"
      "clients: {users: 16, think_time: {dist: exponential, mean: 2s}}\n"
      "prompt_tokens: {dist: lognormal, median: 400, sigma: 1}\n"
      "output_tokens: 100\n");
  // The first requests come out in time order even though users draw in index order.
  std::vector<RequestSpec> first;
  while (auto r = w->next_arrival()) first.push_back(*r);
  ASSERT_EQ(first.size(), 16u);
  for (size_t i = 1; i < first.size(); ++i) EXPECT_GE(first[i].arrival_ns, first[i - 1].arrival_ns);

  auto w2 = make(
      "requests: 5000\n"
      "clients: {users: 16, think_time: {dist: exponential, mean: 2s}}\n"
      "prompt_tokens: {dist: lognormal, median: 400, sigma: 1}\n"
      "output_tokens: 100\n");
  const auto all = run_closed_loop(*w2, 16, 3.0);  // asserts ≤ 1 outstanding per user
  EXPECT_EQ(all.size(), 5000u);
}

TEST(WorkloadClosedLoop, DurationEndsEachUser) {
  auto w = make(
      "duration: 10s\nclients: {users: 3, think_time: 1s}\nprompt_tokens: 1\noutput_tokens: 1\n");
  // Served instantly: each user sends at 1, 2, ..., 9 s (10 s is past the [0, 10 s) window).
  const auto all = run_closed_loop(*w, 3, 0.0);
  EXPECT_EQ(all.size(), 27u);  // 3 users × 9
  for (const auto& r : all) EXPECT_LT(r.arrival_ns, 10 * kNsPerSecond);
}

TEST(WorkloadClosedLoop, FewerRequestsThanUsers) {
  auto w = make("requests: 2\nclients: {users: 5}\nprompt_tokens: 1\noutput_tokens: 1\n");
  // No think_time: every user starts at 0; only the first two (by time, then index) go out.
  const auto first = drain(*w);
  ASSERT_EQ(first.size(), 2u);
  EXPECT_EQ(first[0].client, 0);
  EXPECT_EQ(first[1].client, 1);
  EXPECT_EQ(first[0].arrival_ns, 0);
  EXPECT_FALSE(w->on_completion(first[0], 100));
}

TEST(WorkloadTrafficScale, ScalesEveryRate) {
  // Poisson 20/s × 1.2 = 24/s; the shaped rate's points × 0.5; a trace 2× as fast halves every
  // arrival (time_scale 1 ÷ 2).
  auto w = make(
      "requests: 10\ntraffic_scale: 1.2\narrival: {process: poisson, rate: 20/s}\n"
      "prompt_tokens: 5\noutput_tokens: 5\n");
  EXPECT_DOUBLE_EQ(w->nominal_rate_per_s(), 24.0);
  auto conv = make(
      "requests: 10\ntraffic_scale: 3\nconversations: {rate: 2/s, turns: 2}\n"
      "prompt_tokens: 5\noutput_tokens: 5\n");
  auto conv1 = make(
      "requests: 10\nconversations: {rate: 2/s, turns: 2}\nprompt_tokens: 5\noutput_tokens: 5\n");
  EXPECT_NEAR(conv->nominal_rate_per_s(), 3 * conv1->nominal_rate_per_s(), 1e-9);
  const auto normal = drain(*make("trace: {file: data/azure_conv_head.csv}\n"));
  const auto fast = drain(*make("traffic_scale: 2\ntrace: {file: data/azure_conv_head.csv}\n"));
  ASSERT_EQ(fast.size(), normal.size());
  for (size_t i = 0; i < normal.size(); ++i)
    EXPECT_NEAR(static_cast<double>(fast[i].arrival_ns),
                0.5 * static_cast<double>(normal[i].arrival_ns), 1.0);
  // A closed loop has no rate to scale.
  const InputError e = make_error(
      "requests: 10\ntraffic_scale: 1.2\nclients: {users: 4}\nprompt_tokens: 5\n"
      "output_tokens: 5\n");
  EXPECT_EQ(e.field(), "workload.traffic_scale");
  EXPECT_NE(std::string(e.what()).find("closed loop"), std::string::npos) << e.what();
  EXPECT_NE(std::string(make_error("requests: 10\ntraffic_scale: 0\n"
                                   "arrival: {process: poisson, rate: 20/s}\n"
                                   "prompt_tokens: 5\noutput_tokens: 5\n")
                            .what())
                .find("traffic_scale"),
            std::string::npos);
}

// ---- trace replay ---------------------------------------------------------------------

TEST(WorkloadTrace, ReplaysRecordsWithTimeScale) {
  const Trace t = load_trace(kTestsDir + "/data/azure_conv_head.csv");
  auto normal = drain(*make("trace: {file: data/azure_conv_head.csv}\n"));
  auto slow = drain(*make("trace: {file: data/azure_conv_head.csv, time_scale: 2.0}\n"));
  auto fast =
      drain(*make("trace: {file: data/azure_conv_head.csv, format: azure, time_scale: 0.5}\n"));
  ASSERT_EQ(normal.size(), 199u);  // the whole excerpt: a trace bounds the run by itself
  ASSERT_EQ(slow.size(), 199u);
  ASSERT_EQ(fast.size(), 199u);
  for (size_t i = 0; i < normal.size(); ++i) {
    EXPECT_EQ(normal[i].id, i);
    EXPECT_EQ(normal[i].prompt_tokens, t.records[i].input_tokens);
    EXPECT_EQ(normal[i].output_tokens, t.records[i].output_tokens);
    EXPECT_EQ(normal[i].arrival_ns, seconds_to_ns(t.records[i].time_s));
    // time_scale 2 doubles and 0.5 halves every arrival (each rounded once to 1 ns).
    const auto t_ns = static_cast<double>(normal[i].arrival_ns);
    EXPECT_NEAR(static_cast<double>(slow[i].arrival_ns), 2.0 * t_ns, 1.0);
    EXPECT_NEAR(static_cast<double>(fast[i].arrival_ns), 0.5 * t_ns, 1.0);
  }
  // Last record at 61.145266 s (see trace_test).
  EXPECT_EQ(normal.back().arrival_ns, 61'145'266'000);
  EXPECT_EQ(slow.back().arrival_ns, 122'290'532'000);
}

TEST(WorkloadTrace, RequestsAndDurationTruncate) {
  EXPECT_EQ(drain(*make("requests: 50\ntrace: data/azure_conv_head.csv\n")).size(), 50u);
  const Trace t = load_trace(kTestsDir + "/data/azure_conv_head.csv");
  size_t under_30s = 0;
  for (const auto& r : t.records) under_30s += r.time_s < 30.0 ? 1 : 0;
  const auto rs = drain(*make("duration: 30s\ntrace: data/azure_conv_head.csv\n"));
  EXPECT_EQ(rs.size(), under_30s);
  EXPECT_GT(under_30s, 0u);
  EXPECT_LT(under_30s, 199u);
  // time_scale 2 stretches the trace: only records before 15 s (trace time) fit in 30 s.
  size_t under_15s = 0;
  for (const auto& r : t.records) under_15s += r.time_s * 2 < 30.0 ? 1 : 0;
  EXPECT_EQ(drain(*make("duration: 30s\ntrace: {file: data/azure_conv_head.csv, time_scale: 2}\n"))
                .size(),
            under_15s);
}

TEST(WorkloadTrace, MooncakeHashRangesAreCopied) {
  auto w = make("trace: {file: data/mooncake_head.jsonl}\n");
  ASSERT_NE(w->trace(), nullptr);
  const Trace& t = *w->trace();
  EXPECT_EQ(t.block_tokens, 512);
  const auto rs = drain(*w);
  ASSERT_EQ(rs.size(), 200u);
  // First line: hash_ids 0..13 (14 blocks for 6758 tokens).
  EXPECT_EQ(rs[0].hash_count, 14u);
  EXPECT_EQ(t.hashes[rs[0].hash_begin + 13], 13u);
  for (size_t i = 0; i < rs.size(); ++i) {
    EXPECT_EQ(rs[i].hash_begin, t.records[i].hash_begin);
    EXPECT_EQ(rs[i].hash_count, t.records[i].hash_count);
  }
  // 200 requests over 72 s (last timestamp 72000 ms): 200/72 = 2.78/s.
  EXPECT_NEAR(w->nominal_rate_per_s(), 200.0 / 72.0, 1e-9);
  EXPECT_NE(w->describe().find("mooncake_head.jsonl"), std::string::npos);
}

// ---- validation -----------------------------------------------------------------------

struct Bad {
  const char* yaml;
  const char* field;
  const char* message;  // a fragment
};

TEST(WorkloadValidation, EveryErrorNamesItsField) {
  const Bad cases[] = {
      {"requests: 10\narrival: {rate: 1/s}\nclients: {users: 2}\nprompt_tokens: 1\noutput_tokens: "
       "1\n",
       "workload.clients", "only one of arrival, clients and trace"},
      {"requests: 10\narrival: {rate: 1/s}\ntrace: data/azure_conv_head.csv\n", "workload.trace",
       "only one of"},
      {"requests: 10\nprompt_tokens: 1\noutput_tokens: 1\n", "workload", "needs one of arrival"},
      {"arrival: {rate: 1/s}\nprompt_tokens: 1\noutput_tokens: 1\n", "workload", "never ends"},
      {"requests: 10\narrival: {rate: -5/s}\nprompt_tokens: 1\noutput_tokens: 1\n",
       "workload.arrival.rate", "rate must be > 0, got -5/s"},
      {"requests: 10\narrival: {rate: 0/s}\nprompt_tokens: 1\noutput_tokens: 1\n",
       "workload.arrival.rate", "rate must be > 0, got 0/s"},
      {"requests: 10\narrival: {rate: 20}\nprompt_tokens: 1\noutput_tokens: 1\n",
       "workload.arrival.rate", ""},  // bare number: the unit reader's message
      {"requests: 10\narrival: {process: gamma, rate: 1/s}\nprompt_tokens: 1\noutput_tokens: 1\n",
       "workload.arrival.cv", "missing"},
      {"requests: 10\narrival: {process: gamma, rate: 1/s, cv: 0}\nprompt_tokens: "
       "1\noutput_tokens: 1\n",
       "workload.arrival.cv", "cv must be > 0"},
      {"requests: 10\narrival: {rate: 1/s, cv: 2}\nprompt_tokens: 1\noutput_tokens: 1\n",
       "workload.arrival.cv", "applies to process: gamma"},
      {"requests: 10\narrival: {process: possion, rate: 1/s}\nprompt_tokens: 1\noutput_tokens: 1\n",
       "workload.arrival.process", "did you mean 'poisson'"},
      {"trace: data/azure_conv_head.csv\nprompt_tokens: 512\n", "workload.prompt_tokens",
       "cannot be used with trace"},
      {"trace: data/azure_conv_head.csv\noutput_tokens: 512\n", "workload.output_tokens",
       "cannot be used with trace"},
      {"requests: 0\narrival: {rate: 1/s}\nprompt_tokens: 1\noutput_tokens: 1\n",
       "workload.requests", "workload generates no requests"},
      {"requests: 0\ntrace: data/azure_conv_head.csv\n", "workload.requests",
       "workload generates no requests"},
      {"requests: -3\narrival: {rate: 1/s}\nprompt_tokens: 1\noutput_tokens: 1\n",
       "workload.requests", "requests must be >= 1"},
      {"duration: 0s\narrival: {rate: 1/s}\nprompt_tokens: 1\noutput_tokens: 1\n",
       "workload.duration", "duration must be > 0"},
      {"requests: 10\narrival: {rate: 1/s}\noutput_tokens: 1\n", "workload.prompt_tokens",
       "missing"},
      {"requests: 10\nclients: {users: 0}\nprompt_tokens: 1\noutput_tokens: 1\n",
       "workload.clients.users", "users must be >= 1"},
      {"requests: 10\nclients: {users: 2, think_time: 2}\nprompt_tokens: 1\noutput_tokens: 1\n",
       "workload.clients.think_time", ""},  // a duration needs a unit
      {"trace: {file: data/azure_conv_head.csv, time_scale: 0}\n", "workload.trace.time_scale",
       "time_scale must be > 0"},
      {"trace: {file: data/missing.csv}\n", "workload.trace.file", "cannot open trace file"},
      {"trace: data/missing.csv\n", "workload.trace", "cannot open trace file"},
      {"requets: 10\narrival: {rate: 1/s}\nduration: 1s\nprompt_tokens: 1\noutput_tokens: 1\n",
       "workload.requets", "did you mean 'requests'"},
      {"requests: 10\narrival: {rate: 1/s, burst: 3}\nprompt_tokens: 1\noutput_tokens: 1\n",
       "workload.arrival.burst", "unknown field"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.yaml);
    const InputError e = make_error(c.yaml);
    EXPECT_EQ(e.field(), c.field) << e.what();
    EXPECT_NE(e.message().find(c.message), std::string::npos) << e.what();
    EXPECT_EQ(e.file(), "scenario.yaml");
  }
}

TEST(WorkloadValidation, RateErrorPointsAtItsLine) {
  // "rate" is on line 4.
  const InputError e = make_error(
      "requests: 10\n"
      "arrival:\n"
      "  process: poisson\n"
      "  rate: -5/s\n"
      "prompt_tokens: 1\n"
      "output_tokens: 1\n");
  EXPECT_EQ(e.line(), 4);
  EXPECT_EQ(e.message(), "rate must be > 0, got -5/s");
}

}  // namespace
}  // namespace fleetsim::workload

// ---- multi-turn conversations ----------------------------------------------------------

namespace fleetsim::workload {
namespace {

TEST(Conversations, EachTurnCarriesTheConversationSoFar) {
  // Fixed lengths make the arithmetic checkable: a 600-token system prompt, 100 new user
  // tokens and 50 answer tokens per turn, 3 turns, hash blocks of 256 tokens.
  auto w = make(
      "requests: 100\n"
      "conversations: {rate: 1/s, turns: {dist: fixed, value: 3}, system_prompt_tokens: 600,\n"
      "                block_tokens: 256}\n"
      "prompt_tokens: {dist: fixed, value: 100}\n"
      "output_tokens: {dist: fixed, value: 50}\n");
  const Trace* t = w->trace();
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->block_tokens, 256);
  auto a = w->next_arrival();  // conversation 0, turn 1
  auto b = w->next_arrival();  // conversation 1, turn 1
  ASSERT_TRUE(a && b);
  EXPECT_TRUE(a->first_turn);
  EXPECT_EQ(a->client, 0);
  EXPECT_EQ(b->client, 1);
  // Turn 1: 600 + 100 = 700 tokens, 2 whole blocks (512 tokens), both inside the system
  // prompt (blocks end at 256 and 512 ≤ 600): the same hashes for every conversation.
  EXPECT_EQ(a->prompt_tokens, 700);
  ASSERT_EQ(a->hash_count, 2u);
  ASSERT_EQ(b->hash_count, 2u);
  for (uint32_t i = 0; i < 2; ++i)
    EXPECT_EQ(t->hashes[a->hash_begin + i], t->hashes[b->hash_begin + i]);
  // Turn 2 of conversation 0, 10 s after turn 1 ends: 700 + 50 (the answer) + 100 = 850
  // tokens, 3 whole blocks; the first two are turn 1's, the third (512..768) is its own.
  auto a2 = w->on_completion(*a, 10 * 1'000'000'000LL);
  ASSERT_TRUE(a2);
  EXPECT_FALSE(a2->first_turn);
  EXPECT_EQ(a2->client, 0);
  EXPECT_EQ(a2->prompt_tokens, 850);
  EXPECT_EQ(a2->arrival_ns, 10 * 1'000'000'000LL);  // no think time given: 0
  ASSERT_EQ(a2->hash_count, 3u);
  EXPECT_EQ(t->hashes[a2->hash_begin], t->hashes[a->hash_begin]);
  EXPECT_EQ(t->hashes[a2->hash_begin + 1], t->hashes[a->hash_begin + 1]);
  // Turn 2 of conversation 1 has the same length but its own third block.
  auto b2 = w->on_completion(*b, 11 * 1'000'000'000LL);
  ASSERT_TRUE(b2);
  EXPECT_NE(t->hashes[b2->hash_begin + 2], t->hashes[a2->hash_begin + 2]);
  // Turn 3: 850 + 50 + 100 = 1000; then the conversation is over.
  auto a3 = w->on_completion(*a2, 20 * 1'000'000'000LL);
  ASSERT_TRUE(a3);
  EXPECT_EQ(a3->prompt_tokens, 1000);
  EXPECT_FALSE(w->on_completion(*a3, 30 * 1'000'000'000LL).has_value());
}

TEST(Classes, SharesPrioritiesAndLengths) {
  auto w = make(
      "requests: 20000\n"
      "arrival: {process: poisson, rate: 10/s}\n"
      "prompt_tokens: {dist: fixed, value: 100}\n"
      "output_tokens: {dist: fixed, value: 10}\n"
      "classes:\n"
      "  - {name: chat, share: 7, priority: 2, slo: {ttft: 1s}}\n"
      "  - {name: batch, share: 3, prompt_tokens: {dist: fixed, value: 5000}}\n");
  ASSERT_EQ(w->classes().size(), 2u);
  EXPECT_EQ(w->classes()[0].name, "chat");
  EXPECT_EQ(w->classes()[0].priority, 2);
  EXPECT_EQ(w->classes()[0].slo_ttft_s, 1.0);
  int chat = 0;
  for (int i = 0; i < 20000; ++i) {
    auto r = w->next_arrival();
    ASSERT_TRUE(r);
    if (r->cls == 0) {
      ++chat;
      EXPECT_EQ(r->priority, 2);
      EXPECT_EQ(r->prompt_tokens, 100);  // the default lengths
    } else {
      EXPECT_EQ(r->priority, 0);
      EXPECT_EQ(r->prompt_tokens, 5000);  // the class's own
      EXPECT_EQ(r->output_tokens, 10);
    }
  }
  // Shares 7 : 3 → 70 % chat; binomial sd over 20,000 draws = sqrt(20000·0.21) = 65 (0.3 %).
  EXPECT_NEAR(chat / 20000.0, 0.7, 0.013);
}

TEST(Conversations, EndBeforeTheContextLimit) {
  // 1,000 new tokens per turn and a 2,500-token limit: turn 1 (1000 + 10 answer) fits,
  // turn 2 would be 1010 + 1000 = 2010 prompt + 10 = 2020 tokens: fits; turn 3 would be
  // 2020 + 1000 + 10 = 3030 > 2500: the conversation ends after 2 turns.
  auto w = make(
      "requests: 100\n"
      "conversations: {rate: 1/s, turns: {dist: fixed, value: 10}, max_context_tokens: 2500}\n"
      "prompt_tokens: {dist: fixed, value: 1000}\n"
      "output_tokens: {dist: fixed, value: 10}\n");
  auto r1 = w->next_arrival();
  ASSERT_TRUE(r1);
  auto r2 = w->on_completion(*r1, 0);
  ASSERT_TRUE(r2);
  EXPECT_EQ(r2->prompt_tokens, 2010);
  EXPECT_FALSE(w->on_completion(*r2, 0).has_value());
}

}  // namespace
}  // namespace fleetsim::workload
