#include "reports/plan_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "hw_models/error.h"
#include "hw_models/units.h"

namespace fleetsim::reports {

using plan::Candidate;
using plan::PlanResult;
using plan::Status;
using units::Dim;

namespace {

std::string pct(double x, int decimals = 1) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f %%", decimals, 100 * x);
  return buf;
}

std::string t(double s) { return units::format(s, Dim::kTime); }

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char ch : s) o += ch == '"' ? std::string("\"\"") : std::string(1, ch);
  return o + "\"";
}

std::string slo_text(const PlanResult& r) {
  std::string s;
  if (r.slo_ttft_s) s += "TTFT ≤ " + t(*r.slo_ttft_s);
  if (r.slo_tpot_s) s += std::string(s.empty() ? "" : " and ") + "TPOT ≤ " + t(*r.slo_tpot_s);
  return s + " for ≥ " + pct(r.spec.target) + " of requests";
}

std::string replicas_text(const Candidate& c) {
  std::string s = std::to_string(c.best->replicas) + (c.best->prefill_replicas ? " decode" : "") +
                  (c.best->replicas == 1 && !c.best->prefill_replicas ? " replica" : " replicas");
  if (c.best->prefill_replicas) s += " + " + std::to_string(c.best->prefill_replicas) + " prefill";
  if (c.spare_replicas) s += " + " + std::to_string(c.spare_replicas) + " spare";
  return s;
}

}  // namespace

std::string format_usd(double usd, const char* per) {
  return "$" + units::format_count(usd) + "/" + per;
}

std::vector<int> plan_pareto(const PlanResult& r) {
  std::vector<int> feas = r.ranking;  // cheapest first
  std::vector<int> front;
  double best_ttft = INFINITY;
  for (int i : feas) {
    const double tt = r.candidates[i].best->ttft_p99_s;
    if (tt < best_ttft) {
      front.push_back(i);
      best_ttft = tt;
    }
  }
  return front;
}

std::string plan_why_lost(const PlanResult& r, const Candidate& c) {
  if (c.status != Status::kFeasible) return c.reason;
  if (r.chosen < 0 || c.index == r.chosen) return "";
  const Candidate& w = r.candidates[r.chosen];
  if (c.usd_per_hour > w.usd_per_hour)
    return "+" + pct(c.usd_per_hour / w.usd_per_hour - 1, 0) + " cost (" + format_usd(c.usd_per_hour, "h") +
           " vs " + format_usd(w.usd_per_hour, "h") + ")";
  if (c.total_gpus > w.total_gpus)
    return "same cost, " + std::to_string(c.total_gpus - w.total_gpus) + " more GPUs";
  if (c.best->ttft_p99_s != w.best->ttft_p99_s)
    return "same cost and GPUs, TTFT p99 " + t(c.best->ttft_p99_s) + " vs " + t(w.best->ttft_p99_s);
  return "ties with the chosen one (same cost, GPUs and TTFT p99; listed later in the plan)";
}

