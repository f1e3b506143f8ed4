// Tests for sim/fleet/population: weekly users → sessions → calls, checked against hand
// math; the diurnal curve integrates to the daily total; time zones shift the peak;
// agentic fan-out; determinism; input errors.
#include "sim/fleet/population.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <queue>

#include "hw_models/error.h"

namespace fleetsim::fleet {
namespace {

RegionTraffic region(const std::string& name, double share, double utc_offset,
                     const std::string& curve_yaml = "") {
  RegionTraffic r;
  r.name = name;
  r.user_share = share;
  r.utc_offset_h = utc_offset;
  auto src = std::make_shared<yaml::Source>();
  src->file = "scenario.yaml";
  yaml::Map m(YAML::Load(curve_yaml.empty() ? std::string("{}") : curve_yaml), src,
              "fleet.regions[0]");
  read_curves(m, r);
  return r;
}

std::unique_ptr<Population> make(const std::string& yaml, std::vector<RegionTraffic> regions,
                                 uint64_t seed = 7) {
  auto src = std::make_shared<yaml::Source>();
  src->file = "scenario.yaml";
  yaml::Map m(YAML::Load(yaml), src, "users");
  auto p = std::make_unique<Population>(m, std::move(regions), RngStreams(seed), "");
  m.finish();
  return p;
}

const char* kBase = R"(
weekly_active: 1e6
daily_active_fraction: 0.4
sessions_per_day: 2.5
turns_per_session: 3
think_time: 30s
prompt_tokens: 100
output_tokens: 200
system_prompt_tokens: 500
max_context_tokens: 100000
)";

// Runs the population to the end, completing every call `latency` after it arrives.
struct Drive {
  uint64_t calls = 0, sessions = 0;
  std::vector<workload::RequestSpec> all;
  std::map<int, uint64_t> per_hour;  // session starts by run hour
};
Drive drive(Population& p, double latency_s = 1.0, bool keep = false) {
  Drive d;
  using Item = std::pair<SimTime, workload::RequestSpec>;
  auto later = [](const Item& a, const Item& b) { return a.first > b.first; };
  std::priority_queue<Item, std::vector<Item>, decltype(later)> done(later);
  std::vector<workload::RequestSpec> out;
  bool more = p.next_session(out);
  SimTime next_start = out.empty() ? 0 : out.front().arrival_ns;
  auto take = [&](std::vector<workload::RequestSpec>& v) {
    for (const auto& r : v) {
      ++d.calls;
      if (keep) d.all.push_back(r);
      done.push({r.arrival_ns + seconds_to_ns(latency_s), r});
    }
    v.clear();
  };
  if (more) {
    ++d.sessions;
    ++d.per_hour[static_cast<int>(ns_to_seconds(next_start) / 3600)];
    take(out);
  }
  while (more || !done.empty()) {
    if (more && (done.empty() || next_start <= done.top().first)) {
      more = p.next_session(out);
      if (more) {
        next_start = out.front().arrival_ns;
        ++d.sessions;
        ++d.per_hour[static_cast<int>(ns_to_seconds(next_start) / 3600)];
        take(out);
      }
      continue;
    }
    const auto [t, r] = done.top();
    done.pop();
    p.on_done(r, t, out);
    take(out);
  }
  return d;
}

TEST(Population, DailyArithmeticMatchesHandMath) {
  auto p = make(std::string(kBase) + "duration: 24h\n", {region("a", 1, 0, "{diurnal: flat}")});
  // 1e6 WAU × 0.4 DAU/WAU = 400k daily users × 2.5 sessions = 1.0M sessions a day;
  // × 3 turns (fixed) = 3.0M calls a day.
  EXPECT_DOUBLE_EQ(p->sessions_per_day(0), 1.0e6);
  EXPECT_DOUBLE_EQ(p->calls_per_day(), 3.0e6);
  // Flat curve: 1e6 / 86400 s = 11.574 sessions/s at any time.
  EXPECT_NEAR(p->session_rate(0, seconds_to_ns(12345.0)), 1e6 / 86400.0, 1e-9);
  EXPECT_NEAR(p->peak_to_mean(), 1.0, 1e-12);
}

TEST(Population, DiurnalCurveIntegratesToTheDailyTotal) {
  // Three regions, consumer curve, different zones; the hourly rates over a day add up to
  // the day's sessions exactly (piecewise constant per local hour, mean 1).
  auto p = make(std::string(kBase) + "duration: 24h\n",
                {region("us", 0.3, -5), region("eu", 0.3, 1), region("in", 0.4, 5.5)});
  double integral = 0;
  const int steps = 24 * 60;  // one-minute steps; the +5.5 h zone changes hour on the half hour
  for (int i = 0; i < steps; ++i)
    for (size_t r = 0; r < 3; ++r)
      integral += p->session_rate(r, seconds_to_ns((i + 0.5) * 60.0)) * 60.0;
  // 1e6 WAU × 0.4 × 2.5 = 1.0M sessions over the day, all regions.
  EXPECT_NEAR(integral, 1.0e6, 1e-6 * 1.0e6);
  EXPECT_GT(p->peak_to_mean(), 1.1);  // the curve has a peak
}

TEST(Population, GeneratedSessionsAndCallsMatchTheRate) {
  // Sample 5 % of 1e6 WAU: 50k sessions expected in the day (Poisson: s.d. 224), each with
  // 3 turns (fixed) → 150k calls. Every turn's call completes after 1 s and the user
  // thinks 30 s, so a session spans 3 turns · 1 s + 2 · 30 s = 63 s; sessions that would
  // run past midnight lose their late turns, about 50k · 63 s / 86400 s ≈ 36 sessions'
  // worth — far below the tolerance.
  auto p = make(std::string(kBase) + "duration: 24h\nsample: 0.05\n",
                {region("us", 0.5, -5), region("eu", 0.5, 1)});
  const Drive d = drive(*p);
  EXPECT_NEAR(static_cast<double>(d.sessions), 50000.0, 4 * 224.0);
  EXPECT_NEAR(static_cast<double>(d.calls) / static_cast<double>(d.sessions), 3.0, 0.01);
  EXPECT_EQ(p->sessions_started(), d.sessions);
}

TEST(Population, ContextGrowsTurnByTurn) {
  // Fixed lengths: turn 1 prompt = 500 system + 100 = 600; turn 2 = 600 + 200 answer + 100
  // = 900; turn 3 = 900 + 200 + 100 = 1200.
  auto p = make(std::string(kBase) + "duration: 2h\nsample: 0.001\n",
                {region("a", 1, 0, "{diurnal: flat}")});
  const Drive d = drive(*p, 1.0, true);
  std::map<int32_t, std::vector<int32_t>> by_session;
  ASSERT_GT(d.all.size(), 30u);
  for (const auto& r : d.all) by_session[r.client].push_back(r.prompt_tokens);
  const auto& first = d.all.front();
  std::vector<int32_t> prompts;
  for (const auto& r : d.all)
    if (r.client == first.client && r.arrival_ns < first.arrival_ns + seconds_to_ns(100.0))
      prompts.push_back(r.prompt_tokens);
  ASSERT_EQ(prompts.size(), 3u);
  EXPECT_EQ(prompts[0], 600);
  EXPECT_EQ(prompts[1], 900);
  EXPECT_EQ(prompts[2], 1200);
}

TEST(Population, AgentFanOutSendsParallelCallsAndWaitsForAll) {
  // One class, fan-out 4: each turn sends 4 calls at the same instant; the next turn comes
  // after all 4 finish. 3 turns → 12 calls per session; turn 2's prompt carries all four
  // answers: 600 + 4·200 + 100 = 1500.
  auto p = make(std::string(kBase) +
                    "duration: 2h\nsample: 0.001\nclasses: [{name: agent, share: 1, fanout: 4}]\n",
                {region("a", 1, 0, "{diurnal: flat}")});
  const Drive d = drive(*p, 1.0, true);
  ASSERT_GT(d.sessions, 10u);
  EXPECT_NEAR(static_cast<double>(d.calls) / static_cast<double>(d.sessions), 12.0, 0.2);
  const auto& first = d.all.front();
  int same_instant = 0;
  int32_t second_turn_prompt = 0;
  for (const auto& r : d.all) {
    if (r.client != first.client) continue;
    if (r.arrival_ns == first.arrival_ns)
      ++same_instant;
    else if (second_turn_prompt == 0 && r.arrival_ns < first.arrival_ns + seconds_to_ns(100.0))
      second_turn_prompt = r.prompt_tokens;
  }
  EXPECT_EQ(same_instant, 4);
  EXPECT_EQ(second_turn_prompt, 1500);
  EXPECT_DOUBLE_EQ(p->calls_per_day(), 1.0e6 * 3 * 4);
}

TEST(Population, TimeZonesMoveThePeak) {
  // One region at UTC+8 with the business curve (peak at local 10:00): the run's (UTC)
  // peak hour is 10 − 8 = 2.
  auto p =
      make(std::string(kBase) + "duration: 24h\n", {region("asia", 1, 8, "{diurnal: business}")});
  EXPECT_EQ(p->peak_hour(), 2);
}

TEST(Population, WeeklyCurveMovesLoadBetweenDays) {
  // Weekend days at half the weekday rate: normalised mean 1 over the week, a weekday is
  // 1 / (5/7 + 2·0.5/7) = 7/6 of the mean. Start on Saturday: the first day is at half.
  auto p = make(std::string(kBase) + "duration: 48h\nstart: {weekday: sat, hour_utc: 0}\n",
                {region("a", 1, 0, "{diurnal: flat, weekly: [1, 1, 1, 1, 1, 0.5, 0.5]}")});
  EXPECT_NEAR(p->session_rate(0, seconds_to_ns(3600.0)), 1e6 / 86400.0 * 0.5 * 7.0 / 6.0, 1e-9);
}

TEST(Population, SameSeedSameCalls) {
  auto a = make(std::string(kBase) + "duration: 1h\nsample: 0.01\n", {region("a", 1, 0)}, 3);
  auto b = make(std::string(kBase) + "duration: 1h\nsample: 0.01\n", {region("a", 1, 0)}, 3);
  const Drive da = drive(*a, 1.0, true), db = drive(*b, 1.0, true);
  ASSERT_EQ(da.all.size(), db.all.size());
  for (size_t i = 0; i < da.all.size(); ++i) {
    EXPECT_EQ(da.all[i].arrival_ns, db.all[i].arrival_ns);
    EXPECT_EQ(da.all[i].prompt_tokens, db.all[i].prompt_tokens);
  }
}

// kBase with another number of weekly users.
std::string with_users(double wau) {
  std::string s = kBase;
  const std::string from = "weekly_active: 1e6";
  s.replace(s.find(from), from.size(), "weekly_active: " + std::to_string(wau));
  return s;
}

// Session starts per run day (24 h from the start), over the whole run.
std::vector<double> sessions_per_day_of(Population& p) {
  std::vector<double> days;
  std::vector<workload::RequestSpec> out;
  while (p.next_session(out)) {
    const auto day = static_cast<size_t>(ns_to_seconds(out.front().arrival_ns) / 86400.0);
    if (days.size() <= day) days.resize(day + 1, 0.0);
    days[day] += 1;
    out.clear();
  }
  return days;
}

const char* kTeam = R"(
weekly_active: 1000
daily_active_fraction: 0.4
sessions_per_day: 3
turns_per_session: 1
think_time: 30s
prompt_tokens: 100
output_tokens: 200
duration: 31d
)";

