#include "sim/workload/workload.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <stdexcept>

#include "hw_models/error.h"
#include "sim/scenario/schema.h"
#include "sim/workload/fmt.h"

namespace fleetsim::workload {

namespace {

using detail::fmt;
using detail::kInf;

// When generation stops: after `requests` requests and/or at `duration` (arrivals at
// t >= duration are not generated: the window is [0, duration)).
struct Limits {
  std::optional<uint64_t> requests;
  std::optional<SimTime> duration_ns;

  bool count_reached(uint64_t generated) const { return requests && generated >= *requests; }
  bool past_end(SimTime t_ns) const { return duration_ns && t_ns >= *duration_ns; }
  std::string describe() const {
    std::string s;
    if (requests) s += ", " + std::to_string(*requests) + " requests";
    if (duration_ns) s += ", for " + fmt(ns_to_seconds(*duration_ns)) + " s";
    return s;
  }
};

// Prompt and output lengths drawn from the "lengths" stream, prompt first. With classes,
// the class is drawn first (its own "classes" stream) and its lengths, when it has them,
// replace the defaults.
struct Lengths {
  std::unique_ptr<Distribution> prompt, output;
  Rng rng;
  struct Class {
    RequestClass info;
    std::shared_ptr<Distribution> prompt, output;  // null: the defaults
  };
  std::vector<Class> classes = {};
  std::vector<double> cumulative = {};  // normalised cumulative shares
  Rng class_rng{0};
  // LoRA adapters: adapter i (1-based) with probability ∝ i^-s, from the "adapters" stream.
  std::vector<double> adapter_cdf = {};
  Rng adapter_rng{0};

  void fill(RequestSpec& r) {
    const Distribution* p = prompt.get();
    const Distribution* o = output.get();
    if (!classes.empty()) {
      const double u = class_rng.uniform01();
      size_t c = 0;
      while (c + 1 < cumulative.size() && u >= cumulative[c]) ++c;
      r.cls = static_cast<uint8_t>(c);
      r.priority = static_cast<uint8_t>(classes[c].info.priority);
      if (classes[c].prompt) p = classes[c].prompt.get();
      if (classes[c].output) o = classes[c].output.get();
    }
    r.prompt_tokens = to_tokens(p->sample(rng));
    r.output_tokens = to_tokens(o->sample(rng));
    if (!adapter_cdf.empty()) r.adapter = pick_adapter(adapter_cdf, adapter_rng.uniform01());
  }
  std::string describe() const {
    std::string s = "prompt " + prompt->describe() + ", output " + output->describe();
    if (!adapter_cdf.empty()) s += ", " + std::to_string(adapter_cdf.size()) + " LoRA adapters";
    for (const auto& c : classes) s += "; class " + c.info.name + " " + fmt(c.info.share);
    return s;
  }
};

// Open loop: gaps between arrivals are i.i.d. with mean 1/λ. Poisson: exponential gaps.
// Gamma with cv c: shape k = 1/c², scale θ = 1/(λk), so mean kθ = 1/λ and
// cv = sqrt(kθ²)/(kθ) = 1/sqrt(k) = c.
class OpenLoop final : public Workload {
 public:
  OpenLoop(bool gamma, double rate_per_s, double cv, Lengths lengths, Rng arrivals, Limits limits)
      : gamma_(gamma),
        rate_(rate_per_s),
        cv_(cv),
        lengths_(std::move(lengths)),
        arrivals_(arrivals),
        limits_(limits) {}

  /// A rate that changes over time: points (t in s, rate in 1/s), t non-decreasing, the
  /// rate linear between neighbours (two points at one t make a step) and the last point's
  /// after it. Arrivals are then a non-homogeneous Poisson process, drawn by thinning: gaps
  /// at the peak rate, each kept with probability rate(t) / peak (Lewis and Shedler, 1979).
  void set_shape(std::vector<std::pair<double, double>> shape) {
    shape_ = std::move(shape);
    for (const auto& [t, r] : shape_) rate_ = std::max(rate_, r);
  }