std::string plan_report(const PlanResult& r, const std::vector<PlanRobustness>& robust, int runners_up) {
  std::ostringstream o;
  std::map<Status, int> count;
  for (const auto& c : r.candidates) ++count[c.status];
  const int simulated = count[Status::kFeasible] + count[Status::kSloMissed];
  char buf[1024];

  o << "PLAN  " << r.scenario_name << ": the cheapest deployment meeting " << slo_text(r) << "\n";
  std::snprintf(buf, sizeof buf,
                "  workload    %s requests/s at the peak hour, mean prompt %.0f tokens, mean output %.0f "
                "tokens (from %llu sampled requests)\n",
                units::format_count(r.workload.rate_per_s).c_str(), r.workload.mean_prompt,
                r.workload.mean_output, static_cast<unsigned long long>(r.workload.sampled));
  o << buf;
  o << "  searched    " << r.candidates.size() << " configurations: " << count[Status::kInvalid]
    << " invalid (memory fit or layout), " << count[Status::kInfeasible] << " cannot meet the SLO by the analytic model, "
    << count[Status::kPruned] << " pruned by their analytic cost, " << simulated << " simulated ("
    << r.simulations << " runs) in " << t(r.wall_s) << " on " << r.threads
    << (r.threads == 1 ? " thread" : " threads") << "\n";
  std::string headroom;
  if (r.spec.spares) headroom += "N+" + std::to_string(r.spec.spares);
  if (r.spec.spare_fraction > 0)
    headroom += std::string(headroom.empty() ? "" : " and ") + pct(r.spec.spare_fraction, 0) + " spare replicas";
  o << "  headroom    " << (headroom.empty() ? "none (plan.spares: 0)" : headroom) << " for failures\n\n";

  if (r.chosen < 0) {
    o << "ANSWER  no configuration meets the SLO.\n";
    if (count[Status::kSloMissed])
      o << "  " << count[Status::kSloMissed] << " simulated configurations missed it even at replicas.max = "
        << r.spec.max_replicas << "; raise it, relax the SLO or add faster hardware to the plan.\n";
  } else {
    const Candidate& c = r.candidates[r.chosen];
    o << "ANSWER  " << replicas_text(c) << " of [" << c.label << "] = " << c.total_gpus << " GPUs ("
      << c.gpus_per_replica << " per replica), " << format_usd(c.usd_per_hour, "h") << " ("
      << format_usd(24 * c.usd_per_hour, "day") << ", " << format_usd(24 * 30.44 * c.usd_per_hour, "month")
      << " at " << format_usd(c.usd_per_gpu_hour, "GPU-hour") << ")\n";
    o << "        SLO met by " << pct(c.best->attainment, 2) << " of requests; TTFT p99 " << t(c.best->ttft_p99_s)
      << ", TPOT p99 " << t(c.best->tpot_p99_s) << ", replicas busy " << pct(c.best->busy, 0) << "; "
      << units::format_count(c.best->output_tok_per_s) << " output tokens/s\n";
    o << "        analytic estimate was " << c.analytic_replicas << " replicas (decode batch " << c.decode_batch
      << ", " << units::format(c.capacity_per_s, Dim::kRate) << " per replica); replica counts simulated:";
    for (const auto& tr : c.tried) o << " " << tr.replicas << (tr.attainment >= r.spec.target ? "✓" : "✗");
    o << "\n\n";

    o << "RANKING (simulated configurations that meet the SLO, cheapest first)\n";
    const int shown = std::min<int>(static_cast<int>(r.ranking.size()), runners_up + 1);
    int w = 13;
    for (int k = 0; k < shown; ++k) w = std::max<int>(w, static_cast<int>(r.candidates[r.ranking[k]].label.size()));
    std::snprintf(buf, sizeof buf, "  %-3s %-*s %-26s %6s %10s %8s %9s %9s  %s\n", "#", w, "configuration",
                  "replicas", "GPUs", "$/h", "SLO met", "TTFT p99", "TPOT p99", "why it lost");
    o << buf;
    for (int k = 0; k < shown; ++k) {
      const Candidate& x = r.candidates[r.ranking[k]];
      std::snprintf(buf, sizeof buf, "  %-3d %-*s %-26s %6d %10s %8s %9s %9s  %s\n", k + 1, w,
                    x.label.c_str(), replicas_text(x).c_str(), x.total_gpus,
                    format_usd(x.usd_per_hour, "h").c_str(), pct(x.best->attainment, 2).c_str(),
                    t(x.best->ttft_p99_s).c_str(), t(x.best->tpot_p99_s).c_str(),
                    k == 0 ? "(chosen)" : plan_why_lost(r, x).c_str());
      o << buf;
    }
    if (static_cast<int>(r.ranking.size()) > shown)
      o << "  ... " << r.ranking.size() - shown << " more in plan.csv\n";
    const std::vector<int> front = plan_pareto(r);
    o << "  Pareto frontier (cost vs TTFT p99): " << front.size() << " configurations, from "
      << format_usd(r.candidates[front.front()].usd_per_hour, "h") << " at " << t(r.candidates[front.front()].best->ttft_p99_s)
      << " to " << format_usd(r.candidates[front.back()].usd_per_hour, "h") << " at "
      << t(r.candidates[front.back()].best->ttft_p99_s) << "\n";
  }

  o << "\nWHY THE OTHERS LOST (by outcome, the first example of each)\n";
  for (Status s : {Status::kSloMissed, Status::kPruned, Status::kInfeasible, Status::kInvalid}) {
    if (!count[s]) continue;
    const Candidate* ex = nullptr;
    for (const auto& c : r.candidates)
      if (c.status == s && (!ex || (s == Status::kPruned && c.analytic_usd_per_hour < ex->analytic_usd_per_hour))) {
        ex = &c;
        if (s != Status::kPruned) break;
      }
    std::snprintf(buf, sizeof buf, "  %-11s %5d  e.g. [%s]: ", plan::status_name(s), count[s], ex->label.c_str());
    o << buf << ex->reason << "\n";
  }

  if (!robust.empty()) {
    o << "\nROBUSTNESS (SLO attainment over " << robust.front().reps.seeds.size()
      << " independent seeds at the chosen replica counts; mean ± 95 % CI, min)\n";
    int lw = 0;
    for (const auto& rb : robust) lw = std::max<int>(lw, static_cast<int>(r.candidates[rb.candidate].label.size()));
    for (const auto& rb : robust) {
      const Candidate& c = r.candidates[rb.candidate];
      const MetricSpread& m = rb.reps.metrics.at("slo_attainment");
      const bool holds = m.min >= r.spec.target;
      std::snprintf(buf, sizeof buf, "  %-*s %s ± %s, min %s: %s\n", lw, c.label.c_str(),
                    pct(m.mean, 2).c_str(), pct(m.ci95, 2).c_str(), pct(m.min, 2).c_str(),
                    holds ? "meets the target with every seed"
                          : (m.mean - m.ci95 >= r.spec.target ? "meets it on average, not with every seed"
                                                              : "NOT robust: the mean's CI reaches below the target"));
      o << buf;
    }
    const Candidate& w = r.candidates[r.chosen];
    const MetricSpread& m = robust.front().reps.metrics.at("slo_attainment");
    if (m.min < r.spec.target)
      o << "  The choice is sensitive to the random draws: give it one more replica (" << w.best->replicas + 1
        << ") or a higher plan.target for a margin.\n";
    else
      o << "  The choice holds across the seeds.\n";
  }
  return o.str();
}

