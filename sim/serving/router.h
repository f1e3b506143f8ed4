// Routers send each arriving request to one replica. One class per router, registered in
// the table in registry.cpp (which also drives `fleetsim list routers` and "did you mean").
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "sim/core/rng.h"
#include "sim/serving/replica.h"

namespace fleetsim::serving {

class Router {
 public:
  virtual ~Router() = default;
  /// Index of the replica for `request`. Precondition: replicas is not empty.
  virtual size_t route(const workload::RequestSpec& request,
                       const std::vector<std::unique_ptr<Replica>>& replicas) = 0;
};

/// Replica i, i+1, ... in turn.
class RoundRobin final : public Router {
 public:
  size_t route(const workload::RequestSpec&, const std::vector<std::unique_ptr<Replica>>& r) override {
    const size_t i = next_ % r.size();
    ++next_;
    return i;
  }

 private:
  size_t next_ = 0;
};

/// The replica with the fewest outstanding requests (waiting + running); ties go to the
/// lowest index, so the choice is deterministic.
class LeastOutstanding final : public Router {
 public:
  size_t route(const workload::RequestSpec&, const std::vector<std::unique_ptr<Replica>>& r) override {
    size_t best = 0;
    for (size_t i = 1; i < r.size(); ++i) {
      if (r[i]->outstanding() < r[best]->outstanding()) best = i;
    }
    return best;
  }
};

}  // namespace fleetsim::serving