  std::optional<RequestSpec> next_arrival() override {
    if (done_ || limits_.count_reached(next_id_)) return std::nullopt;
    if (!shape_.empty()) return next_shaped();
    double gap_s;
    if (gamma_) {
      const double k = 1.0 / (cv_ * cv_);
      gap_s = arrivals_.gamma(k, 1.0 / (rate_ * k));
    } else {
      gap_s = arrivals_.exponential(1.0 / rate_);
    }
    // Accumulate in integer ns so the arrival times do not drift with float round-off.
    t_ns_ = add_time(t_ns_, seconds_to_ns(gap_s));
    if (limits_.past_end(t_ns_)) {
      done_ = true;
      return std::nullopt;
    }
    RequestSpec r;
    r.id = next_id_++;
    r.arrival_ns = t_ns_;
    lengths_.fill(r);
    return r;
  }
  std::optional<RequestSpec> on_completion(const RequestSpec&, SimTime) override {
    return std::nullopt;
  }
  std::string describe() const override {
    if (!shape_.empty())
      return "poisson, shaped: " + std::to_string(shape_.size()) + " points, peak " + fmt(rate_) +
             "/s, " + lengths_.describe() + limits_.describe();
    return (gamma_ ? "gamma " + fmt(rate_) + "/s cv=" + fmt(cv_) : "poisson " + fmt(rate_) + "/s") +
           ", " + lengths_.describe() + limits_.describe();
  }
  /// The peak rate of a shaped process.
  double nominal_rate_per_s() const override { return rate_; }

 private:
  double rate_at(double t_s) {
    while (cursor_ + 1 < shape_.size() && shape_[cursor_ + 1].first <= t_s) ++cursor_;
    if (cursor_ + 1 >= shape_.size() || t_s < shape_[cursor_].first)
      return t_s < shape_.front().first ? shape_.front().second : shape_.back().second;
    const auto& [t0, r0] = shape_[cursor_];
    const auto& [t1, r1] = shape_[cursor_ + 1];
    return t1 > t0 ? r0 + (r1 - r0) * (t_s - t0) / (t1 - t0) : r1;
  }

  std::optional<RequestSpec> next_shaped() {
    // After the last point at rate 0 nothing more arrives.
    const bool ends = shape_.back().second <= 0;
    while (true) {
      t_ns_ = add_time(t_ns_, seconds_to_ns(arrivals_.exponential(1.0 / rate_)));
      const double t_s = ns_to_seconds(t_ns_);
      if (limits_.past_end(t_ns_) || (ends && t_s >= shape_.back().first)) {
        done_ = true;
        return std::nullopt;
      }
      if (arrivals_.uniform01() * rate_ < rate_at(t_s)) break;
    }
    RequestSpec r;
    r.id = next_id_++;
    r.arrival_ns = t_ns_;
    lengths_.fill(r);
    return r;
  }

  std::vector<std::pair<double, double>> shape_;
  size_t cursor_ = 0;
  bool gamma_;
  double rate_, cv_;
  Lengths lengths_;
  Rng arrivals_;
  Limits limits_;
  SimTime t_ns_ = 0;
  uint64_t next_id_ = 0;
  bool done_ = false;
};

// Closed loop: N users, each with at most one request outstanding; a user thinks, sends,
// waits for the completion, thinks again.
class ClosedLoop final : public Workload {
 public:
  ClosedLoop(int64_t users, std::unique_ptr<Distribution> think, Lengths lengths, Rng clients,
             Limits limits)
      : users_(users),
        think_(std::move(think)),
        lengths_(std::move(lengths)),
        clients_(clients),
        limits_(limits) {}

  // The first requests: every user's think draw from t = 0, drawn in user order and handed
  // out in time order (stable for ties), so callers see arrivals that never go back.
  std::optional<RequestSpec> next_arrival() override {
    if (!started_) {
      started_ = true;
      first_.reserve(static_cast<size_t>(users_));
      for (int64_t u = 0; u < users_; ++u) first_.push_back({think_ns(0), static_cast<int32_t>(u)});
      std::stable_sort(first_.begin(), first_.end(),
                       [](const Start& a, const Start& b) { return a.t_ns < b.t_ns; });
    }
    while (next_first_ < first_.size()) {
      const Start s = first_[next_first_++];
      if (auto r = make(s.user, s.t_ns)) return r;
    }
    return std::nullopt;
  }

  std::optional<RequestSpec> on_completion(const RequestSpec& done, SimTime now_ns) override {
    if (done.client < 0 || done.client >= users_)
      throw std::invalid_argument(
          "ClosedLoop::on_completion: request has no client of this workload");
    return make(done.client, think_ns(now_ns));
  }

