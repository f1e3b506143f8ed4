// Across regions: which region serves a call. Spill by load: the users' home region unless
// it is saturated for the call's model, then the nearest region (by round trip) that is not,
// and when every region is, the least loaded one. Apart from the fleet simulation so that
// the choice across regions is one object with its own tests, as the choice inside a region
// is a router (sim/serving/router.h).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

namespace fleetsim::fleet {

class SpillRouting {
 public:
  /// `wan_rtt_s`: region × region round trips (0 on the diagonal). A region is saturated
  /// for a model when its outstanding calls reach `spill_load` × its batch slots.
  SpillRouting(const std::vector<std::vector<double>>& wan_rtt_s, double spill_load)
      : spill_load_(spill_load) {
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

  /// Regions by round trip from `home`.
  const std::vector<int>& by_distance(int home) const { return order_[static_cast<size_t>(home)]; }

  /// The region that serves a call from `home`, or -1 when no region has batch slots for
  /// it. `load(r)` gives region r's figures for the call's model: an object with
  /// `outstanding` and `slots` (active replicas × max_num_seqs).
  template <class Load>
  int pick(int home, const Load& load) const {
    for (int r : by_distance(home)) {
      const auto& g = load(r);
      if (g.slots > 0 &&
          static_cast<double>(g.outstanding) < spill_load_ * static_cast<double>(g.slots))
        return r;
    }
    // Every region is saturated: the least loaded one that has replicas (the nearest of
    // equals).
    int best = -1;
    double best_load = 0;
    for (int r : by_distance(home)) {
      const auto& g = load(r);
      if (g.slots == 0) continue;
      const double l = static_cast<double>(g.outstanding) / static_cast<double>(g.slots);
      if (best < 0 || l < best_load) {
        best = r;
        best_load = l;
      }
    }
    return best;
  }

 private:
  double spill_load_;
  std::vector<std::vector<int>> order_;
};

}  // namespace fleetsim::fleet
