#include "sim/fleet/population.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "hw_models/units.h"
#include "sim/scenario/schema.h"
#include "sim/workload/workload.h"

namespace fleetsim::fleet {

using workload::Distribution;
using workload::Quantity;
using workload::RequestSpec;

namespace {

// users.tracking: auto tracks users one by one up to this many weekly users (where a day's
// count of sessions is far from a Poisson count's spread; above it the two agree within
// their noise), and never more than kUsersMax simulated users (memory and time per day).
constexpr double kAutoUsersMax = 1e5;
constexpr double kUsersMax = 5e7;
// At most this many sessions a day for one user (a draw of a heavy-tailed sessions_per_day
// above it is cut to it: one session every 8.6 s all day).
constexpr double kSessionsPerUserDayMax = 1e4;

// Built-in diurnal curves, by local hour 0..23 (normalised to mean 1 when read).
// ASSUMPTIONS, not measurements: no public hourly load curve of a consumer chat service was
// found. "consumer" has a night trough near 04:00 at about a third of the mean and a broad
// day plateau with an evening shoulder, the usual shape of consumer internet traffic;
// "business" follows office hours. Give 24 numbers of your own where you have data.
constexpr std::array<double, 24> kConsumer = {0.70, 0.52, 0.40, 0.34, 0.33, 0.38, 0.52, 0.72,
                                              0.95, 1.12, 1.22, 1.27, 1.28, 1.30, 1.32, 1.32,
                                              1.30, 1.27, 1.26, 1.30, 1.34, 1.28, 1.12, 0.91};
constexpr std::array<double, 24> kBusiness = {0.25, 0.20, 0.18, 0.18, 0.20, 0.28, 0.50, 0.95,
                                              1.60, 1.95, 2.05, 2.00, 1.75, 1.90, 2.00, 1.95,
                                              1.75, 1.35, 0.90, 0.65, 0.55, 0.45, 0.38, 0.30};

template <size_t N>
std::array<double, N> normalised(std::array<double, N> v) {
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / N;
  for (double& x : v) x /= mean;
  return v;
}

template <size_t N>
std::array<double, N> read_numbers(yaml::Map& m, const std::string& key, const char* what) {
  const YAML::Node list = m.node()[key];
  if (!list.IsSequence() || list.size() != N)
    m.fail(key, std::string("expected a list of ") + std::to_string(N) + " " + what,
           N == 24 ? "e.g. diurnal: consumer, or 24 multipliers for local hours 0..23"
                   : "7 multipliers, Monday first, e.g. [1, 1, 1, 1, 1, 0.8, 0.8]");
  std::array<double, N> v{};
  for (size_t i = 0; i < N; ++i) {
    double x = -1;
    try {
      x = list[i].as<double>();
    } catch (const YAML::Exception&) {}
    if (!(x >= 0) || !std::isfinite(x))
      m.fail(key, "entry " + std::to_string(i) + " must be a number >= 0, got '" +
                      (list[i].IsScalar() ? list[i].Scalar() : std::string("a collection")) + "'");
    v[i] = x;
  }
  if (std::accumulate(v.begin(), v.end(), 0.0) <= 0) m.fail(key, "the multipliers are all zero");
  return v;
}

int weekday_index(yaml::Map& m, const std::string& key) {
  static const char* names[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
  std::vector<std::string> allowed(std::begin(names), std::end(names));
  const std::string d = m.choice_or(scenario::schema::key_in(m, key));
  return static_cast<int>(std::find(allowed.begin(), allowed.end(), d) - allowed.begin());
}

}  // namespace

double sampled_mean(const Distribution& d, bool whole) { return sampled_moments(d, whole).first; }

std::pair<double, double> sampled_moments(const Distribution& d, bool whole) {
  // The moments of what the generator draws: bounds are enforced by redrawing (a lognormal
  // of turns with median 2 loses its draws below 1, which raises the mean well above the
  // analytic median·exp(σ²/2)), and counts are rounded. 2^17 draws from a fixed stream:
  // deterministic, and within 1 % for the spreads scenarios use.
  Rng rng(0x5eed5eedULL);
  constexpr int kDraws = 1 << 17;
  double sum = 0, sum2 = 0;
  for (int i = 0; i < kDraws; ++i) {
    const double x0 = d.sample(rng);
    const double x = whole ? static_cast<double>(workload::to_tokens(x0)) : x0;
    sum += x;
    sum2 += x * x;
  }
  return {sum / kDraws, sum2 / kDraws};
}

std::vector<std::string> builtin_curves() { return {"consumer", "business", "flat"}; }

void read_curves(yaml::Map& region, RegionTraffic& r) {
  r.weekly.fill(1.0);
  if (!region.has("diurnal")) {
    r.curve_name = "consumer";
    r.hourly = normalised(kConsumer);
  } else if (region.node()["diurnal"].IsScalar()) {
    r.curve_name = region.choice(scenario::schema::key_in(region, "diurnal"));
    if (r.curve_name == "consumer")
      r.hourly = normalised(kConsumer);
    else if (r.curve_name == "business")
      r.hourly = normalised(kBusiness);
    else
      r.hourly.fill(1.0);
  } else {
    r.curve_name = "custom";
    r.hourly = normalised(read_numbers<24>(region, "diurnal", "hourly multipliers"));
  }
  if (region.has("weekly"))
    r.weekly = normalised(read_numbers<7>(region, "weekly", "daily multipliers"));
}

Population::Population(yaml::Map& u, std::vector<RegionTraffic> regions, const RngStreams& rng,
                       const std::string& base_dir)
    : regions_(std::move(regions)),
      arrivals_(rng.stream("sessions")),
      lengths_(rng.stream("session-lengths")) {
  auto key = [&u](const char* name) -> const yaml::Key& {
    return scenario::schema::key_in(u, name);
  };
  wau_ = u.number(key("weekly_active"));
  dau_ = u.number(key("daily_active_fraction"));
  sessions_per_user_ =
      workload::parse_distribution(u, "sessions_per_day", Quantity::kTokens, base_dir);
  turns_ = workload::parse_distribution(u, "turns_per_session", Quantity::kTokens, base_dir);
  think_ = workload::parse_distribution(u, "think_time", Quantity::kDuration, base_dir);
  prompt_ = workload::parse_distribution(u, "prompt_tokens", Quantity::kTokens, base_dir);
  output_ = workload::parse_distribution(u, "output_tokens", Quantity::kTokens, base_dir);
  system_ = static_cast<int32_t>(u.integer_or(key("system_prompt_tokens")));
  max_context_ = static_cast<int32_t>(u.integer_or(key("max_context_tokens")));
  sample_ = u.number_or(key("sample"));
  const std::string tracking = u.choice_or(key("tracking"));
  per_user_ = tracking == "users" || (tracking == "auto" && wau_ <= kAutoUsersMax);
  if (per_user_ && wau_ * sample_ > kUsersMax)
    u.fail("tracking",
           "tracking users one by one holds at most " + units::format_count(kUsersMax) +
               " simulated users; this population has " + units::format_count(wau_ * sample_),
           "use tracking: rate (a Poisson process at the population's rate: the same load, "
           "right for large populations) or a smaller users.sample");
  if (per_user_) {
    // call_count_dispersion()'s sessions term: M as users draw it (clamped, rounded stochastically).
    Rng draws(0x5e55101d);
    constexpr int kDraws = 200000;
    double m1 = 0, m2 = 0;
    for (int i = 0; i < kDraws; ++i) {
      const double x =
          std::min(kSessionsPerUserDayMax, std::max(0.0, sessions_per_user_->sample(draws)));
      const double f = x - std::floor(x);
      // E[M | x] = x and E[M² | x] = x² + f·(1 − f) (M is floor(x) + Bernoulli(f)).
      m1 += x;
      m2 += x * x + f * (1 - f);
    }
    m1 /= kDraws;
    m2 /= kDraws;
    const double q = std::min(1.0, dau_);
    if (m1 > 0) dispersion_ = std::max(0.0, (m2 - q * m1 * m1) / m1);
  }
  duration_ns_ = seconds_to_ns(u.quantity_or(key("duration")));
  if (ns_to_seconds(duration_ns_) > 31 * 86400.0)
    u.fail("duration", "at most 31 days", "simulate a day or a week, e.g. '24h' or '7d'");
  if (auto st = u.map_opt(key("start"))) {
    const int day = weekday_index(*st, "weekday");
    const double hour = st->number_or(scenario::schema::key_in(*st, "hour_utc"));
    st->finish();
    start_s_ = day * 86400.0 + hour * 3600.0;
  }
  // A session is one user's conversation with one fine-tune (a tenant's adapter).
  if (u.has(key("adapters"))) adapter_cdf_ = workload::read_adapters(u);
  if (u.has("classes")) {
    const YAML::Node list = u.node()["classes"];
    if (!list.IsSequence() || list.size() == 0 || list.size() > 255)
      u.fail("classes", "expected a list of 1 to 255 classes",
             "e.g. classes: [{name: chat, share: 0.9}, {name: agent, share: 0.1, fanout: 4}]");
    auto src = std::make_shared<yaml::Source>(yaml::Source{u.file(), {}});
    for (size_t i = 0; i < list.size(); ++i) {
      yaml::Map c(list[i], src, u.path() + ".classes[" + std::to_string(i) + "]");
      SessionClass k;
      k.info = workload::read_request_class(c);
      k.model = c.str_or(scenario::schema::key_in(c, "model"), "");
      if (c.has("prompt_tokens"))
        k.prompt = workload::parse_distribution(c, "prompt_tokens", Quantity::kTokens, base_dir);
      if (c.has("output_tokens"))
        k.output = workload::parse_distribution(c, "output_tokens", Quantity::kTokens, base_dir);
      if (c.has("turns_per_session"))
        k.turns = workload::parse_distribution(c, "turns_per_session", Quantity::kTokens, base_dir);
      if (c.has("fanout"))
        k.fanout = workload::parse_distribution(c, "fanout", Quantity::kTokens, base_dir);
      c.finish();
      for (const auto& other : classes_)
        if (other.info.name == k.info.name)
          c.fail("name", "duplicate class name '" + k.info.name + "'");
      classes_.push_back(std::move(k));
    }
  } else {
    SessionClass k;
    k.info.name = "all";
    classes_.push_back(std::move(k));
  }
  sessions_mean_ = sampled_mean(*sessions_per_user_, false);
  double share_sum = 0, turns1 = 0, turns2 = 0;  // the class mixture's E[T] and E[T²]
  for (auto& k : classes_) {
    const auto [m1, m2] = sampled_moments(k.turns ? *k.turns : *turns_, true);
    k.turns_mean = m1;
    k.fanout_mean = k.fanout ? sampled_mean(*k.fanout, true) : 1.0;
    share_sum += k.info.share;
    turns1 += k.info.share * m1;
    turns2 += k.info.share * m2;
  }
  if (share_sum > 0 && turns1 > 0) {
    turns1 /= share_sum;
    turns2 /= share_sum;
    dispersion_ += std::max(0.0, turns2 / (turns1 * turns1) - 1.0);  // + CV² of turns
  }
  session_seed_ = lengths_.next_u64();
  double total = 0;
  for (const auto& k : classes_) total += k.info.share;
  double acc = 0;
  for (const auto& k : classes_) class_cdf_.push_back((acc += k.info.share) / total);

  double share_total = 0;
  for (const auto& r : regions_) share_total += r.user_share;
  for (auto& r : regions_) r.user_share /= share_total;
  for (size_t r = 0; r < regions_.size(); ++r) {
    const double peak = *std::max_element(regions_[r].hourly.begin(), regions_[r].hourly.end()) *
                        *std::max_element(regions_[r].weekly.begin(), regions_[r].weekly.end());
    max_rate_ += sessions_per_day(r) * sample_ / 86400.0 * peak;
    users_.push_back(static_cast<uint64_t>(std::llround(wau_ * sample_ * regions_[r].user_share)));
  }
}

double Population::sessions_per_day(size_t r) const {
  return wau_ * dau_ * sessions_mean_ * regions_[r].user_share;
}

double Population::calls_per_day() const {
  double per_session = 0;
  for (size_t i = 0; i < classes_.size(); ++i) {
    const auto& k = classes_[i];
    const double share = class_cdf_[i] - (i ? class_cdf_[i - 1] : 0.0);
    const double turns = k.turns_mean;
    const double fan = k.fanout_mean;
    per_session += share * turns * fan;
  }
  double sessions = 0;
  for (size_t r = 0; r < regions_.size(); ++r) sessions += sessions_per_day(r);
  return sessions * per_session;
}

double Population::multiplier(size_t r, double t_s) const {
  const RegionTraffic& g = regions_[r];
  // Local time since Monday 00:00 local, wrapped to the week.
  double local = std::fmod(start_s_ + t_s + g.utc_offset_h * 3600.0, 7 * 86400.0);
  if (local < 0) local += 7 * 86400.0;
  const int day = std::min(6, static_cast<int>(local / 86400.0));
  const int hour = std::min(23, static_cast<int>(std::fmod(local, 86400.0) / 3600.0));
  return g.hourly[static_cast<size_t>(hour)] * g.weekly[static_cast<size_t>(day)];
}

double Population::session_rate(size_t r, SimTime t) const {
  return sessions_per_day(r) * sample_ / 86400.0 * multiplier(r, ns_to_seconds(t));
}

double Population::peak_to_mean() const {
  // Hourly global load over the simulated span (whole hours, at least one).
  const int hours = std::max(1, static_cast<int>(std::ceil(ns_to_seconds(duration_ns_) / 3600.0)));
  double sum = 0, peak = 0;
  for (int h = 0; h < hours; ++h) {
    double load = 0;
    for (size_t r = 0; r < regions_.size(); ++r)
      load += sessions_per_day(r) * multiplier(r, h * 3600.0 + 1800.0);
    sum += load;
    peak = std::max(peak, load);
  }
  return peak / (sum / hours);
}

int Population::peak_hour() const { return busiest_hour(regions_.size()); }

int Population::peak_hour(size_t r) const { return busiest_hour(r); }

int Population::busiest_hour(size_t only) const {
  const int hours = std::max(1, static_cast<int>(std::ceil(ns_to_seconds(duration_ns_) / 3600.0)));
  int best = 0;
  double peak = -1;
  for (int h = 0; h < hours; ++h) {
    double load = 0;
    for (size_t r = 0; r < regions_.size(); ++r)
      if (only == regions_.size() || r == only)
        load += sessions_per_day(r) * multiplier(r, h * 3600.0 + 1800.0);
    if (load > peak) {
      peak = load;
      best = h;
    }
  }
  return best;
}

std::vector<workload::RequestClass> Population::request_classes() const {
  std::vector<workload::RequestClass> v;
  for (const auto& k : classes_) v.push_back(k.info);
  return v;
}

bool Population::draw_user_day() {
  constexpr double kDay = 86400.0;
  for (;; ++day_) {
    const double t0 = day_ * kDay;
    if (seconds_to_ns(t0) >= duration_ns_) return false;
    starts_.clear();
    next_start_ = 0;
    for (size_t r = 0; r < regions_.size(); ++r) {
      // The day's mean and peak of h_r·w_r, minute by minute (curves step at local hours;
      // offsets are whole minutes in practice).
      double sum = 0, peak = 0;
      for (int m = 0; m < 1440; ++m) {
        const double x = multiplier(r, t0 + (m + 0.5) * 60.0);
        sum += x;
        peak = std::max(peak, x);
      }
      if (peak <= 0) continue;
      const double p = std::min(1.0, dau_ * sum / 1440.0);
      for (uint64_t i = 0; i < users_[r]; ++i) {
        if (arrivals_.uniform01() >= p) continue;
        const double x =
            std::min(kSessionsPerUserDayMax, std::max(0.0, sessions_per_user_->sample(arrivals_)));
        double n = std::floor(x);
        if (arrivals_.uniform01() < x - n) n += 1;
        for (int j = 0; j < static_cast<int>(n); ++j) {
          double t = 0;  // a time of the day with density ∝ h_r·w_r (rejection)
          do {
            t = t0 + arrivals_.uniform01() * kDay;
          } while (arrivals_.uniform01() * peak >= multiplier(r, t));
          const SimTime tn = seconds_to_ns(t);
          if (tn < duration_ns_) starts_.push_back(Start{tn, static_cast<uint8_t>(r)});
        }
      }
    }
    std::stable_sort(starts_.begin(), starts_.end(),
                     [](const Start& a, const Start& b) { return a.t < b.t; });
    if (!starts_.empty()) {
      ++day_;
      return true;
    }
  }
}

bool Population::next_start(size_t& region) {
  if (per_user_) {
    while (next_start_ >= starts_.size())
      if (!draw_user_day()) return false;
    const Start& s = starts_[next_start_++];
    t_ns_ = s.t;
    region = s.region;
    return true;
  }
  // Thinning (Lewis and Shedler 1979): candidates at the bound rate Λ_max, each kept with
  // probability Λ(t)/Λ_max, then a region with probability λ_r(t)/Λ(t).
  for (;;) {
    t_ns_ += seconds_to_ns(arrivals_.exponential(1.0 / max_rate_));
    if (t_ns_ >= duration_ns_) return false;
    double rates[256];
    double total = 0;
    for (size_t r = 0; r < regions_.size(); ++r) total += (rates[r] = session_rate(r, t_ns_));
    const double u = arrivals_.uniform01() * max_rate_;
    if (u >= total) continue;
    region = 0;
    double acc = rates[0];
    while (u >= acc && region + 1 < regions_.size()) acc += rates[++region];
    return true;
  }
}

bool Population::next_session(std::vector<RequestSpec>& out) {
  while (!done_) {
    size_t region = 0;
    if (!next_start(region)) {
      done_ = true;
      break;
    }
    const double c = arrivals_.uniform01();
    const auto cls = std::min<uint8_t>(
        static_cast<uint8_t>(std::lower_bound(class_cdf_.begin(), class_cdf_.end(), c) -
                             class_cdf_.begin()),
        static_cast<uint8_t>(classes_.size() - 1));
    const uint64_t index = sessions_drawn_++;
    if (!keep_.empty() && !keep_[cls]) continue;
    const uint32_t slot = sessions_.add(Session{});
    Session& s = sessions_[slot];
    s.cls = cls;
    s.region = static_cast<uint8_t>(region);
    s.rng = Rng(session_seed_ + index * 0x9e3779b97f4a7c15ULL);
    s.index = index;
    const auto& k = classes_[s.cls];
    s.turns_left = std::max<int32_t>(
        1, workload::to_tokens((k.turns ? k.turns.get() : turns_.get())->sample(s.rng)));
    if (!adapter_cdf_.empty() && (adapter_classes_.empty() || adapter_classes_[s.cls])) {
      s.adapter = workload::pick_adapter(adapter_cdf_, s.rng.uniform01());
    }
    s.context = system_;
    ++sessions_started_;
    if (make_turn(slot, t_ns_, true, out)) return true;
    sessions_.release(slot);
  }
  return false;
}

bool Population::make_turn(uint32_t slot, SimTime t, bool first, std::vector<RequestSpec>& out) {
  Session& s = sessions_[slot];
  if (s.turns_left <= 0 || t >= duration_ns_) return false;
  const auto& k = classes_[s.cls];
  const int32_t user =
      workload::to_tokens((k.prompt ? k.prompt.get() : prompt_.get())->sample(s.rng));
  const int32_t calls =
      k.fanout ? std::max<int32_t>(1, workload::to_tokens(k.fanout->sample(s.rng))) : 1;
  const int64_t prompt = static_cast<int64_t>(s.context) + user;
  bool any = false;
  for (int32_t i = 0; i < calls; ++i) {
    RequestSpec r;
    r.prompt_tokens = static_cast<int32_t>(std::min<int64_t>(prompt, max_context_));
    r.output_tokens =
        workload::to_tokens((k.output ? k.output.get() : output_.get())->sample(s.rng));
    if (prompt + r.output_tokens > max_context_) break;  // the conversation is full
    // Ids from the session's index: the same whichever sessions a partition keeps.
    r.id = (s.index << 24) | (s.calls++ & 0xffffffu);
    r.arrival_ns = t;
    r.client = static_cast<int32_t>(slot);
    r.first_turn = first;
    r.cls = s.cls;
    r.priority = static_cast<uint8_t>(k.info.priority);
    r.region = s.region;
    r.adapter = s.adapter;
    if (prefix_block_tokens_ > 0) {
      r.hash_begin = static_cast<uint32_t>(s.index + 1);
      r.hash_count = static_cast<uint32_t>(r.prompt_tokens / prefix_block_tokens_);
    }
    out.push_back(r);
    any = true;
    ++s.calls_left;
  }
  if (!any) return false;
  --s.turns_left;
  s.turn_prompt = static_cast<int32_t>(prompt);
  s.turn_output = 0;
  return true;
}

void Population::on_done(const RequestSpec& r, SimTime now, std::vector<RequestSpec>& out) {
  Session& s = sessions_[static_cast<uint32_t>(r.client)];
  s.turn_output += r.output_tokens;
  if (--s.calls_left > 0) return;
  // Every answer of the turn joins the context.
  s.context =
      static_cast<int32_t>(std::min<int64_t>(int64_t{s.turn_prompt} + s.turn_output, max_context_));
  const SimTime t = now + seconds_to_ns(std::max(0.0, think_->sample(s.rng)));
  if (!make_turn(static_cast<uint32_t>(r.client), t, false, out))
    sessions_.release(static_cast<uint32_t>(r.client));
}

std::string Population::describe() const {
  // Counts of people and calls: billions as "B", as they are usually written.
  auto m = [](double x) {
    std::string c = units::format_count(x);
    if (!c.empty() && c.back() == 'G') c.back() = 'B';
    return c;
  };
  std::string s = m(wau_) + " weekly users, " + m(wau_ * dau_) + " daily, " + m(calls_per_day()) +
                  " calls/day, " + std::to_string(regions_.size()) + " regions";
  if (sample_ < 1) s += ", sampled " + m(sample_ * 100) + " % of users";
  if (per_user_) s += ", users tracked one by one";
  return s;
}

}  // namespace fleetsim::fleet