  std::string describe() const override {
    return "closed loop " + std::to_string(users_) + " users, think " + think_->describe() +
           " s, " + lengths_.describe() + limits_.describe();
  }
  // The rate depends on how fast the replicas answer: unknown here.
  double nominal_rate_per_s() const override { return 0.0; }

 private:
  struct Start {
    SimTime t_ns;
    int32_t user;
  };
  SimTime think_ns(SimTime from_ns) {
    return add_time(from_ns, seconds_to_ns(std::max(0.0, think_->sample(clients_))));
  }
  std::optional<RequestSpec> make(int32_t user, SimTime t_ns) {
    if (limits_.count_reached(next_id_) || limits_.past_end(t_ns)) return std::nullopt;
    RequestSpec r;
    r.id = next_id_++;
    r.arrival_ns = t_ns;
    r.client = user;
    lengths_.fill(r);
    return r;
  }

  int64_t users_;
  std::unique_ptr<Distribution> think_;
  Lengths lengths_;
  Rng clients_;
  Limits limits_;
  bool started_ = false;
  std::vector<Start> first_;
  size_t next_first_ = 0;
  uint64_t next_id_ = 0;
};

// Trace replay: arrival = record time × time_scale; lengths and prefix hashes from the trace.
class TraceReplay final : public Workload {
 public:
  TraceReplay(Trace trace, double time_scale, Limits limits)
      : trace_(std::move(trace)), scale_(time_scale), limits_(limits) {}

  std::optional<RequestSpec> next_arrival() override {
    if (next_ >= trace_.records.size() || limits_.count_reached(next_)) return std::nullopt;
    const TraceRecord& rec = trace_.records[next_];
    const SimTime t_ns = seconds_to_ns(rec.time_s * scale_);
    if (limits_.past_end(t_ns)) {
      next_ = trace_.records.size();
      return std::nullopt;
    }
    RequestSpec r;
    r.id = next_++;
    r.arrival_ns = t_ns;
    r.prompt_tokens = rec.input_tokens;
    r.output_tokens = rec.output_tokens;
    r.hash_begin = rec.hash_begin;
    r.hash_count = rec.hash_count;
    return r;
  }
  std::optional<RequestSpec> on_completion(const RequestSpec&, SimTime) override {
    return std::nullopt;
  }
  const Trace* trace() const override { return &trace_; }
  std::string describe() const override {
    return "trace " + std::filesystem::path(trace_.file).filename().string() + " (" +
           trace_.format + ", " + std::to_string(trace_.records.size()) + " records), time scale " +
           fmt(scale_) + limits_.describe();
  }
  // Requests replayed over the replayed span: n / (t_last·scale).
  double nominal_rate_per_s() const override {
    size_t n = trace_.records.size();
    if (limits_.requests) n = std::min<size_t>(n, static_cast<size_t>(*limits_.requests));
    if (n < 2) return 0.0;
    const double span_s = trace_.records[n - 1].time_s * scale_;
    return span_s > 0 ? static_cast<double>(n) / span_s : 0.0;
  }

 private:
  Trace trace_;
  double scale_;
  Limits limits_;
  size_t next_ = 0;
};

// Multi-turn conversations: conversations start as a Poisson stream; each has a number of
// turns; after a turn completes, the user thinks and sends the next one. Turn i's prompt is
// the shared system prompt, then every earlier turn's user tokens and answer, then the new
// user tokens, so a conversation reuses its own context (and all of them the system
// prompt). Prefix hashes: block b of `block_tokens` tokens is hash(0, b) inside the system
// prompt and hash(conversation, b) after it — equal content, equal hash — so the replica's
// prefix cache sees the reuse. A conversation ends after its turns, or before a turn whose
// prompt + output would exceed `max_context_tokens`.
class Conversations final : public Workload {
 public:
  Conversations(double rate, std::unique_ptr<Distribution> turns,
                std::unique_ptr<Distribution> think, int32_t system_tokens, int block_tokens,
                int32_t max_context, Lengths lengths, Rng arrivals, Rng clients, Limits limits)
      : rate_(rate),
        turns_(std::move(turns)),
        think_(std::move(think)),
        system_(system_tokens),
        max_context_(max_context),
        lengths_(std::move(lengths)),
        arrivals_(arrivals),
        clients_(clients),
        limits_(limits) {
    trace_.file = "conversations";
    trace_.format = "conversations";
    trace_.block_tokens = block_tokens;
  }

