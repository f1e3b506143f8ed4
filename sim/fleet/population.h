// Users → traffic: a population of weekly active users turned into sessions, turns and
// model calls, with diurnal and weekly curves per region in the region's time zone.
//
//   users:
//     weekly_active: 700e6          # weekly active users (WAU)
//     daily_active_fraction: 0.4    # DAU / WAU
//     sessions_per_day: {dist: exponential, mean: 2.5}   # per daily active user
//     tracking: auto                # users | rate | auto (users up to 100k weekly users)
//     turns_per_session: {dist: lognormal, median: 2, sigma: 0.9, max: 40}
//     think_time: {dist: lognormal, median: 40s, sigma: 1.0, max: 30min}
//     system_prompt_tokens: 600
//     max_context_tokens: 32768
//     prompt_tokens: <distribution>   # the new user message of each turn
//     output_tokens: <distribution>   # the answer of each call
//     classes:                        # shares of the sessions
//       - {name: chat, share: 0.8, slo: {ttft: 2s, tpot: 100ms}}
//       - {name: agent, share: 0.05, fanout: {dist: uniform, min: 2, max: 8}, model: ...}
//     sample: 0.01                    # simulate this share of the users (results scaled up)
//     start: {weekday: mon, hour_utc: 0}
//     duration: 24h
//
// Sessions start as a non-homogeneous Poisson process per region with rate
//   λ_r(t) = WAU · dau · E[sessions] · sample · share_r · h_r(local hour) · w_r(local day) / 86400 s
// where h_r (24 hourly multipliers) and w_r (7 daily multipliers) are normalised to mean 1,
// so a day integrates to WAU · dau · E[sessions] · sample · share_r sessions (a weekly curve
// moves load between days, not the week's total). Each turn's prompt is the system prompt
// plus the conversation so far plus the new user message; an agentic turn fans out into
// `fanout` parallel calls with the same prompt, and the next turn starts after all of them
// finish (their answers join the context) and the user's think time.
//
// tracking: rate draws session starts as that Poisson process: right for large populations,
// where a day's count is the sum of very many independent users. tracking: users follows the
// users themselves, as small populations need (a team of 200 has a day's sessions spread far
// wider than a Poisson count): region r has U_r = round(WAU · sample · share_r) users; on
// day k of the run (24 h from the start) each is active with probability
// min(1, dau · m_r,k), m_r,k the mean of h_r·w_r over that day, and an active user opens N
// sessions, N a draw of sessions_per_day rounded stochastically (floor(x) + Bernoulli of its
// fraction, so E[N] is the distribution's mean); each session starts at a time of the day
// drawn from h_r·w_r. The expected load is the rate mode's; a day's count varies as
// U·p·Var(N) + E[N]²·U·p(1−p) instead of its mean. A user's sessions are placed
// independently over the day (no clustering within a user: no public data to fit it).
#pragma once

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hw_models/yaml_reader.h"
#include "sim/core/rng.h"
#include "sim/core/slot_pool.h"
#include "sim/workload/distribution.h"
#include "sim/workload/request.h"

