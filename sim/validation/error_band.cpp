#include "sim/validation/error_band.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

#include "hw_models/error.h"

#ifndef FLEETSIM_VALIDATION_DIR
#define FLEETSIM_VALIDATION_DIR "scenarios/validation"
#endif

namespace fleetsim::validation {

namespace {

std::string kind_name(const std::string& kind) { return kind == "moe" ? "MoE" : kind; }

}  // namespace

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double pos = q * static_cast<double>(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - static_cast<double>(lo)) * (v[hi] - v[lo]);
}

std::optional<ErrorBand> error_band(const std::vector<BandCase>& cases,
                                    const std::string& model_kind, const std::string& gpu_family,
                                    const std::string& engine) {
  if (cases.empty()) return std::nullopt;
  struct Level {
    bool kind, family, engine;
  };
  const Level levels[] = {{true, true, true},
                          {true, true, false},
                          {true, false, true},
                          {true, false, false},
                          {false, false, false}};
  for (const Level& l : levels) {
    std::vector<double> abs, opt;
    for (const auto& c : cases) {
      if (l.kind && c.model_kind != model_kind) continue;
      if (l.family && c.gpu_family != gpu_family) continue;
      if (l.engine && c.engine != engine) continue;
      abs.push_back(c.abs_error);
      opt.push_back(c.optimism);
    }
    const bool last = !l.kind;
    if (static_cast<int>(abs.size()) < kMinBandCases && !last) continue;
    ErrorBand b;
    b.group = last ? std::string("all cases")
                   : kind_name(model_kind) + (l.family ? " on " + gpu_family : std::string()) +
                         (l.engine ? ", " + engine : std::string());
    b.n = static_cast<int>(abs.size());
    b.median_abs = quantile(abs, 0.5);
    b.p75_abs = quantile(abs, 0.75);
    b.median_optimism = quantile(opt, 0.5);
    return b;
  }
  return std::nullopt;
}

std::vector<BandCase> load_band_cases(const std::string& file) {
  std::ifstream in(file);
  if (!in) return {};
  nlohmann::json j;
  try {
    in >> j;
    std::vector<BandCase> out;
    for (const auto& c : j.at("cases")) {
      BandCase b;
      b.id = c.at("id").get<std::string>();
      b.engine = c.at("engine").get<std::string>();
      b.model_kind = c.at("model_kind").get<std::string>();
      b.gpu_family = c.at("gpu_family").get<std::string>();
      b.category = c.at("category").get<std::string>();
      b.abs_error = c.at("abs_error").get<double>();
      b.optimism = c.at("optimism").get<double>();
      b.heldout = c.at("heldout").get<bool>();
      out.push_back(std::move(b));
    }
    return out;
  } catch (const std::exception& e) {
    throw InputError(std::string("error bands file is malformed: ") + e.what(),
                     "regenerate it with 'fleetsim validate --update-baseline'", file);
  }
}

std::string gpu_family(const hw::GpuSpec& g) {
  const std::string& id = g.id;
  auto starts = [&](const char* p) { return id.rfind(p, 0) == 0; };
  if (g.vendor == "NVIDIA") {
    if (starts("a100")) return "NVIDIA Ampere";
    if (starts("h100") || starts("h200") || starts("h800")) return "NVIDIA Hopper";
    if (starts("b200") || starts("gb200") || starts("rtx-5090")) return "NVIDIA Blackwell";
    if (starts("l40") || starts("rtx-4090")) return "NVIDIA Ada";
    return "NVIDIA";
  }
  return g.vendor;
}

const std::vector<BandCase>& default_band_cases() {
  static const std::vector<BandCase> cases = load_band_cases(default_bands_file());
  return cases;
}

std::string default_bands_file() {
  return std::string(FLEETSIM_VALIDATION_DIR) + "/error_bands.json";
}

std::string describe(const ErrorBand& b) {
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "%s: median error ±%.0f %% (%s by %.0f %% at the median) over %d published "
                "cases; at the 75th percentile (%.0f %%) the answer would need %.2fx the capacity",
                b.group.c_str(), 100 * b.median_abs,
                b.median_optimism >= 0 ? "optimistic" : "pessimistic",
                100 * std::fabs(b.median_optimism), b.n, 100 * b.p75_abs, b.capacity_factor_p75());
  return buf;
}

}  // namespace fleetsim::validation
