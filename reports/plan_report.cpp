#include "reports/plan_report.h"

#include <algorithm>
#include <cctype>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "hw_models/error.h"
#include "hw_models/files.h"
#include "hw_models/units.h"
#include "reports/format.h"
#include "reports/plot.h"
#include "reports/replications.h"
#include "reports/run_report.h"
#include "reports/summary.h"

namespace fleetsim::reports {

using plan::Candidate;
using plan::PlanResult;
using plan::Status;
using units::Dim;

namespace {

std::string pct_d(double x, int decimals) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f %%", decimals, 100 * x);
  return buf;
}

std::string slo_text(const PlanResult& r) {
  std::string s;
  if (r.slo_plain) {
    if (r.slo_ttft_s) s += "TTFT ≤ " + duration(*r.slo_ttft_s);
    if (r.slo_tpot_s)
      s += std::string(s.empty() ? "" : " and ") + "TPOT ≤ " + duration(*r.slo_tpot_s);
    s += " for ≥ " + pct_d(r.spec.target, 1) + " of requests";
  }
  for (const auto& t : r.slo_targets) {
    if (!s.empty()) s += ", ";
    s += workload::slo_label(t.metric);
    s += ' ';
    s += workload::percentile_name(t.quantile) + " ≤ " + duration(t.bound_s);
  }
  return s;
}

// The smallest margin of `o`'s checks (nullptr without any).
const metrics::SloCheck* tightest(const plan::Outcome& o) {
  const metrics::SloCheck* t = nullptr;
  for (const auto& c : o.slo_checks)
    if (!t || c.margin() < t->margin()) t = &c;
  return t;
}

// What keeps `o` from meeting the SLO: "84.0 % of requests meet the SLO (target 99 %);
// TPOT p99 56 ms of 50 ms: missed by 12 %".
std::string misses(const PlanResult& r, const plan::Outcome& o) {
  std::string s;
  if (r.slo_plain && o.attainment < r.spec.target)
    s = pct_d(o.attainment, 1) + " of requests meet the SLO (target " + pct_d(r.spec.target, 1) +
        ")";
  for (const auto& c : o.slo_checks)
    if (!c.met && (!c.target.plain || s.empty())) {
      if (!s.empty()) s += "; ";
      s += slo_check_text(c);
    }
  return s;
}

std::string replicas_text(const Candidate& c) {
  std::string s = std::to_string(c.best->replicas) + (c.best->prefill_replicas ? " decode" : "") +
                  (c.best->replicas == 1 && !c.best->prefill_replicas ? " replica" : " replicas");
  if (c.best->prefill_replicas) s += " + " + std::to_string(c.best->prefill_replicas) + " prefill";
  if (c.spare_replicas) s += " + " + std::to_string(c.spare_replicas) + " spare";
  return s;
}

// Money per unit of time: per(144, "h") == "$144/h".
std::string per(double v, const char* unit) {
  std::string s = usd(v);
  return s += std::string("/") + unit;
}

}  // namespace

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
  if (std::find(r.answers.begin(), r.answers.end(), c.index) != r.answers.end()) {
    const std::string same = "equally cheap, ";
    if (c.best->itl_p99_s != w.best->itl_p99_s)
      return same + "choppier streaming: ITL p99 " + duration(c.best->itl_p99_s) + " vs " +
             duration(w.best->itl_p99_s);
    if (c.best->tpot_p99_s != w.best->tpot_p99_s)
      return same + "same ITL p99, TPOT p99 " + duration(c.best->tpot_p99_s) + " vs " +
             duration(w.best->tpot_p99_s);
    if (c.best->ttft_p99_s != w.best->ttft_p99_s)
      return same + "same ITL and TPOT p99, TTFT p99 " + duration(c.best->ttft_p99_s) + " vs " +
             duration(w.best->ttft_p99_s);
    if (c.total_gpus != w.total_gpus)
      return same + "same latencies, " + std::to_string(c.total_gpus - w.total_gpus) + " more GPUs";
    return "tie (equally cheap, same latencies and GPUs; listed later in plan:)";
  }
  if (c.usd_per_hour > w.usd_per_hour)
    return "+" + pct_d(c.usd_per_hour / w.usd_per_hour - 1, 0) + " cost (" +
           per(c.usd_per_hour, "h") + " vs " + per(w.usd_per_hour, "h") + ")";
  if (c.total_gpus > w.total_gpus)
    return "same cost, " + std::to_string(c.total_gpus - w.total_gpus) + " more GPUs";
  if (c.best->ttft_p99_s != w.best->ttft_p99_s)
    return "same cost and GPUs, TTFT p99 " + duration(c.best->ttft_p99_s) + " vs " +
           duration(w.best->ttft_p99_s);
  return "tie (same cost, GPUs and TTFT p99; listed later in plan:)";
}