namespace fleetsim::fleet {

/// Where users are and when they are awake.
struct RegionTraffic {
  std::string name;
  double user_share = 1;            ///< share of the population (normalised over regions)
  double utc_offset_h = 0;          ///< local time = UTC + offset
  std::array<double, 24> hourly{};  ///< by local hour, mean 1
  std::array<double, 7> weekly{};   ///< by local weekday (Mon..Sun), mean 1
  std::string curve_name;           ///< "consumer", "business", "flat" or "custom"
};

/// Reads `diurnal` (a built-in curve name or 24 numbers) and `weekly` (7 numbers) from a
/// region's map into `r`, normalised to mean 1. Errors name the field.
void read_curves(yaml::Map& region, RegionTraffic& r);
/// The built-in curves by name, for errors and docs.
std::vector<std::string> builtin_curves();

/// A session class (chat, reasoning, agent, ...): its share of sessions, lengths, priority,
/// SLO, target model ("" = the scenario's) and parallel calls per turn.
struct SessionClass {
  workload::RequestClass info;
  std::string model;
  std::shared_ptr<workload::Distribution> prompt, output, turns, fanout;  ///< null: defaults
  double turns_mean = 0, fanout_mean = 1;  ///< of the draws as generated (bounds, rounding)
};

/// The mean of `d`'s draws as the generator makes them (redrawn into bounds; rounded to
/// whole numbers when `whole`), estimated from 2^17 draws of a fixed stream.
double sampled_mean(const workload::Distribution& d, bool whole);
/// The same draws' mean and mean square.
std::pair<double, double> sampled_moments(const workload::Distribution& d, bool whole);

class Population {
 public:
  /// Reads the `users:` section (InputError on any problem). Streams: "sessions",
  /// "session-lengths".
  Population(yaml::Map& users, std::vector<RegionTraffic> regions, const RngStreams& rng,
             const std::string& base_dir);

  /// The next session to start (in time order): its first turn's calls are appended to
  /// `out`. False when no session starts before the end of the run.
  bool next_session(std::vector<workload::RequestSpec>& out);
  /// Keep only sessions of these classes (by index); the others are drawn and skipped, so
  /// each session's start, region, class and lengths are the same whatever is kept: the
  /// fleet simulates each model's pools apart (and in parallel) with identical traffic.
  void keep_classes(std::vector<bool> keep) { keep_ = std::move(keep); }
  /// Give every call its prompt's prefix-block hashes, generated (HashSpan): blocks of
  /// `block_tokens` tokens, the first shared_prefix_blocks() the system prompt's (the same
  /// in every session), the rest the session's own (owner: hash_begin, the session's index
  /// + 1, wrapping after 2^32 sessions). 0 (default): calls carry no hashes.
  void set_prefix_blocks(int block_tokens) { prefix_block_tokens_ = block_tokens; }
  int64_t shared_prefix_blocks() const {
    return prefix_block_tokens_ > 0 ? system_ / prefix_block_tokens_ : 0;
  }
  /// One call finished (completed or was given up) at `now`. When it was the last call of
  /// its turn, the next turn's calls (after the think time) are appended to `out`, or the
  /// session ends.
  void on_done(const workload::RequestSpec& r, SimTime now,
               std::vector<workload::RequestSpec>& out);

  /// LoRA adapters the sessions use (users.adapters.count; 0 = none).
  size_t adapters() const { return adapter_cdf_.size(); }
  /// Only sessions of these classes (by index) use an adapter: those of the model the
  /// adapters were trained for. Default: every class.
  void set_adapter_classes(std::vector<bool> classes) { adapter_classes_ = std::move(classes); }
  /// Expected sessions per full-scale day in region r (no sampling).
  double sessions_per_day(size_t r) const;
  /// Expected model calls per full-scale day, all regions: sessions × E[turns] × E[fanout]
  /// (before turns cut short by the context limit).
  double calls_per_day() const;
  /// Session-start rate of region r at time t (sampled, per second).
  double session_rate(size_t r, SimTime t) const;
  /// Mean over the simulated days of Σ_r h_r·w_r, and its peak hour: peak / mean of the
  /// global load (hourly resolution).
  double peak_to_mean() const;
  /// UTC hour (from the start) of the global peak.
  int peak_hour() const;
  /// The same for region r's own sessions alone.
  int peak_hour(size_t r) const;

