// The collective algorithms, as rounds of transfers on the SimGrid fabric. Each is the
// algorithm AnalyticNetwork prices (hw_models/network.h), so on an uncontended fabric the
// two agree; they part where flows meet (shared NICs, oversubscribed uplinks).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>

#include "sim/network/simgrid_network.h"

namespace fleetsim::net {

const char* collective_name(Collective c) {
  switch (c) {
    case Collective::kRingAllReduce: return "allreduce";
    case Collective::kTreeAllReduce: return "tree_allreduce";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kAllGather: return "allgather";
    case Collective::kAllToAll: return "alltoall";
    case Collective::kP2p: return "p2p";
  }
  return "?";
}

std::vector<Collective> all_collectives() {
  return {Collective::kRingAllReduce, Collective::kTreeAllReduce, Collective::kReduceScatter,
          Collective::kAllGather, Collective::kAllToAll, Collective::kP2p};
}

namespace {

struct Flow {
  int src, dst;
  double bytes;
};
using Step = std::vector<Flow>;      // started together; the next starts when all end
using Sequence = std::vector<Step>;  // sequences run concurrently

// Runs the sequences to the end; returns the elapsed network time.
double execute(SimGridFabric& f, const std::vector<Sequence>& seqs) {
  const double t0 = f.now();
  std::vector<size_t> pos(seqs.size(), 0), pending(seqs.size(), 0);
  std::unordered_map<uint64_t, size_t> owner;
  auto start = [&](size_t s) {
    while (pos[s] < seqs[s].size()) {
      const Step& st = seqs[s][pos[s]];
      if (st.empty()) {
        ++pos[s];
        continue;
      }
      const double t = f.now();
      for (const Flow& fl : st) owner[f.start_transfer(fl.src, fl.dst, fl.bytes, t)] = s;
      pending[s] = st.size();
      return;
    }
  };
  for (size_t s = 0; s < seqs.size(); ++s) start(s);
  std::vector<Completion> done;
  while (!owner.empty()) {
    f.advance_to_next_event(done);
    for (const Completion& c : done) {
      auto it = owner.find(c.id);
      if (it == owner.end()) continue;
      const size_t s = it->second;
      owner.erase(it);
      if (--pending[s] == 0) {
        ++pos[s];
        start(s);
      }
    }
    done.clear();
  }
  return f.now() - t0;
}

int ceil_log2(int n) {
  int k = 0;
  while ((1LL << k) < n) ++k;
  return k;
}

}  // namespace

double run_collective(SimGridFabric& fabric, Collective op, double b, const hw::CommGroup& g) {
  const hw::Fabric& fab = fabric.fabric();
  const int n = g.size;
  const int m = std::max(1, std::min(g.per_domain, n));
  if (op != Collective::kP2p && n <= 1) return 0.0;
  if (n % m != 0)
    throw std::invalid_argument("simgrid collective: group of " + std::to_string(n) +
                                " is not whole domains of " + std::to_string(m));
  const int d = n / m;
  if (m > fab.domain_gpus || (d - 1) * fab.domain_gpus + m > fab.gpus)
    throw std::invalid_argument("simgrid collective: the fabric is too small for a group of " +
                                std::to_string(n) + " (" + std::to_string(m) + " per domain)");
  auto gpu = [&](int domain, int local) { return domain * fab.domain_gpus + local; };
  std::vector<Sequence> seqs(1);
  seqs.reserve(2);  // the all-to-all adds a second sequence; `s` must stay valid
  Sequence& s = seqs[0];
  // Ring steps: every member sends `chunk` to its successor, inside each domain (`inside`)
  // or between the same local ranks of consecutive domains.
  auto ring_inside = [&](int steps, double chunk) {
    for (int k = 0; k < steps; ++k) {
      Step st;
      for (int D = 0; D < d; ++D)
        for (int l = 0; l < m; ++l) st.push_back({gpu(D, l), gpu(D, (l + 1) % m), chunk});
      s.push_back(st);
    }
  };
  auto ring_across = [&](int steps, double chunk) {
    for (int k = 0; k < steps; ++k) {
      Step st;
      for (int D = 0; D < d; ++D)
        for (int l = 0; l < m; ++l) st.push_back({gpu(D, l), gpu((D + 1) % d, l), chunk});
      s.push_back(st);
    }
  };
  switch (op) {
    case Collective::kP2p:
      s.push_back({m > 1 ? Flow{gpu(0, 0), gpu(0, 1), b} : Flow{gpu(0, 0), gpu(1, 0), b}});
      break;
    case Collective::kRingAllReduce:
      if (m > 1) ring_inside(m - 1, b / m);  // reduce-scatter inside
      if (d > 1) ring_across(2 * (d - 1), b / m / d);
      if (m > 1) ring_inside(m - 1, b / m);  // all-gather inside
      break;
    case Collective::kReduceScatter:
      if (m > 1) ring_inside(m - 1, b / m);
      if (d > 1) ring_across(d - 1, b / m / d);
      break;
    case Collective::kAllGather:
      if (d > 1) ring_across(d - 1, b / m / d);
      if (m > 1) ring_inside(m - 1, b / m);
      break;
    case Collective::kTreeAllReduce: {
      // Binomial reduce inside every domain to local rank 0, then across the domains'
      // rank-0 GPUs to domain 0; the broadcast retraces the rounds backwards.
      std::vector<Step> rounds;
      for (int k = 0; k < ceil_log2(m); ++k) {
        Step st;
        for (int D = 0; D < d; ++D)
          for (int l = 1 << k; l < m; l += 1 << (k + 1)) st.push_back({gpu(D, l), gpu(D, l - (1 << k)), b});
        rounds.push_back(st);
      }
      for (int k = 0; k < ceil_log2(d); ++k) {
        Step st;
        for (int D = 1 << k; D < d; D += 1 << (k + 1)) st.push_back({gpu(D, 0), gpu(D - (1 << k), 0), b});
        rounds.push_back(st);
      }
      for (const Step& st : rounds) s.push_back(st);
      for (auto it = rounds.rbegin(); it != rounds.rend(); ++it) {
        Step back;
        for (const Flow& fl : *it) back.push_back({fl.dst, fl.src, fl.bytes});
        s.push_back(back);
      }
      break;
    }
    case Collective::kAllToAll: {
      // Pairwise exchange, b/n to every other member: the m−1 in-domain messages in one
      // sequence (over NVLink), the n−m others in a second, concurrent one (over the NICs).
      for (int k = 1; k < m; ++k) {
        Step st;
        for (int D = 0; D < d; ++D)
          for (int l = 0; l < m; ++l) st.push_back({gpu(D, l), gpu(D, (l + k) % m), b / n});
        s.push_back(st);
      }
      if (d > 1) {
        seqs.emplace_back();
        for (int delta = 1; delta < d; ++delta)
          for (int shift = 0; shift < m; ++shift) {
            Step st;
            for (int D = 0; D < d; ++D)
              for (int l = 0; l < m; ++l)
                st.push_back({gpu(D, l), gpu((D + delta) % d, (l + shift) % m), b / n});
            seqs[1].push_back(st);
          }
      }
      break;
    }
  }
  return execute(fabric, seqs);
}

}  // namespace fleetsim::net