namespace {

// $ per million output tokens at the peak-hour rate the plan was sized for: the hour's
// cost over the hour's output tokens (0 when nothing came out).
double usd_per_mtok_output(const Candidate& c) {
  const double tok_per_h = c.best ? 3600.0 * c.best->output_tok_per_s : 0.0;
  return tok_per_h > 0 ? c.usd_per_hour / tok_per_h * 1e6 : 0.0;
}

std::string dollars(double v) {
  std::string s = human(v);
  s.insert(s.begin(), '$');
  return s;
}

// The kind of a reason: its text up to the first number that follows a space ("does not
// fit on 1 x ..." → "does not fit on"), so reasons that differ only in figures group.
std::string reason_kind(const std::string& reason) {
  for (size_t i = 1; i < reason.size(); ++i)
    if (reason[i - 1] == ' ' && std::isdigit(static_cast<unsigned char>(reason[i])))
      return reason.substr(0, i - 1);
  return reason;
}

// "96 no price for mi300x-oam (...); 12 llama-3.1-70b does not fit on": invalid
// configurations by the kind of their reason, most frequent first.
std::string invalid_kinds(const PlanResult& r) {
  std::map<std::string, int> kinds;
  for (const auto& c : r.candidates)
    if (c.status == Status::kInvalid) ++kinds[reason_kind(c.reason)];
  std::vector<std::pair<int, std::string>> sorted;
  for (const auto& [k, n] : kinds) sorted.push_back({-n, k});
  std::sort(sorted.begin(), sorted.end());
  std::string o;
  for (const auto& [n, k] : sorted) {
    if (!o.empty()) o += "; ";
    o += std::to_string(-n);
    o += ' ';
    o += k;
  }
  return o;
}

std::map<Status, int> counts_of(const PlanResult& r) {
  std::map<Status, int> count;
  for (const auto& c : r.candidates) ++count[c.status];
  return count;
}

// What was searched and how, in one paragraph.
std::string search_text(const PlanResult& r) {
  std::map<Status, int> count = counts_of(r);
  std::ostringstream o;
  o << "Workload: " << human(r.workload.rate_per_s) << " requests/s at the peak hour, mean prompt "
    << human(r.workload.mean_prompt) << " tokens, mean output " << human(r.workload.mean_output)
    << " tokens (from " << r.workload.sampled << " sampled requests). Searched "
    << r.candidates.size() << " configurations: " << count[Status::kInvalid] << " invalid"
    << (count[Status::kInvalid] ? " (" + invalid_kinds(r) + ")" : std::string()) << ", "
    << count[Status::kInfeasible] << " cannot meet the SLO by the analytic model, "
    << count[Status::kPruned] << " pruned by their analytic cost, "
    << count[Status::kFeasible] + count[Status::kSloMissed] << " simulated (" << r.simulations
    << " runs) in " << duration(r.wall_s) << " on " << r.threads
    << (r.threads == 1 ? " thread" : " threads") << ". Failure headroom: ";
  std::string headroom;
  if (r.spec.spares) headroom += "N+" + std::to_string(r.spec.spares);
  if (r.spec.spare_fraction > 0)
    headroom += std::string(headroom.empty() ? "" : " and ") + pct_d(r.spec.spare_fraction, 0) +
                " spare replicas";
  o << (headroom.empty() ? "none (plan.spares: 0)" : headroom) << ".";
  return o.str();
}

// One perturbation of an answer in words: "still meets (tightest: TPOT p99 49 ms of 50 ms:
// 2 % margin)" or "misses at 12 replicas (...); needs 2 more replicas (14 + 1 spare = 15
// GPUs, $47/h, +13 %)".
std::string perturbed_text(const PlanResult& r, const Candidate& c,
                           const plan::PerturbedAnswer& a) {
  std::string s;
  if (a.still_meets) {
    s = "still meets";
    if (const metrics::SloCheck* t = tightest(a.at_answer))
      s += " (tightest: " + slo_check_text(*t) + ")";
    return s;
  }
  s = "misses at " + std::to_string(c.best->replicas) + " replicas (" + misses(r, a.at_answer) +
      ")";
  if (a.replicas_needed == 0)
    return s + "; no replica count up to " +
           std::to_string(a.tried.empty() ? c.best->replicas : a.tried.back().replicas) +
           " meets it (more replicas do not help, or replicas.max)";
  const int more = a.replicas_needed - c.best->replicas;
  return s + "; needs " + std::to_string(more) + (more == 1 ? " more replica" : " more replicas") +
         " (" + std::to_string(a.replicas_needed) + " in all: " + std::to_string(a.gpus_needed) +
         " GPUs, " + per(a.usd_per_hour_needed, "h") + ", +" +
         pct_d(a.usd_per_hour_needed / c.usd_per_hour - 1, 0) + ")";
}

// A short verdict for tables: "still meets", "+2 replicas", "no count meets".
std::string perturbed_short(const Candidate& c, const plan::PerturbedAnswer& a) {
  if (a.still_meets) return "still meets";
  if (a.replicas_needed == 0) return "no count meets";
  const int more = a.replicas_needed - c.best->replicas;
  return "needs " + std::to_string(more) + " more";
}

// The answer's margins to each SLO target, "; "-separated.
std::string margins_text(const Candidate& c) {
  std::string s;
  for (const auto& k : c.best->slo_checks) {
    if (!s.empty()) s += "; ";
    s += slo_check_text(k);
  }
  return s;
}

Table robustness_table(const PlanResult& r, const std::vector<app::PlanRobustness>& robust) {
  Table tb{{"configuration", "replicas", "SLO met (mean ± 95 % CI)", "min", "TTFT p99 (mean)",
            "verdict"},
           {},
           true};
  for (const auto& rb : robust) {
    const Candidate& c = r.candidates[rb.candidate];
    const app::MetricSpread& m = rb.reps.metrics.at("slo_attainment");
    const app::MetricSpread& met = rb.reps.metrics.at("slo_met");
    const std::string verdict =
        met.min >= 1 ? "meets the SLO with every seed"
        : r.slo_plain && m.mean - m.ci95 >= r.spec.target
            ? "meets it on average, not with every seed"
            : "NOT robust: " + pct_d(1 - met.mean, 0) + " of the seeds miss the SLO";
    tb.rows.push_back({c.label, std::to_string(c.best->replicas),
                       pct_d(m.mean, 2) + " ± " + pct_d(m.ci95, 2), pct_d(m.min, 2),
                       duration(rb.reps.metrics.at("ttft_p99_s").mean), verdict});
  }
  return tb;
}

std::string robustness_verdict(const PlanResult& r,
                               const std::vector<app::PlanRobustness>& robust) {
  if (robust.front().reps.metrics.at("slo_met").min >= 1)
    return "The choice holds across the seeds.";
  return "The choice is sensitive to the random draws: give it one more replica (" +
         std::to_string(r.candidates[r.chosen].best->replicas + 1) +
         ") or a higher plan.target for a margin.";
}

}  // namespace