  std::optional<RequestSpec> next_arrival() override {
    while (!done_) {
      t_ns_ = add_time(t_ns_, seconds_to_ns(arrivals_.exponential(1.0 / rate_)));
      if (limits_.past_end(t_ns_) || limits_.count_reached(next_id_)) {
        done_ = true;
        break;
      }
      const int32_t c = static_cast<int32_t>(convs_.size());
      Conv conv;
      conv.turns_left = std::max<int32_t>(1, to_tokens(turns_->sample(clients_)));
      conv.context = system_;
      convs_.push_back(conv);
      if (auto r = make(c, t_ns_, true)) return r;
    }
    return std::nullopt;
  }

  std::optional<RequestSpec> on_completion(const RequestSpec& done, SimTime now_ns) override {
    if (done.client < 0 || done.client >= static_cast<int32_t>(convs_.size()))
      throw std::invalid_argument("Conversations::on_completion: unknown conversation");
    Conv& c = convs_[static_cast<size_t>(done.client)];
    c.context = done.prompt_tokens + done.output_tokens;  // the answer joins the context
    if (c.turns_left <= 0) return std::nullopt;
    const SimTime t = add_time(now_ns, seconds_to_ns(std::max(0.0, think_->sample(clients_))));
    return make(done.client, t, false);
  }

  const Trace* trace() const override { return &trace_; }
  std::string describe() const override {
    return "conversations " + fmt(rate_) + "/s, turns " + turns_->describe() + ", think " +
           think_->describe() + " s, system prompt " + std::to_string(system_) +
           " tokens, per turn " + lengths_.describe() + limits_.describe();
  }
  // Turns per second: conversation starts × mean turns (an estimate).
  double nominal_rate_per_s() const override { return rate_; }

 private:
  struct Conv {
    int32_t turns_left = 0;
    int32_t context = 0;  // tokens before this turn's user message
  };

  std::optional<RequestSpec> make(int32_t conv, SimTime t_ns, bool first) {
    if (limits_.count_reached(next_id_) || limits_.past_end(t_ns)) return std::nullopt;
    Conv& c = convs_[static_cast<size_t>(conv)];
    RequestSpec r;
    lengths_.fill(r);
    const int64_t prompt = static_cast<int64_t>(c.context) + r.prompt_tokens;
    if (prompt + r.output_tokens > max_context_) {
      c.turns_left = 0;  // the conversation ends (a first turn: next_arrival draws another)
      return std::nullopt;
    }
    --c.turns_left;
    r.id = next_id_++;
    r.arrival_ns = t_ns;
    r.client = conv;
    r.first_turn = first;
    r.prompt_tokens = static_cast<int32_t>(prompt);
    // Hashes of the prompt's whole blocks.
    const int64_t bt = trace_.block_tokens;
    r.hash_begin = static_cast<uint32_t>(trace_.hashes.size());
    r.hash_count = static_cast<uint32_t>(prompt / bt);
    for (int64_t b = 0; b < prompt / bt; ++b) {
      const uint64_t owner = (b + 1) * bt <= system_ ? 0 : static_cast<uint64_t>(conv) + 1;
      trace_.hashes.push_back(conversation_block_hash(owner, b));
    }
    return r;
  }