  const std::vector<RegionTraffic>& regions() const { return regions_; }
  const std::vector<SessionClass>& classes() const { return classes_; }
  std::vector<workload::RequestClass> request_classes() const;
  double sample() const { return sample_; }
  double weekly_active() const { return wau_; }
  double daily_active_fraction() const { return dau_; }
  SimTime duration_ns() const { return duration_ns_; }
  /// True when users are tracked one by one (users.tracking, see the top of this file).
  bool tracks_users() const { return per_user_; }
  /// The sampled-run error of call counts is sqrt(this / sessions): the variance of the
  /// run's call count over (mean calls per session)² · sessions. A count of S sessions of
  /// T turns each (T independent of S) has variance E[S]·Var(T) + E[T]²·Var(S), so this is
  /// Var(S)/E[S] + Var(T)/E[T]². Var(S)/E[S] is 1 for `tracking: rate` (Poisson). Tracking
  /// users, a day's count is Σ over the N users of A·M, A ~ Bernoulli(q = dau) active and M
  /// the stochastically rounded sessions_per_day draw: variance N·(q·E[M²] − q²·E[M]²) over
  /// mean N·q·E[M], so (E[M²] − q·E[M]²) / E[M] (days are independent). The moments come
  /// from fixed streams of draws (deterministic); the day's mean activity multiplier is
  /// taken as 1, and agentic fan-out (calls per turn) and turns cut off by the run's end
  /// are left out.
  double call_count_dispersion() const { return dispersion_; }
  /// Seconds from Monday 00:00 UTC to the start of the run.
  double start_s() const { return start_s_; }
  uint64_t sessions_started() const { return sessions_started_; }
  std::string describe() const;

 private:
  /// Hour (from the start) of the most session starts, over region `only` or, when it is
  /// regions_.size(), over all of them.
  int busiest_hour(size_t only) const;
  struct Session {
    int32_t turns_left = 0;
    int32_t context = 0;      // tokens before this turn's user message
    int32_t calls_left = 0;   // calls of the current turn not finished
    int32_t turn_prompt = 0;  // this turn's prompt
    int32_t turn_output = 0;  // answers of this turn so far (join the context)
    uint8_t cls = 0, region = 0;
    Rng rng{0};            // the session's own stream: lengths, turns, think times
    uint64_t index = 0;    // among all sessions drawn (kept or not)
    uint32_t calls = 0;    // calls made so far
    uint32_t adapter = 0;  // LoRA adapter (1-based; 0: the base model)
  };
  /// The calls of the session's next turn at t (false: the session ends).
  bool make_turn(uint32_t slot, SimTime t, bool first, std::vector<workload::RequestSpec>& out);
  double multiplier(size_t r, double t_s) const;  // h_r·w_r at run time t_s
  /// tracking: users — the session starts of run day `day_` in time order into starts_
  /// (false once the run's days are over).
  bool draw_user_day();
  /// The next session start (time, region): by thinning, or from the users' day lists.
  bool next_start(size_t& region);

  std::vector<RegionTraffic> regions_;
  std::vector<SessionClass> classes_;
  std::vector<double> class_cdf_;
  std::vector<double> adapter_cdf_;  // users.adapters: adapter i with probability ∝ i^-s
  std::vector<bool> adapter_classes_;
  std::unique_ptr<workload::Distribution> sessions_per_user_, turns_, think_, prompt_, output_;
  double wau_ = 0, dau_ = 0, sample_ = 1, start_s_ = 0, sessions_mean_ = 0;
  int32_t system_ = 0, max_context_ = 0;
  int prefix_block_tokens_ = 0;
  SimTime duration_ns_ = 0;
  double max_rate_ = 0;  // Σ_r max λ_r: the thinning bound
  Rng arrivals_, lengths_;
  core::SlotPool<Session> sessions_;
  SimTime t_ns_ = 0;
  uint64_t sessions_started_ = 0, sessions_drawn_ = 0;
  uint64_t session_seed_ = 0;
  std::vector<bool> keep_;
  bool done_ = false;
  // tracking: users
  bool per_user_ = false;
  double dispersion_ = 1;        // call_count_dispersion
  std::vector<uint64_t> users_;  // U_r per region
  struct Start {
    SimTime t;
    uint8_t region;
  };
  std::vector<Start> starts_;  // this day's, in time order
  size_t next_start_ = 0;
  int day_ = 0;
};

}  // namespace fleetsim::fleet