Table plan_answers_table(const PlanResult& r) {
  std::vector<std::string> head = {
      "answer (smoothest first)", "replicas", "GPUs", "$/h", "ITL p99", "TPOT p99", "TTFT p99",
      "tightest margin"};
  const Candidate* any = r.answers.empty() ? nullptr : &r.candidates[r.answers.front()];
  if (any)
    for (const auto& a : any->perturbed) head.push_back(a.perturbation.short_name());
  Table tb{head, {}, true};
  for (const int i : r.answers) {
    const Candidate& x = r.candidates[i];
    const metrics::SloCheck* t = tightest(*x.best);
    std::vector<std::string> row = {x.label,
                                    replicas_text(x),
                                    std::to_string(x.total_gpus),
                                    per(x.usd_per_hour, "h"),
                                    duration(x.best->itl_p99_s),
                                    duration(x.best->tpot_p99_s),
                                    duration(x.best->ttft_p99_s),
                                    t ? slo_check_text(*t) : std::string("-")};
    for (const auto& a : x.perturbed) row.push_back(perturbed_short(x, a));
    tb.rows.push_back(row);
  }
  return tb;
}

std::string plan_robust_text(const PlanResult& r, const Candidate& c) {
  std::string s = "[" + c.label + "] margins: " + margins_text(c) + ".";
  for (const auto& a : c.perturbed)
    s += " With " + a.perturbation.describe() + ": " + perturbed_text(r, c, a) + ".";
  return s;
}

