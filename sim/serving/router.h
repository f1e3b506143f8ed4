// Routers send each arriving request to one replica. One class per router, registered in
// the table in registry.cpp (which also drives `fleetsim list routers` and "did you mean").
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "sim/core/rng.h"
#include "sim/serving/replica.h"

namespace fleetsim::serving {

/// The replicas a router chooses among, without copying: all of a pool's, or those of a
/// list of indices into it (a fleet region's active replicas of one model).
class ReplicaSet {
 public:
  ReplicaSet(const std::vector<std::unique_ptr<Replica>>& all)  // NOLINT: a pool is a set
      : all_(all.data()), n_(all.size()) {}
  ReplicaSet(const std::vector<std::unique_ptr<Replica>>& all, const std::vector<int32_t>& which)
      : all_(all.data()), which_(which.data()), n_(which.size()) {}
  size_t size() const { return n_; }
  Replica* operator[](size_t i) const {
    return all_[which_ != nullptr ? static_cast<size_t>(which_[i]) : i].get();
  }

 private:
  const std::unique_ptr<Replica>* all_;
  const int32_t* which_ = nullptr;
  size_t n_;
};

class Router {
 public:
  virtual ~Router() = default;
  /// Index into `replicas` of the replica for `request`. Precondition: replicas is not
  /// empty.
  virtual size_t route(const workload::RequestSpec& request, const ReplicaSet& replicas) = 0;
};

/// Replica i, i+1, ... in turn.
class RoundRobin final : public Router {
 public:
  size_t route(const workload::RequestSpec&, const ReplicaSet& r) override {
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
  size_t route(const workload::RequestSpec&, const ReplicaSet& r) override {
    size_t best = 0;
    for (size_t i = 1; i < r.size(); ++i) {
      if (r[i]->outstanding() < r[best]->outstanding()) best = i;
    }
    return best;
  }
};

/// A replica chosen uniformly at random (its own random stream "router").
class RandomRouter final : public Router {
 public:
  explicit RandomRouter(const RngStreams& rng) : rng_(rng.stream("router")) {}
  size_t route(const workload::RequestSpec&, const ReplicaSet& r) override {
    return static_cast<size_t>(rng_.uniform_u64(r.size()));
  }

 private:
  Rng rng_;
};

/// The replica with the lowest KV-cache occupancy (blocks used / total); ties to the
/// lowest index.
class LeastKvLoad final : public Router {
 public:
  size_t route(const workload::RequestSpec&, const ReplicaSet& r) override {
    size_t best = 0;
    double best_load = 2;
    for (size_t i = 0; i < r.size(); ++i) {
      const double load = static_cast<double>(r[i]->kv_blocks_used()) /
                          static_cast<double>(std::max<int64_t>(1, r[i]->kv_blocks_total()));
      if (load < best_load) {
        best_load = load;
        best = i;
      }
    }
    return best;
  }
};

/// Power of two choices (Mitzenmacher, "The Power of Two Choices in Randomized Load
/// Balancing", IEEE TPDS 2001): two distinct replicas at random, the one with fewer
/// outstanding requests (the first on a tie).
class PowerOfTwo final : public Router {
 public:
  explicit PowerOfTwo(const RngStreams& rng) : rng_(rng.stream("router")) {}
  size_t route(const workload::RequestSpec&, const ReplicaSet& r) override {
    if (r.size() == 1) return 0;
    const size_t a = static_cast<size_t>(rng_.uniform_u64(r.size()));
    size_t b = static_cast<size_t>(rng_.uniform_u64(r.size() - 1));
    if (b >= a) ++b;
    return r[b]->outstanding() < r[a]->outstanding() ? b : a;
  }

 private:
  Rng rng_;
};

/// Prefix/cache-aware routing (the idea of SGLang's cache-aware router and of Mooncake's
/// Conductor): the replica holding the longest cached prefix of the prompt, unless it is
/// overloaded — its outstanding requests exceed the least loaded replica's by more than
/// `balance_slack` — in which case load wins (least outstanding). Ties in prefix length go
/// to the less loaded replica, then the lower index.
class PrefixAware final : public Router {
 public:
  explicit PrefixAware(int64_t balance_slack = 8) : slack_(balance_slack) {}
  size_t route(const workload::RequestSpec& q, const ReplicaSet& r) override {
    size_t least = 0;
    for (size_t i = 1; i < r.size(); ++i)
      if (r[i]->outstanding() < r[least]->outstanding()) least = i;
    size_t best = least;
    int64_t best_hit = r[least]->cached_prefix_tokens(q);
    for (size_t i = 0; i < r.size(); ++i) {
      if (r[i]->outstanding() > r[least]->outstanding() + slack_) continue;
      const int64_t hit = r[i]->cached_prefix_tokens(q);
      if (hit > best_hit || (hit == best_hit && r[i]->outstanding() < r[best]->outstanding())) {
        best = i;
        best_hit = hit;
      }
    }
    return best;
  }

 private:
  int64_t slack_;
};

}  // namespace fleetsim::serving