  double rate_;
  std::unique_ptr<Distribution> turns_, think_;
  int32_t system_, max_context_;
  Lengths lengths_;
  Rng arrivals_, clients_;
  Limits limits_;
  Trace trace_;
  std::vector<Conv> convs_;
  SimTime t_ns_ = 0;
  uint64_t next_id_ = 0;
  bool done_ = false;
};

// Arrivals 1/rate apart on average must fit in the simulated span (kMaxSimSeconds): a rate
// of 1e-300/s would put the first arrival 1e300 s away.
void check_rate_span(const yaml::Map& m, double rate) {
  if (1.0 / rate < kMaxSimSeconds) return;
  char b[200];
  std::snprintf(b, sizeof b,
                "a rate of %.3g/s puts arrivals %.3g s apart on average, beyond the %.3g s "
                "(about 292 years) of simulated time fleetsim represents",
                rate, 1.0 / rate, kMaxSimSeconds);
  m.fail("rate", b, "give a rate of at least 1.1e-10/s (one arrival per 290 years)");
}

}  // namespace

std::vector<double> read_adapters(yaml::Map& section) {
  yaml::Map ad = section.map("adapters");
  const int64_t count = ad.integer(scenario::schema::key_in(ad, "count"));
  const double zipf = ad.number_or(scenario::schema::key_in(ad, "popularity_zipf"));
  ad.finish();
  double sum = 0;
  for (int64_t i = 1; i <= count; ++i) sum += std::pow(static_cast<double>(i), -zipf);
  std::vector<double> cdf;
  double acc = 0;
  for (int64_t i = 1; i <= count; ++i)
    cdf.push_back((acc += std::pow(static_cast<double>(i), -zipf)) / sum);
  return cdf;
}

RequestClass read_request_class(yaml::Map& c) {
  RequestClass k;
  k.name = c.str(scenario::schema::key_in(c, "name"));
  k.share = c.number(scenario::schema::key_in(c, "share"));
  k.priority = static_cast<int>(c.integer_or(scenario::schema::key_in(c, "priority")));
  if (auto slo = c.map_opt("slo")) {
    const SloSection s = read_slo(*slo, k.name);
    k.slo_ttft_s = s.ttft_s.value_or(0.0);
    k.slo_tpot_s = s.tpot_s.value_or(0.0);
    k.slo_targets = s.targets;
  }
  return k;
}

namespace {
std::unique_ptr<Workload> from_yaml_source(yaml::Map& section, const RngStreams& rng,
                                           const std::string& base_dir, double traffic);
}  // namespace

std::unique_ptr<Workload> Workload::from_yaml(yaml::Map& section, const RngStreams& rng,
                                              const std::string& base_dir) {
  // Read before the source's parser finishes the section (it rejects keys nobody read).
  const uint64_t warmup = static_cast<uint64_t>(
      section.integer_or(scenario::schema::key_in(section, "warmup_requests")));
  // traffic_scale: every arrival rate × s (a trace replayed s times as fast), for "what if
  // traffic grows 20 %" without rewriting the rates.
  const double traffic = section.number_or(scenario::schema::key_in(section, "traffic_scale"));
  std::unique_ptr<Workload> w = from_yaml_source(section, rng, base_dir, traffic);
  w->set_warmup_requests(warmup);
  return w;
}

namespace {
std::unique_ptr<Workload> from_yaml_source(yaml::Map& section, const RngStreams& rng,
                                           const std::string& base_dir, double traffic) {
  // Exactly one source of requests.
  std::vector<std::string> given;
  for (const char* k : {"arrival", "clients", "trace", "conversations"})
    if (section.has(k)) given.push_back(k);
  if (given.empty())
    section.fail("",
                 "workload needs one of arrival (open loop), clients (closed loop), "
                 "conversations (multi-turn) or trace (replay)",
                 "e.g. 'arrival: {process: poisson, rate: 20/s}'");
  if (given.size() > 1)
    section.fail(given[1], "use only one of arrival, clients and trace (got " + given[0] + " and " +
                               given[1] + ")");
  const std::string kind = given[0];

  Limits limits;
  if (section.has("requests")) {
    const int64_t n = section.integer("requests", std::numeric_limits<int64_t>::min(),
                                      std::numeric_limits<int64_t>::max());
    if (n == 0)
      section.fail("requests", "workload generates no requests", "set requests to at least 1");
    if (n < 0) section.fail("requests", "requests must be >= 1, got " + std::to_string(n));
    limits.requests = static_cast<uint64_t>(n);
  }
  if (section.has("duration")) {
    const double d = section.quantity("duration", units::Dim::kTime, -kInf);
    if (d <= 0) section.fail("duration", "duration must be > 0, got " + fmt(d) + " s");
    if (d > 9.0e9) section.fail("duration", "duration must be < 285 years");
    limits.duration_ns = seconds_to_ns(d);
  }
  if (!limits.requests && !limits.duration_ns && kind != "trace")
    section.fail("", "workload never ends: give requests, duration or both",
                 "e.g. 'requests: 10000' or 'duration: 10min'");

  if (kind == "trace") {
    for (const char* k : {"prompt_tokens", "output_tokens", "classes", "adapters"})
      if (section.has(k))
        section.fail(k, std::string(k) + " cannot be used with trace: lengths come from the trace",
                     "remove it, or use arrival/clients with length distributions");
    std::string file, format = "auto";
    double scale = 1.0;
    std::string file_key = "trace";  // where a missing file is reported
    std::optional<yaml::Map> tm;
    if (section.node()["trace"].IsMap()) {
      tm = section.map("trace");
      file = tm->str(scenario::schema::key_in(*tm, "file"));
      format = tm->choice_or(scenario::schema::key_in(*tm, "format"));
      scale = tm->number_or("time_scale", -std::numeric_limits<double>::max(),
                            std::numeric_limits<double>::max(), 1.0);
      if (scale <= 0)
        tm->fail("time_scale", "time_scale must be > 0, got " + fmt(scale),
                 "2.0 replays twice as slow, 0.5 twice as fast");
      tm->finish();
    } else {
      file = section.str("trace");
    }
    const std::string path = resolve_path(base_dir, file);
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      const std::string msg = "cannot open trace file '" + path + "'";
      const std::string hint = "relative paths are relative to the scenario file's folder";
      if (tm) tm->fail("file", msg, hint);
      section.fail("trace", msg, hint);
    }
    Trace t = load_trace(path, format);
    section.finish();
    return std::make_unique<TraceReplay>(std::move(t), scale / traffic, limits);
  }