TEST(Population, SmallPopulationsAreTrackedUserByUser) {
  // 1,000 weekly users, 40 % active on a day, each active user opening exactly 3 sessions: a
  // day's count is 3 × Binomial(1000, 0.4), mean 1,200 and variance 9 × 1000 × 0.4 × 0.6 =
  // 2,160 (s.d. 46.5), always a multiple of 3. A Poisson process at the same rate (tracking:
  // rate) has variance 1,200 and any count. 3 seeds × 31 days = 93 days.
  std::vector<double> users, rate;
  for (uint64_t seed : {1, 2, 3}) {
    auto p = make(std::string(kTeam), {region("a", 1, 0, "{diurnal: flat}")}, seed);
    ASSERT_TRUE(p->tracks_users());  // auto: ≤ 100k weekly users
    for (double n : sessions_per_day_of(*p)) users.push_back(n);
    auto q =
        make(std::string(kTeam) + "tracking: rate\n", {region("a", 1, 0, "{diurnal: flat}")}, seed);
    ASSERT_FALSE(q->tracks_users());
    for (double n : sessions_per_day_of(*q)) rate.push_back(n);
  }
  ASSERT_EQ(users.size(), 93u);
  ASSERT_EQ(rate.size(), 93u);
  auto mean_var = [](const std::vector<double>& v) {
    double m = 0, s = 0;
    for (double x : v) m += x;
    m /= static_cast<double>(v.size());
    for (double x : v) s += (x - m) * (x - m);
    return std::pair<double, double>(m, s / static_cast<double>(v.size() - 1));
  };
  for (double n : users) EXPECT_EQ(std::fmod(n, 3.0), 0.0) << n;
  const auto [um, uv] = mean_var(users);
  const auto [rm, rv] = mean_var(rate);
  // Means: 1,200 ± 4 s.e. (46.5 / √93 = 4.8; Poisson 34.6 / √93 = 3.6).
  EXPECT_NEAR(um, 1200.0, 4 * 4.8);
  EXPECT_NEAR(rm, 1200.0, 4 * 3.6);
  // Variances: a sample variance of 93 draws has relative s.e. √(2/92) = 15 %, so 2,160 lies
  // in [1,500, 3,000] and 1,200 in [800, 1,600] with room (≥ 2 s.e. either side).
  EXPECT_GT(uv, 1500.0);
  EXPECT_LT(uv, 3000.0);
  EXPECT_GT(rv, 800.0);
  EXPECT_LT(rv, 1600.0);
  // The dispersion the report's sampling error uses: 2,160 / 1,200 = 1.8 by hand
  // ((E[M²] − q·E[M]²) / E[M] = (9 − 0.4 × 9) / 3 with M = 3 always), 1 for Poisson. The
  // measured ratio agrees within its ±15 % above.
  auto users_pop = make(std::string(kTeam), {region("a", 1, 0, "{diurnal: flat}")});
  EXPECT_NEAR(users_pop->call_count_dispersion(), 1.8, 1e-12);
  EXPECT_NEAR(uv / um, 1.8, 0.3 * 1.8);
  auto rate_pop =
      make(std::string(kTeam) + "tracking: rate\n", {region("a", 1, 0, "{diurnal: flat}")});
  EXPECT_EQ(rate_pop->call_count_dispersion(), 1.0);
}