nlohmann::json plan_json(const PlanResult& r, const std::vector<PlanRobustness>& robust) {
  nlohmann::json j;
  j["scenario"] = r.scenario_name;
  j["file"] = r.scenario_file;
  j["target_slo_attainment"] = r.spec.target;
  if (r.slo_ttft_s) j["slo_ttft_s"] = *r.slo_ttft_s;
  if (r.slo_tpot_s) j["slo_tpot_s"] = *r.slo_tpot_s;
  j["workload"] = {{"rate_per_s", r.workload.rate_per_s},
                   {"mean_prompt_tokens", r.workload.mean_prompt},
                   {"mean_output_tokens", r.workload.mean_output}};
  j["configurations"] = r.candidates.size();
  j["simulations"] = r.simulations;
  j["wall_s"] = r.wall_s;
  auto cand = [&](const Candidate& c) {
    nlohmann::json x;
    x["index"] = c.index;
    x["label"] = c.label;
    for (const auto& [p, v] : c.values) x["values"][p] = v;
    x["status"] = plan::status_name(c.status);
    if (!c.reason.empty()) x["reason"] = c.reason;
    if (c.status == Status::kFeasible) {
      x["replicas"] = c.best->replicas;
      x["prefill_replicas"] = c.best->prefill_replicas;
      x["spare_replicas"] = c.spare_replicas;
      x["gpus"] = c.total_gpus;
      x["usd_per_hour"] = c.usd_per_hour;
      x["slo_attainment"] = c.best->attainment;
      x["ttft_p99_s"] = c.best->ttft_p99_s;
      x["tpot_p99_s"] = c.best->tpot_p99_s;
      x["busy"] = c.best->busy;
    }
    return x;
  };
  if (r.chosen >= 0) j["chosen"] = cand(r.candidates[r.chosen]);
  j["ranking"] = nlohmann::json::array();
  for (int i : r.ranking) j["ranking"].push_back(cand(r.candidates[i]));
  j["pareto"] = plan_pareto(r);
  std::map<std::string, int> counts;
  for (const auto& c : r.candidates) ++counts[plan::status_name(c.status)];
  j["counts"] = counts;
  if (!robust.empty()) {
    j["robustness"] = nlohmann::json::array();
    for (const auto& rb : robust)
      j["robustness"].push_back({{"index", rb.candidate}, {"replications", replications_json(rb.reps)}});
  }
  return j;
}

void write_plan_csv(const PlanResult& r, const std::string& path) {
  std::ofstream f(path);
  if (!f) throw InputError("cannot write " + path, "check the output folder", path);
  std::vector<std::string> axes;
  for (const auto& [p, v] : r.spec.axes) axes.push_back(p);
  // Axes in the candidates' own order (enumeration order), falling back to the spec's.
  if (!r.candidates.empty()) {
    axes.clear();
    for (const auto& [p, v] : r.candidates.front().values) axes.push_back(p);
  }
  f << "index,label";
  for (const auto& a : axes) f << ',' << a;
  f << ",status,gpus_per_replica,usd_per_gpu_hour,analytic_decode_batch,analytic_capacity_req_per_s,"
       "analytic_replicas,analytic_usd_per_hour,replicas,prefill_replicas,spare_replicas,gpus,usd_per_hour,"
       "slo_attainment,ttft_p99_s,tpot_p99_s,replica_busy,simulations,reason\n";
  for (const auto& c : r.candidates) {
    f << c.index << ',' << csv_field(c.label);
    for (const auto& [p, v] : c.values) f << ',' << csv_field(v);
    f << ',' << plan::status_name(c.status) << ',' << c.gpus_per_replica << ',' << c.usd_per_gpu_hour << ','
      << c.decode_batch << ',' << c.capacity_per_s << ',' << c.analytic_replicas << ',' << c.analytic_usd_per_hour;
    if (c.best)
      f << ',' << c.best->replicas << ',' << c.best->prefill_replicas << ',' << c.spare_replicas << ','
        << c.total_gpus << ',' << c.usd_per_hour << ',' << c.best->attainment << ',' << c.best->ttft_p99_s << ','
        << c.best->tpot_p99_s << ',' << c.best->busy;
    else
      f << ",,,,,,,,,";
    f << ',' << c.tried.size() << ',' << csv_field(c.reason) << "\n";
  }
}

}  // namespace fleetsim::reports