std::string plan_answer(const PlanResult& r) {
  std::ostringstream o;
  if (r.chosen < 0) {
    o << "No configuration meets the SLO.";
    const int missed = counts_of(r)[Status::kSloMissed];
    if (missed)
      o << " " << missed
        << " simulated configurations missed it even at replicas.max = " << r.spec.max_replicas
        << "; raise it, relax the SLO or add faster hardware to the plan.";
    return o.str();
  }
  const Candidate& c = r.candidates[r.chosen];
  o << replicas_text(c) << " of [" << c.label << "] = " << c.total_gpus << " GPUs ("
    << c.gpus_per_replica << " per replica), " << per(c.usd_per_hour, "h") << " ("
    << per(24 * c.usd_per_hour, "day") << ", " << per(24 * 30.44 * c.usd_per_hour, "month")
    << " at " << per(c.usd_per_gpu_hour, "GPU-hour") << "). SLO met by "
    << pct_d(c.best->attainment, 2) << " of requests; TTFT p99 " << duration(c.best->ttft_p99_s)
    << ", TPOT p99 " << duration(c.best->tpot_p99_s) << ", ITL p99 " << duration(c.best->itl_p99_s)
    << ", replicas busy " << pct_d(c.best->busy, 0) << ", " << human(c.best->output_tok_per_s)
    << " output tokens/s ($" << human(usd_per_mtok_output(c))
    << " per million output tokens at the peak hour). The "
    << "analytic estimate was " << c.analytic_replicas << " replicas (decode batch "
    << c.decode_batch << ", " << units::format(c.capacity_per_s, Dim::kRate)
    << " per replica); replica counts simulated:";
  for (const auto& tr : c.tried) o << " " << tr.replicas << (tr.met ? " met" : " missed") << ",";
  std::string s = o.str();
  s.back() = '.';
  if (const auto nm = non_monotone(c.tried))
    s += " Not monotone: " + std::to_string(nm->met) + " replicas met the SLO and " +
         std::to_string(nm->missed) +
         " missed it, so the SLO sits on a plateau of this configuration where more replicas "
         "barely move it and chance decides; the answer is fragile (try the axis that sets "
         "that latency, e.g. max_batched_tokens for TTFT).";
  if (c.error_band) {
    char buf[96];
    std::snprintf(buf, sizeof buf, ": %d GPUs instead of %d",
                  static_cast<int>(std::ceil(c.total_gpus * c.error_band->capacity_factor_p75())),
                  c.total_gpus);
    s += " Validation error of configurations like this one (" +
         validation::describe(*c.error_band) + ")" + buf + ".";
  }
  return s;
}

Table plan_ranking_table(const PlanResult& r, int runners_up) {
  Table tb{{"configuration (cheapest first)", "replicas", "GPUs", "$/h", "$/M out tok", "SLO met",
            "TTFT p99", "TPOT p99", "ITL p99", "why it lost"},
           {},
           true};
  const int shown = std::min<int>(static_cast<int>(r.ranking.size()), runners_up + 1);
  for (int k = 0; k < shown; ++k) {
    const Candidate& x = r.candidates[r.ranking[k]];
    tb.rows.push_back({x.label, replicas_text(x), std::to_string(x.total_gpus),
                       per(x.usd_per_hour, "h"), dollars(usd_per_mtok_output(x)),
                       pct_d(x.best->attainment, 2), duration(x.best->ttft_p99_s),
                       duration(x.best->tpot_p99_s), duration(x.best->itl_p99_s),
                       k == 0 ? "(chosen)" : plan_why_lost(r, x)});
  }
  return tb;
}

Table plan_lost_table(const PlanResult& r) {
  std::map<Status, int> count = counts_of(r);
  Table tb{{"outcome", "configurations", "example", "why"}, {}, true};
  for (Status s : {Status::kSloMissed, Status::kPruned, Status::kInfeasible, Status::kInvalid}) {
    if (!count[s]) continue;
    const Candidate* ex = nullptr;  // the first of its kind; for pruned, the analytically cheapest
    for (const auto& c : r.candidates)
      if (c.status == s &&
          (!ex || (s == Status::kPruned && c.analytic_usd_per_hour < ex->analytic_usd_per_hour))) {
        ex = &c;
        if (s != Status::kPruned) break;
      }
    tb.rows.push_back({plan::status_name(s), std::to_string(count[s]), ex->label, ex->reason});
  }
  return tb;
}

