#include "hw_models/network.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
#include <utility>

namespace fleetsim::hw {

namespace {
void need_bw(const LinkLevel& l, const char* what) {
  if (!(l.bw_bytes_per_s > 0))
    throw std::invalid_argument(std::string("network: the ") + what +
                                " level has no bandwidth but the group spans it");
}
}  // namespace

double AnalyticNetwork::ring_allreduce_s(double bytes, int n, const LinkLevel& l) {
  if (n <= 1) return 0.0;
  const double steps = 2.0 * (n - 1);
  return steps * l.latency_s + steps / n * bytes / l.bw_bytes_per_s;
}

double AnalyticNetwork::allreduce_s(double bytes, const CommGroup& g) const {
  if (g.size <= 1) return 0.0;
  const int m = std::clamp(g.per_domain, 1, g.size);
  if (m >= g.size) {
    need_bw(up_, "scale-up");
    return ring_allreduce_s(bytes, g.size, up_);
  }
  need_bw(out_, "scale-out");
  const int domains = (g.size + m - 1) / m;
  double t = 0;
  if (m > 1) {
    need_bw(up_, "scale-up");
    // Reduce-scatter and all-gather inside the domain: each (m−1) steps of bytes/m.
    t += 2.0 * ((m - 1) * up_.latency_s + (m - 1.0) / m * bytes / up_.bw_bytes_per_s);
  }
  // Each GPU then all-reduces its 1/m shard with its peers in the other domains.
  t += ring_allreduce_s(bytes / m, domains, out_);
  return t;
}

double AnalyticNetwork::alltoall_s(double bytes_per_gpu, const CommGroup& g) const {
  if (g.size <= 1) return 0.0;
  const int n = g.size, m = std::clamp(g.per_domain, 1, g.size);
  if (m >= n) {
    need_bw(up_, "scale-up");
    return (n - 1) * up_.latency_s + (n - 1.0) / n * bytes_per_gpu / up_.bw_bytes_per_s;
  }
  // Two concurrent sequences per GPU: m−1 messages over the scale-up level, n−m over the NIC.
  need_bw(out_, "scale-out");
  double t = 0;
  if (m > 1) {
    need_bw(up_, "scale-up");
    t = (m - 1) * up_.latency_s + (m - 1.0) / n * bytes_per_gpu / up_.bw_bytes_per_s;
  }
  const double outside = static_cast<double>(n - m) / n * bytes_per_gpu;
  return std::max(t, (n - m) * out_.latency_s + outside * oversub_ / out_.bw_bytes_per_s);
}

double AnalyticNetwork::wan_transfer_s(double bytes, int flows) const {
  need_bw(wan_, "WAN");
  if (!(wan_link_bw_ > 0)) throw std::invalid_argument("network: no WAN link bandwidth");
  if (flows < 1) throw std::invalid_argument("network: a WAN transfer needs at least one flow");
  const double rate = std::min(wan_.bw_bytes_per_s, wan_link_bw_ / flows);
  return wan_.latency_s + bytes / flows / rate;
}

double AnalyticNetwork::ring_half_s(double bytes, int n, const LinkLevel& l) {
  if (n <= 1) return 0.0;
  return (n - 1) * l.latency_s + (n - 1.0) / n * bytes / l.bw_bytes_per_s;
}

int AnalyticNetwork::ceil_log2(int n) {
  int k = 0;
  while ((1LL << k) < n) ++k;
  return k;
}

double AnalyticNetwork::reduce_scatter_s(double bytes, const CommGroup& g) const {
  if (g.size <= 1) return 0.0;
  const int m = std::clamp(g.per_domain, 1, g.size);
  if (m >= g.size) {
    need_bw(up_, "scale-up");
    return ring_half_s(bytes, g.size, up_);
  }
  need_bw(out_, "scale-out");
  if (m > 1) need_bw(up_, "scale-up");
  const int domains = (g.size + m - 1) / m;
  return (m > 1 ? ring_half_s(bytes, m, up_) : 0.0) + ring_half_s(bytes / m, domains, out_);
}

double AnalyticNetwork::allgather_s(double bytes, const CommGroup& g) const {
  // The mirror image of the reduce-scatter: the same messages in the other order.
  return reduce_scatter_s(bytes, g);
}

double AnalyticNetwork::tree_allreduce_s(double bytes, const CommGroup& g) const {
  if (g.size <= 1) return 0.0;
  const int m = std::clamp(g.per_domain, 1, g.size);
  const int domains = (g.size + m - 1) / m;
  double t = 0;
  if (m > 1) {
    need_bw(up_, "scale-up");
    t += ceil_log2(m) * (up_.latency_s + bytes / up_.bw_bytes_per_s);
  }
  if (domains > 1) {
    need_bw(out_, "scale-out");
    t += ceil_log2(domains) * (out_.latency_s + bytes / out_.bw_bytes_per_s);
  }
  return 2.0 * t;
}

double AnalyticNetwork::p2p_s(double bytes, bool cross_domain) const {
  const LinkLevel& l = cross_domain ? out_ : up_;
  need_bw(l, cross_domain ? "scale-out" : "scale-up");
  return l.latency_s + bytes / l.bw_bytes_per_s;
}

// ---- Fabric ---------------------------------------------------------------------------

void Fabric::validate() const {
  auto bad = [](const std::string& what) { throw std::invalid_argument("fabric: " + what); };
  if (gpus < 1) bad("gpus must be >= 1");
  if (gpus_per_node < 1) bad("gpus_per_node must be >= 1");
  if (domain_gpus < 1 || domain_gpus % gpus_per_node != 0)
    bad("domain_gpus (" + std::to_string(domain_gpus) + ") must be a multiple of gpus_per_node (" +
        std::to_string(gpus_per_node) + ")");
  if (gpus % gpus_per_node != 0)
    bad("gpus (" + std::to_string(gpus) + ") must fill whole nodes of " +
        std::to_string(gpus_per_node));
  if (nics_per_node < 0) bad("nics_per_node must be >= 0");
  if (nodes_per_leaf < 1) bad("nodes_per_leaf must be >= 1");
  if (!(oversubscription >= 1.0) || !std::isfinite(oversubscription))
    bad("oversubscription must be a finite number >= 1");
  if (domain_gpus > 1 && !(scaleup.bw_bytes_per_s > 0)) bad("scale-up bandwidth must be > 0");
  if (gpus > domain_gpus && (nics_per_node == 0 || !(nic.bw_bytes_per_s > 0)))
    bad("the GPUs span more than one scale-up domain but the nodes have no NIC bandwidth");
  if (scaleup.latency_s < 0 || nic.latency_s < 0 || wan.latency_s < 0)
    bad("latencies must be >= 0");
  if (regions < 1) bad("regions must be >= 1");
  if (regions > 1) {
    const int nodes = gpus / gpus_per_node;
    if (nodes % regions != 0)
      bad(std::to_string(nodes) + " nodes do not split evenly into " + std::to_string(regions) +
          " regions");
    if (!(wan.bw_bytes_per_s > 0)) bad("regions > 1 need a WAN bandwidth");
    if (nics_per_node == 0 || !(nic.bw_bytes_per_s > 0)) bad("regions > 1 need NICs");
  }
}

namespace {
std::string hexf(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", v);
  return buf;
}
}  // namespace

std::string Fabric::serialize() const {
  std::ostringstream o;
  o << "gpus=" << gpus << "\n"
    << "gpus_per_node=" << gpus_per_node << "\n"
    << "domain_gpus=" << domain_gpus << "\n"
    << "nics_per_node=" << nics_per_node << "\n"
    << "scaleup_latency_s=" << hexf(scaleup.latency_s) << "\n"
    << "scaleup_bw=" << hexf(scaleup.bw_bytes_per_s) << "\n"
    << "nic_latency_s=" << hexf(nic.latency_s) << "\n"
    << "nic_bw=" << hexf(nic.bw_bytes_per_s) << "\n"
    << "nodes_per_leaf=" << nodes_per_leaf << "\n"
    << "oversubscription=" << hexf(oversubscription) << "\n";
  if (regions > 1)
    o << "regions=" << regions << "\n"
      << "wan_latency_s=" << hexf(wan.latency_s) << "\n"
      << "wan_bw=" << hexf(wan.bw_bytes_per_s) << "\n";
  return o.str();
}

Fabric Fabric::parse(const std::string& text) {
  Fabric f;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) throw std::invalid_argument("fabric: bad line '" + line + "'");
    const std::string k = line.substr(0, eq), v = line.substr(eq + 1);
    // serialize()'s keys: whole numbers, then doubles (hex floats, exact).
    static const std::pair<const char*, int Fabric::*> ints[] = {
        {"gpus", &Fabric::gpus},
        {"gpus_per_node", &Fabric::gpus_per_node},
        {"domain_gpus", &Fabric::domain_gpus},
        {"nics_per_node", &Fabric::nics_per_node},
        {"nodes_per_leaf", &Fabric::nodes_per_leaf},
        {"regions", &Fabric::regions}};
    const std::pair<const char*, double*> doubles[] = {{"scaleup_latency_s", &f.scaleup.latency_s},
                                                       {"scaleup_bw", &f.scaleup.bw_bytes_per_s},
                                                       {"nic_latency_s", &f.nic.latency_s},
                                                       {"nic_bw", &f.nic.bw_bytes_per_s},
                                                       {"oversubscription", &f.oversubscription},
                                                       {"wan_latency_s", &f.wan.latency_s},
                                                       {"wan_bw", &f.wan.bw_bytes_per_s}};
    bool known = false;
    for (const auto& [key, field] : ints) {
      if (k != key) continue;
      f.*field = std::stoi(v);
      known = true;
    }
    for (const auto& [key, field] : doubles) {
      if (k != key) continue;
      *field = std::strtod(v.c_str(), nullptr);
      known = true;
    }
    if (!known) throw std::invalid_argument("fabric: unknown key '" + k + "'");
  }
  return f;
}

uint64_t Fabric::hash() const {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : serialize()) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

}  // namespace fleetsim::hw