TEST(Population, DispersionOfTrackedUsersCountsRoundingAndSpread) {
  // sessions_per_day 2.5 (fixed): M is 2 or 3 with equal chance, E[M] = 2.5, E[M²] = 6.5;
  // q = 0.4: (6.5 − 0.4 × 6.25) / 2.5 = 1.6.
  std::string fixed = kTeam;
  fixed.replace(fixed.find("sessions_per_day: 3"), 19, "sessions_per_day: 2.5");
  EXPECT_NEAR(make(fixed, {region("a", 1, 0)})->call_count_dispersion(), 1.6, 1e-12);
  // Exponential with mean 2.5: E[X²] = 2 × 2.5² = 12.5, plus the rounding term E[f(1 − f)]
  // (about 1/6 for a spread this wide), so (12.5 + 0.17 − 0.4 × 6.25) / 2.5 = 4.07; within
  // 5 % for 200,000 draws (E[X²]'s relative s.e. is √(E[X⁴]/E[X²]² − 1)/√200000 = √5/447 = 0.5 %).
  std::string expo = kTeam;
  expo.replace(expo.find("sessions_per_day: 3"), 19,
               "sessions_per_day: {dist: exponential, mean: 2.5}");
  EXPECT_NEAR(make(expo, {region("a", 1, 0)})->call_count_dispersion(), 4.07, 0.05 * 4.07);
  // Turns per session uniform on {1, 2, 3}: E[T] = 2, E[T²] = 14/3, so Var(T)/E[T]² =
  // (14/3 − 4)/4 = 1/6 joins the sessions' term: 1.8 + 1/6 tracking users, 1 + 1/6 as a
  // Poisson process (2^17 draws: E[T²] within 0.5 %, so ±0.03).
  std::string turns = kTeam;
  turns.replace(turns.find("turns_per_session: 1"), 20,
                "turns_per_session: {dist: uniform, min: 1, max: 3}");
  EXPECT_NEAR(make(turns, {region("a", 1, 0)})->call_count_dispersion(), 1.8 + 1.0 / 6, 0.03);
  EXPECT_NEAR(make(turns + "tracking: rate\n", {region("a", 1, 0)})->call_count_dispersion(),
              1.0 + 1.0 / 6, 0.03);
}

