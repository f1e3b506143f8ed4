// Across regions: which region serves a call. By default spill by load: the users' home
// region unless it is saturated for the call's model, then the nearest region (by round
// trip) that is not, and when every region is, the least loaded one. Or one of the
// registry's router rules over the regions that have replicas of the call's model
// (round-robin, least-outstanding, random, power-of-two), a region's load being its
// outstanding calls per batch slot. Apart from the simulator so that the choice across
// regions is one object with its own tests, as the choice inside a region is a router
// (sim/serving/router.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/core/rng.h"

namespace fleetsim::fleet {

/// The rules across regions (fleet.routing.across_regions), by name: "spill" first.
inline const std::vector<std::string>& region_router_names() {
  static const std::vector<std::string> names = {"spill", "round-robin", "least-outstanding",
                                                 "random", "power-of-two"};
  return names;
}

class RegionRouting {
 public:
  enum class Rule { kSpill, kRoundRobin, kLeastOutstanding, kRandom, kPowerOfTwo };

  /// `wan_rtt_s`: region × region round trips (0 on the diagonal). Spill: a region is
  /// saturated for a model when its outstanding calls reach `spill_load` × its batch
  /// slots. `rule`: a name of region_router_names() (std::out_of_range otherwise); the
  /// random rules draw from `rng`.
  RegionRouting(const std::vector<std::vector<double>>& wan_rtt_s, double spill_load,
                const std::string& rule = "spill", Rng rng = Rng(0))
      : spill_load_(spill_load), rng_(rng) {
    const auto& names = region_router_names();
    const auto it = std::find(names.begin(), names.end(), rule);
    if (it == names.end()) throw std::out_of_range("unknown rule across regions '" + rule + "'");
    rule_ = static_cast<Rule>(it - names.begin());
    const size_t n = wan_rtt_s.size();
    for (size_t r = 0; r < n; ++r) {
      // Regions by round trip from r's users (r itself first; ties by index).
      std::vector<int> order(n);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return wan_rtt_s[r][static_cast<size_t>(a)] < wan_rtt_s[r][static_cast<size_t>(b)];
      });
      order_.push_back(std::move(order));
    }
  }

  Rule rule() const { return rule_; }

  /// Regions by round trip from `home`.
  const std::vector<int>& by_distance(int home) const { return order_[static_cast<size_t>(home)]; }

  /// The region that serves a call from `home`, or -1 when no region has batch slots for
  /// it. `load(r)` gives region r's figures for the call's model: an object with
  /// `outstanding` and `slots` (active replicas × max_num_seqs).
  template <class Load>
  int pick(int home, const Load& load) {
    switch (rule_) {
      case Rule::kSpill: break;
      case Rule::kLeastOutstanding: return least_loaded(home, load);
      case Rule::kRoundRobin:
      case Rule::kRandom:
      case Rule::kPowerOfTwo: {
        // Among the regions with replicas of the model, in index order.
        candidates_.clear();
        for (int r = 0; r < static_cast<int>(order_.size()); ++r)
          if (load(r).slots > 0) candidates_.push_back(r);
        if (candidates_.empty()) return -1;
        const size_t n = candidates_.size();
        if (rule_ == Rule::kRoundRobin) return candidates_[next_++ % n];
        int pick = candidates_[rng_.uniform_u64(n)];
        if (rule_ == Rule::kPowerOfTwo && n > 1) {
          const int other = candidates_[rng_.uniform_u64(n)];
          if (per_slot(load(other)) < per_slot(load(pick))) pick = other;
        }
        return pick;
      }
    }
    for (int r : by_distance(home)) {
      const auto& g = load(r);
      if (g.slots > 0 &&
          static_cast<double>(g.outstanding) < spill_load_ * static_cast<double>(g.slots))
        return r;
    }
    // Every region is saturated: the least loaded one.
    return least_loaded(home, load);
  }

 private:
  template <class G>
  static double per_slot(const G& g) {
    return static_cast<double>(g.outstanding) / static_cast<double>(g.slots);
  }
  /// The region with the fewest outstanding calls per batch slot that has replicas (the
  /// nearest of equals), or -1.
  template <class Load>
  int least_loaded(int home, const Load& load) const {
    int best = -1;
    double best_load = 0;
    for (int r : by_distance(home)) {
      const auto& g = load(r);
      if (g.slots == 0) continue;
      const double l = per_slot(g);
      if (best < 0 || l < best_load) {
        best = r;
        best_load = l;
      }
    }
    return best;
  }

  double spill_load_;
  Rule rule_ = Rule::kSpill;
  Rng rng_;
  size_t next_ = 0;
  std::vector<int> candidates_;
  std::vector<std::vector<int>> order_;
};

}  // namespace fleetsim::fleet