std::vector<std::string> plan_dropped_values(const PlanResult& r) {
  // Per axis value, in the order the axes and values were enumerated: how many
  // configurations have it, how many of those are invalid, and their reasons by kind.
  struct Use {
    int all = 0, invalid = 0;
    std::map<std::string, std::pair<int, const Candidate*>> kinds;  // kind → count, example
  };
  std::vector<std::pair<std::string, std::string>> order;
  std::map<std::pair<std::string, std::string>, Use> uses;
  for (const auto& c : r.candidates)
    for (const auto& pv : c.values) {
      auto [it, fresh] = uses.try_emplace(pv);
      if (fresh) order.push_back(pv);
      ++it->second.all;
      if (c.status != Status::kInvalid) continue;
      ++it->second.invalid;
      auto& k = it->second.kinds[reason_kind(c.reason)];
      if (k.first++ == 0) k.second = &c;
    }
  std::vector<std::string> lines;
  for (const auto& pv : order) {
    const Use& u = uses[pv];
    if (u.invalid < u.all || u.all == 0) continue;
    const Candidate* ex = nullptr;
    int most = 0;
    for (const auto& [kind, k] : u.kinds)
      if (k.first > most) {
        most = k.first;
        ex = k.second;
      }
    std::string line = pv.first.substr(pv.first.find('.') + 1) + " = " + pv.second + ": all " +
                       std::to_string(u.all) + (u.all == 1 ? " configuration" : " configurations") +
                       " invalid";
    if (ex != nullptr) {
      line += ": " + ex->reason;
      if (u.kinds.size() > 1)
        line += " (" + std::to_string(most) + " of them; other reasons in plan.csv)";
      if (!ex->fix.empty()) line += "; fix: " + ex->fix;
    }
    lines.push_back(line);
  }
  return lines;
}

std::string plan_report(const PlanResult& r, const std::vector<app::PlanRobustness>& robust,
                        int runners_up) {
  std::ostringstream o;
  o << "PLAN  " << r.scenario_name << ": the cheapest deployment meeting " << slo_text(r) << "\n";
  for (const std::string& d : plan_dropped_values(r)) o << wrap("DROPPED " + d);
  o << wrap(search_text(r)) << "\n";
  o << "ANSWER\n" << wrap(plan_answer(r));
  if (r.chosen >= 0) {
    o << "\nEQUALLY CHEAP ANSWERS (" << r.answers.size() << ": cost within "
      << pct_d(r.spec.tie_tolerance, 1) << " of the cheapest; smoothest streaming first)\n"
      << table_text(plan_answers_table(r));
    o << "\nMARGINS AND PERTURBATIONS (each answer re-simulated at its replica count)\n";
    for (const int i : r.answers) o << wrap(plan_robust_text(r, r.candidates[i]));
  }
  if (r.chosen >= 0) {
    o << "\nRANKING (simulated configurations that meet the SLO, cheapest first)\n"
      << table_text(plan_ranking_table(r, runners_up));
    if (static_cast<int>(r.ranking.size()) > runners_up + 1)
      o << "  ... " << r.ranking.size() - static_cast<std::size_t>(runners_up + 1)
        << " more in plan.csv\n";
    const std::vector<int> front = plan_pareto(r);
    o << "  Pareto frontier (cost vs TTFT p99): " << front.size() << " configurations, from "
      << per(r.candidates[front.front()].usd_per_hour, "h") << " at "
      << duration(r.candidates[front.front()].best->ttft_p99_s) << " to "
      << per(r.candidates[front.back()].usd_per_hour, "h") << " at "
      << duration(r.candidates[front.back()].best->ttft_p99_s) << "\n";
  }
  o << "\nWHY THE OTHERS LOST (by outcome, the first example of each)\n"
    << table_text(plan_lost_table(r));
  if (!robust.empty()) {
    o << "\nROBUSTNESS (SLO attainment over " << robust.front().reps.seeds.size()
      << " independent seeds at the chosen replica counts)\n"
      << table_text(robustness_table(r, robust)) << "  " << robustness_verdict(r, robust) << "\n";
  }
  return o.str();
}