  Lengths lengths{parse_distribution(section, "prompt_tokens", Quantity::kTokens, base_dir),
                  parse_distribution(section, "output_tokens", Quantity::kTokens, base_dir),
                  rng.stream("lengths")};
  if (section.has("adapters")) {
    lengths.adapter_cdf = read_adapters(section);
    lengths.adapter_rng = rng.stream("adapters");
  }
  std::vector<RequestClass> classes;
  if (section.has("classes")) {
    const YAML::Node list = section.node()["classes"];
    if (!list.IsSequence() || list.size() == 0)
      section.fail(
          "classes", "expected a non-empty list of classes",
          "e.g. classes: [{name: chat, share: 0.7, priority: 1}, {name: batch, share: 0.3}]");
    if (list.size() > 255) section.fail("classes", "at most 255 classes");
    auto src = std::make_shared<yaml::Source>(yaml::Source{section.file(), {}});
    double total = 0;
    for (size_t i = 0; i < list.size(); ++i) {
      yaml::Map c(list[i], src, section.path() + ".classes[" + std::to_string(i) + "]");
      Lengths::Class k;
      k.info = read_request_class(c);
      if (c.has("prompt_tokens"))
        k.prompt = parse_distribution(c, "prompt_tokens", Quantity::kTokens, base_dir);
      if (c.has("output_tokens"))
        k.output = parse_distribution(c, "output_tokens", Quantity::kTokens, base_dir);
      c.finish();
      for (const auto& other : lengths.classes)
        if (other.info.name == k.info.name)
          c.fail("name", "duplicate class name '" + k.info.name + "'");
      total += k.info.share;
      classes.push_back(k.info);
      lengths.classes.push_back(std::move(k));
    }
    double acc = 0;
    for (const auto& k : lengths.classes)
      lengths.cumulative.push_back((acc += k.info.share) / total);
    lengths.class_rng = rng.stream("classes");
  }

  if (kind == "conversations") {
    yaml::Map cv = section.map("conversations");
    const double rate = traffic * cv.quantity("rate", units::Dim::kRate, -kInf);
    if (rate <= 0) cv.fail("rate", "rate must be > 0", "new conversations per second, e.g. '2/s'");
    check_rate_span(cv, rate);
    std::unique_ptr<Distribution> turns =
        parse_distribution(cv, "turns", Quantity::kTokens, base_dir);
    std::unique_ptr<Distribution> think =
        cv.has("think_time") ? parse_distribution(cv, "think_time", Quantity::kDuration, base_dir)
                             : make_fixed(0.0);
    const int32_t system =
        static_cast<int32_t>(cv.integer_or(scenario::schema::key_in(cv, "system_prompt_tokens")));
    const int block = static_cast<int>(cv.integer_or(scenario::schema::key_in(cv, "block_tokens")));
    const int32_t max_ctx =
        static_cast<int32_t>(cv.integer_or(scenario::schema::key_in(cv, "max_context_tokens")));
    cv.finish();
    section.finish();
    auto w = std::make_unique<Conversations>(rate, std::move(turns), std::move(think), system,
                                             block, max_ctx, std::move(lengths),
                                             rng.stream("arrivals"), rng.stream("clients"), limits);
    w->set_classes(std::move(classes));
    return w;
  }