TEST(Population, TrackedUsersFollowTheDiurnalCurve) {
  // 1e5 weekly users × 0.4 × 2.5 sessions = 1e5 sessions in the day, started by the
  // business curve (its 24 numbers sum to 24.27): hour 3 gets 1e5 × 0.18 / 24.27 = 742
  // (Poisson-like s.d. 27, 3.7 %) and hour 10 gets 1e5 × 2.05 / 24.27 = 8,447 (1.1 %).
  // Their ratio is 2.05 / 0.18 = 11.4 within 15 % (≥ 3.5 s.d. of the ratio's 3.9 %, and
  // the count's overdispersion from stochastic rounding of 2.5 sessions is 10 %: 4 s.d.).
  auto p = make(with_users(1e5) + "duration: 24h\n", {region("a", 1, 0, "{diurnal: business}")});
  ASSERT_TRUE(p->tracks_users());
  const Drive d = drive(*p);
  const double ratio =
      static_cast<double>(d.per_hour.at(10)) / static_cast<double>(d.per_hour.at(3));
  EXPECT_NEAR(ratio, 2.05 / 0.18, 0.15 * 2.05 / 0.18);
  // The day's total: 1e5 sessions; 40k active users (s.d. √(1e5·0.4·0.6) = 155 users) with
  // 2.5 sessions each (2 or 3: variance 0.25): variance 40k × 0.25 + 2.5² × 155² = 160k,
  // s.d. 400.
  EXPECT_NEAR(static_cast<double>(d.sessions), 1e5, 4 * 400.0);
}

TEST(Population, TrackingUsersOneByOneHasALimit) {
  try {
    make(with_users(1e9) + "tracking: users\n", {region("a", 1, 0)});
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("users.tracking"), std::string::npos) << w;
    EXPECT_NE(w.find("tracking: rate"), std::string::npos) << w;  // the hint
  }
  // 1e6 weekly users (above auto's 100k): a Poisson process.
  EXPECT_FALSE(make(kBase, {region("a", 1, 0)})->tracks_users());
}

TEST(Population, BadInputNamesTheField) {
  try {
    make(std::string(kBase) + "sample: 2\n", {region("a", 1, 0)});
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("users.sample"), std::string::npos) << e.what();
  }
  try {
    region("a", 1, 0, "{diurnal: [1, 2, 3]}");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("24"), std::string::npos) << e.what();
  }
  try {
    region("a", 1, 0, "{diurnal: weekend}");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("consumer"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fleetsim::fleet