std::vector<std::string> write_plan_report(const PlanResult& r,
                                           const std::vector<app::PlanRobustness>& robust,
                                           const scenario::Scenario& base, const std::string& dir) {
  Document d("fleetsim plan: " + r.scenario_name);
  d.heading("The question");
  std::string question =
      base.description.empty() ? "Scenario " + r.scenario_name : base.description;
  if (question.back() != '.') question += '.';
  d.paragraph(question + " The cheapest deployment meeting " + slo_text(r) + ".");
  d.heading("Assumptions");
  d.paragraph(provenance_text(base) + " " + search_text(r));
  std::ostringstream axes;
  for (const auto& [path, values] : r.spec.axes) {
    axes << path << ":";
    for (const auto& v : values) axes << " " << v;
    axes << "\n";
  }
  for (const auto& [gpu, price] : r.spec.usd_per_gpu_hour)
    axes << "price " << gpu << ": " << per(price, "GPU-hour") << "\n";
  axes << "target SLO attainment: " << pct_d(r.spec.target, 1) << "; replicas "
       << r.spec.min_replicas << " to " << r.spec.max_replicas << "; simulated: at most "
       << r.spec.simulate << " within +" << pct_d(r.spec.slack, 0)
       << " of the best analytic cost\n";
  d.paragraph("The configuration space (plan: section) and search settings:");
  d.preformatted(axes.str());
  d.paragraph(
      "The scenario as written (the base every configuration varies; as printed by fleetsim "
      "check):");
  d.preformatted(check_report(base));
  d.heading("The answer");
  for (const std::string& line : plan_dropped_values(r)) d.paragraph("Dropped: " + line + ".");
  d.paragraph(plan_answer(r));
  if (r.chosen >= 0) {
    d.heading("Equally cheap answers");
    d.paragraph("Every configuration whose cost is within " + pct_d(r.spec.tie_tolerance, 1) +
                " of the cheapest (plan.tie_tolerance), smoothest streaming first: lower ITL "
                "p99, then TPOT p99, then TTFT p99. The first is the answer above.");
    d.table(plan_answers_table(r));
    d.heading("Margins and perturbations");
    d.paragraph(
        "Each answer's margin to each SLO target (1 − measured ÷ target; plain targets at the "
        "plan's target share), and the answer re-simulated at its replica count under the "
        "perturbations of plan.perturb: whether it still meets the SLO, or how many more "
        "replicas it needs (found by search).");
    for (const int i : r.answers) d.paragraph(plan_robust_text(r, r.candidates[i]));
  }
  if (r.chosen >= 0) {
    d.heading("Ranking");
    d.paragraph(
        "Simulated configurations that meet the SLO, cheapest first (every configuration is in "
        "plan.csv).");
    d.table(plan_ranking_table(r, 10));
    std::vector<ParetoPoint> pts;
    for (const auto& c : r.candidates)
      for (const auto& tr : c.tried)
        if (c.best && tr.replicas == c.best->replicas)
          pts.push_back({c.label, c.usd_per_hour, tr.ttft_p99_s, true, c.index == r.chosen});
    for (const auto& c : r.candidates)
      if (c.status == Status::kSloMissed && !c.tried.empty()) {
        const plan::Outcome& last = c.tried.back();
        const int gpus = (last.replicas + last.prefill_replicas + 0) * c.gpus_per_replica;
        pts.push_back({c.label, gpus * c.usd_per_gpu_hour, last.ttft_p99_s, false, false});
      }
    const std::string csv = pareto_csv(pts, false, "cost_usd_per_hour", "ttft_p99_s");
    files::write_file_atomically((std::filesystem::path(dir) / "pareto.csv").string(), csv);
    d.figure(pareto_plot(
        "pareto",
        "Cost against TTFT p99 of every simulated configuration at its chosen replica count "
        "(grey: missed the SLO at the largest count tried); the line is the Pareto frontier, red "
        "the choice.",
        pts, false, "cost ($/h)", "TTFT p99 (s)", true, true));
    // Throughput against latency: every simulation run by the search (each configuration at
    // each replica count tried), output tokens/s per GPU against TPOT p99.
    std::vector<ParetoPoint> tl;
    for (const auto& c : r.candidates)
      for (const auto& tr : c.tried) {
        const double gpus =
            static_cast<double>((tr.replicas + tr.prefill_replicas) * c.gpus_per_replica);
        tl.push_back({c.label + " ×" + std::to_string(tr.replicas), tr.output_tok_per_s / gpus,
                      tr.tpot_p99_s, tr.met,
                      c.index == r.chosen && c.best && tr.replicas == c.best->replicas});
      }
    files::write_file_atomically((std::filesystem::path(dir) / "throughput_latency.csv").string(),
                                 pareto_csv(tl, true, "output_tok_per_s_per_gpu", "tpot_p99_s"));
    d.figure(pareto_plot(
        "throughput_latency",
        "Output tokens/s per GPU against TPOT p99 of every simulation the search ran (each "
        "configuration at each replica count tried; grey: missed the SLO target); the line is the "
        "frontier of those that met it, red the choice.",
        tl, true, "output tokens/s per GPU", "TPOT p99 (s)", true, true));
  }
  d.heading("Why the others lost");
  d.table(plan_lost_table(r));
  if (!robust.empty()) {
    d.heading("Robustness");
    d.paragraph("SLO attainment over " + std::to_string(robust.front().reps.seeds.size()) +
                " independent seeds at the chosen replica counts. " +
                robustness_verdict(r, robust));
    d.table(robustness_table(r, robust));
  }
  std::vector<std::string> files = d.write(dir);
  if (r.chosen >= 0) {
    files.push_back("pareto.csv");
    files.push_back("throughput_latency.csv");
  }
  return files;
}

