#include "sim/workload/slo.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "hw_models/yaml_reader.h"
#include "sim/scenario/schema.h"

namespace fleetsim::workload {

const char* slo_key(SloMetric m) {
  switch (m) {
    case SloMetric::kTtft: return "ttft";
    case SloMetric::kTpot: return "tpot";
    case SloMetric::kItl: return "itl";
  }
  return "?";
}

const char* slo_label(SloMetric m) {
  switch (m) {
    case SloMetric::kTtft: return "TTFT";
    case SloMetric::kTpot: return "TPOT";
    case SloMetric::kItl: return "ITL";
  }
  return "?";
}

std::string percentile_name(double quantile) {
  // The fewest decimals that give the percentile back (to 1e-9: 0.999 × 100 is
  // 99.899999999999991 in binary).
  const double p = 100.0 * quantile;
  char buf[48];
  for (int decimals = 0; decimals <= 12; ++decimals) {
    std::snprintf(buf, sizeof buf, "%.*f", decimals, p);
    if (std::fabs(std::strtod(buf, nullptr) - p) <= 1e-9 * p) break;
  }
  std::string s = "p";
  s += buf;
  return s;
}

namespace {

// "p99.9" → 0.999; nullopt unless `p` and a plain decimal number in (0, 100).
std::optional<double> parse_percentile(const std::string& key) {
  if (key.size() < 2 || key[0] != 'p') return std::nullopt;
  const std::string num = key.substr(1);
  if (num.find_first_not_of("0123456789.") != std::string::npos) return std::nullopt;
  char* end = nullptr;
  const double p = std::strtod(num.c_str(), &end);
  if (end != num.c_str() + num.size() || !(p > 0) || !(p < 100)) return std::nullopt;
  return p / 100.0;
}

}  // namespace

SloSection read_slo(yaml::Map& slo, const std::string& cls) {
  SloSection out;
  for (SloMetric m : {SloMetric::kTtft, SloMetric::kTpot, SloMetric::kItl}) {
    const std::string key = slo_key(m);
    if (!slo.has(key)) continue;
    if (m == SloMetric::kItl && !cls.empty())
      slo.fail(key,
               "inter-token targets apply to the token gaps of all requests together, not to one "
               "class",
               "move itl: to the scenario's slo: section");
    if (!slo.node()[key].IsMap()) {
      if (m == SloMetric::kItl)
        slo.fail(key,
                 "an inter-token target needs a percentile: gaps are many per request, so a plain "
                 "bound has no share to hold for",
                 "e.g. itl: {p99: 200ms} (99 % of all token gaps within 200 ms)");
      const double bound = slo.quantity(scenario::schema::key_in(slo, key));
      if (!(bound > 0)) slo.fail(key, "a latency target must be > 0", "e.g. " + key + ": 2s");
      (m == SloMetric::kTtft ? out.ttft_s : out.tpot_s) = bound;
      out.plain = true;
      continue;
    }
    yaml::Map pm = slo.map(key);
    std::vector<SloTarget> these;
    for (const auto& kv : pm.node()) {
      const std::string pk = kv.first.as<std::string>();
      const std::optional<double> q = parse_percentile(pk);
      if (!q)
        pm.fail(pk,
                "expected a percentile key: p and a number between 0 and 100 (exclusive), got '" +
                    pk + "'",
                "e.g. " + key + ": {p50: 300ms, p99: 1s, p99.9: 2s}");
      const double bound = pm.quantity(pk, units::Dim::kTime, 0.0);
      if (!(bound > 0)) pm.fail(pk, "a latency target must be > 0", "e.g. " + pk + ": 200ms");
      these.push_back({m, *q, bound, cls, false});
    }
    if (these.empty())
      slo.fail(key, "no percentile given",
               "e.g. " + key + ": {p99: 1s}, or a plain " + key + ": 1s");
    pm.finish();
    std::sort(these.begin(), these.end(),
              [](const SloTarget& a, const SloTarget& b) { return a.quantile < b.quantile; });
    for (std::size_t i = 1; i < these.size(); ++i)
      if (these[i].quantile == these[i - 1].quantile)
        pm.fail(percentile_name(these[i].quantile), "the same percentile is given twice");
    // The per-request bound: the highest percentile's (the tail bound).
    if (m == SloMetric::kTtft) out.ttft_s = these.back().bound_s;
    if (m == SloMetric::kTpot) out.tpot_s = these.back().bound_s;
    out.targets.insert(out.targets.end(), these.begin(), these.end());
  }
  slo.finish();
  return out;
}

}  // namespace fleetsim::workload