  if (kind == "arrival") {
    yaml::Map a = section.map("arrival");
    const std::string process = a.choice_or(scenario::schema::key_in(a, "process"));
    if (a.has("shape")) {
      // shape: [{at: 0s, rate: 10/s}, {at: 10min, rate: 10/s}, {at: 10min, rate: 40/s}, ...]
      if (a.has("rate"))
        a.fail("rate", "give either rate (constant) or shape (a rate over time)",
               "drop rate; the shape's points give the rate");
      if (process != "poisson")
        a.fail("process", "a shaped arrival rate is a (non-homogeneous) Poisson process",
               "drop process: gamma, or use a constant rate");
      const YAML::Node list = a.node()["shape"];
      const char* example = "e.g. shape: [{at: 0s, rate: 10/s}, {at: 5min, rate: 40/s}]";
      if (!list.IsSequence() || list.size() == 0 || list.size() > 100000)
        a.fail("shape", "expected a list of 1 to 100,000 points {at, rate}", example);
      auto src = std::make_shared<yaml::Source>(yaml::Source{a.file(), {}});
      std::vector<std::pair<double, double>> shape;
      for (size_t i = 0; i < list.size(); ++i) {
        yaml::Map pt(list[i], src, a.path() + ".shape[" + std::to_string(i) + "]");
        const double at = pt.quantity("at", units::Dim::kTime, 0.0);
        const double r = pt.quantity("rate", units::Dim::kRate, 0.0);
        if (!shape.empty() && at < shape.back().first)
          pt.fail("at",
                  "the points must be in time order (" + fmt(at) + " s after " +
                      fmt(shape.back().first) + " s)",
                  "sort them by at; two points at one time make a step");
        if (at > kMaxSimSeconds) pt.fail("at", "beyond the simulated time fleetsim represents", "");
        pt.finish();
        shape.push_back({at, traffic * r});
      }
      double peak = 0;
      for (const auto& [t, r] : shape) peak = std::max(peak, r);
      if (peak <= 0) a.fail("shape", "every point has rate 0: nothing would arrive", example);
      check_rate_span(a, peak);
      a.finish();
      section.finish();
      auto w = std::make_unique<OpenLoop>(false, 0.0, 1.0, std::move(lengths),
                                          rng.stream("arrivals"), limits);
      w->set_shape(std::move(shape));
      w->set_classes(std::move(classes));
      return w;
    }
    const double rate = traffic * a.quantity("rate", units::Dim::kRate, -kInf);
    if (rate <= 0)
      a.fail("rate", "rate must be > 0, got " + a.node()["rate"].Scalar(), "e.g. '20/s'");
    check_rate_span(a, rate);
    double cv = 1.0;
    if (process == "gamma") {
      cv = a.number("cv", -std::numeric_limits<double>::max(), std::numeric_limits<double>::max());
      if (cv <= 0)
        a.fail("cv", "cv must be > 0, got " + fmt(cv),
               "cv is the coefficient of variation of the gaps: 1 is Poisson, > 1 is bursty");
    } else if (a.has("cv")) {
      a.fail("cv", "cv applies to process: gamma (Poisson gaps always have cv 1)");
    }
    a.finish();
    section.finish();
    auto w = std::make_unique<OpenLoop>(process == "gamma", rate, cv, std::move(lengths),
                                        rng.stream("arrivals"), limits);
    w->set_classes(std::move(classes));
    return w;
  }

  // clients
  if (traffic != 1.0)
    section.fail("traffic_scale", "a closed loop's traffic comes from its users, not a rate",
                 "change clients.users or the think time instead");
  yaml::Map c = section.map("clients");
  const int64_t users =
      c.integer("users", std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
  if (users < 1) c.fail("users", "users must be >= 1, got " + std::to_string(users));
  if (users > std::numeric_limits<int32_t>::max()) c.fail("users", "too many users");
  std::unique_ptr<Distribution> think =
      c.has("think_time") ? parse_distribution(c, "think_time", Quantity::kDuration, base_dir)
                          : make_fixed(0.0);
  c.finish();
  section.finish();
  auto w = std::make_unique<ClosedLoop>(users, std::move(think), std::move(lengths),
                                        rng.stream("clients"), limits);
  w->set_classes(std::move(classes));
  return w;
}

}  // namespace

}  // namespace fleetsim::workload