nlohmann::json plan_json(const PlanResult& r, const std::vector<app::PlanRobustness>& robust) {
  nlohmann::json j;
  j["scenario"] = r.scenario_name;
  j["file"] = r.scenario_file;
  j["target_slo_attainment"] = r.spec.target;
  j["slo_plain"] = r.slo_plain;
  j["slo_percentiles"] = nlohmann::json::array();
  for (const auto& t : r.slo_targets)
    j["slo_percentiles"].push_back({{"metric", workload::slo_key(t.metric)},
                                    {"percentile", workload::percentile_name(t.quantile)},
                                    {"bound_s", t.bound_s}});
  j["tie_tolerance"] = r.spec.tie_tolerance;
  if (r.slo_ttft_s) j["slo_ttft_s"] = *r.slo_ttft_s;
  if (r.slo_tpot_s) j["slo_tpot_s"] = *r.slo_tpot_s;
  j["workload"] = {{"rate_per_s", r.workload.rate_per_s},
                   {"mean_prompt_tokens", r.workload.mean_prompt},
                   {"mean_output_tokens", r.workload.mean_output}};
  j["configurations"] = r.candidates.size();
  j["dropped_values"] = plan_dropped_values(r);
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
      x["usd_per_mtok_output"] = usd_per_mtok_output(c);
      x["slo_attainment"] = c.best->attainment;
      x["ttft_p99_s"] = c.best->ttft_p99_s;
      x["tpot_p99_s"] = c.best->tpot_p99_s;
      x["itl_p99_s"] = c.best->itl_p99_s;
      x["busy"] = c.best->busy;
      x["slo_checks"] = nlohmann::json::array();
      for (const auto& k : c.best->slo_checks) x["slo_checks"].push_back(slo_check_json(k));
    }
    if (!c.perturbed.empty()) {
      x["perturbations"] = nlohmann::json::array();
      for (const auto& a : c.perturbed) {
        nlohmann::json p = {
            {"description", a.perturbation.describe()},
            {"traffic_scale", a.perturbation.traffic_scale},
            {"extra_iteration_overhead_s", a.perturbation.extra_iteration_overhead_s},
            {"still_meets", a.still_meets},
            {"slo_attainment", a.at_answer.attainment},
            {"ttft_p99_s", a.at_answer.ttft_p99_s},
            {"tpot_p99_s", a.at_answer.tpot_p99_s},
            {"itl_p99_s", a.at_answer.itl_p99_s},
            {"simulations", a.tried.size()}};
        p["slo_checks"] = nlohmann::json::array();
        for (const auto& k : a.at_answer.slo_checks) p["slo_checks"].push_back(slo_check_json(k));
        if (a.replicas_needed > 0) {
          p["replicas_needed"] = a.replicas_needed;
          p["more_replicas"] = a.replicas_needed - c.best->replicas;
          p["gpus_needed"] = a.gpus_needed;
          p["usd_per_hour_needed"] = a.usd_per_hour_needed;
        } else {
          p["replicas_needed"] = nullptr;
        }
        p["text"] = perturbed_text(r, c, a);
        x["perturbations"].push_back(p);
      }
    }
    return x;
  };
  if (r.chosen >= 0) j["chosen"] = cand(r.candidates[r.chosen]);
  j["answers"] = nlohmann::json::array();
  for (int i : r.answers) j["answers"].push_back(cand(r.candidates[i]));
  j["ranking"] = nlohmann::json::array();
  for (int i : r.ranking) j["ranking"].push_back(cand(r.candidates[i]));
  j["pareto"] = plan_pareto(r);
  std::map<std::string, int> counts;
  for (const auto& c : r.candidates) ++counts[plan::status_name(c.status)];
  j["counts"] = counts;
  if (!robust.empty()) {
    j["robustness"] = nlohmann::json::array();
    for (const auto& rb : robust)
      j["robustness"].push_back(
          {{"index", rb.candidate}, {"replications", replications_json(rb.reps)}});
  }
  return j;
}

namespace {

nlohmann::ordered_json plan_row(const Candidate& c) {
  nlohmann::ordered_json row;
  row["index"] = c.index;
  row["label"] = c.label;
  for (const auto& [p, v] : c.values) row[p] = v;
  row["status"] = plan::status_name(c.status);
  row["gpus_per_replica"] = c.gpus_per_replica;
  row["usd_per_gpu_hour"] = c.usd_per_gpu_hour;
  row["analytic_decode_batch"] = c.decode_batch;
  row["analytic_capacity_req_per_s"] = c.capacity_per_s;
  row["analytic_replicas"] = c.analytic_replicas;
  row["analytic_usd_per_hour"] = c.analytic_usd_per_hour;
  const auto simulated = [&](const char* key, auto value) {
    if (c.best)
      row[key] = value;
    else
      row[key] = nullptr;
  };
  const plan::Outcome none;
  const plan::Outcome& b = c.best ? *c.best : none;
  simulated("replicas", b.replicas);
  simulated("prefill_replicas", b.prefill_replicas);
  simulated("spare_replicas", c.spare_replicas);
  simulated("gpus", c.total_gpus);
  simulated("usd_per_hour", c.usd_per_hour);
  simulated("slo_attainment", b.attainment);
  simulated("ttft_p99_s", b.ttft_p99_s);
  simulated("tpot_p99_s", b.tpot_p99_s);
  simulated("itl_p99_s", b.itl_p99_s);
  simulated("replica_busy", b.busy);
  row["simulations"] = c.tried.size();
  const auto nm = non_monotone(c.tried);
  row["replica_search_monotone"] = !nm.has_value();
  row["reason"] = c.reason;
  return row;
}

// One cell of plan.csv: numbers as the stream writes them, strings quoted where needed.
void plan_csv_cell(std::ostream& f, const nlohmann::ordered_json& v) {
  if (v.is_string())
    f << csv_field(v.get<std::string>());
  else if (v.is_number_unsigned())
    f << v.get<uint64_t>();
  else if (v.is_number_integer())
    f << v.get<int64_t>();
  else if (v.is_number_float())
    f << v.get<double>();
}

}  // namespace

nlohmann::ordered_json plan_rows(const PlanResult& r) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const auto& c : r.candidates) rows.push_back(plan_row(c));
  return rows;
}

void write_plan_csv(const PlanResult& r, const std::string& path) {
  const nlohmann::ordered_json rows = plan_rows(r);
  // The columns of the first row; without configurations, those of one with the spec's axes.
  Candidate shape;
  for (const auto& [p, v] : r.spec.axes) shape.values.emplace_back(p, "");
  const nlohmann::ordered_json header = rows.empty() ? plan_row(shape) : rows.front();
  files::AtomicFile file(path);
  std::ostream& f = file.stream();
  bool first = true;
  for (const auto& [k, v] : header.items()) {
    f << (first ? "" : ",") << k;
    first = false;
  }
  f << '\n';
  for (const auto& row : rows) {
    first = true;
    for (const auto& [k, v] : row.items()) {
      if (!first) f << ',';
      plan_csv_cell(f, v);
      first = false;
    }
    f << '\n';
  }
  file.commit();
}

}  // namespace fleetsim::reports
