// The only translation unit that includes SimGrid (see simgrid_network.h).
#include "sim/network/simgrid_network.h"

#include <simgrid/kernel/resource/Model.hpp>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u.hpp>
#include <xbt/log.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <unordered_map>

namespace sg4 = simgrid::s4u;

namespace fleetsim::net {

bool simgrid_available() { return true; }

struct SimGridFabric::Impl {
  hw::Fabric fab;
  std::unique_ptr<sg4::Engine> engine;
  sg4::NetZone* zone = nullptr;
  simgrid::kernel::resource::Model* netmodel = nullptr;
  std::vector<sg4::Host*> hosts;
  double origin = 0;
  uint64_t next_id = 1;
  // Every communication handle is held until it completes (dropping one early would cancel
  // nothing but leave SimGrid with a dangling activity).
  std::unordered_map<const sg4::Activity*, std::pair<uint64_t, sg4::CommPtr>> live;
  std::vector<Completion> finished;  // filled by the completion signal during run_until
  std::vector<uint64_t> instant;     // src == dst transfers, reported at the next advance
  std::vector<std::vector<std::string>> routes;  // only for route(); small fabrics

  int node_of(int g) const { return g / fab.gpus_per_node; }
  int domain_of(int g) const { return g / fab.domain_gpus; }
  int nic_of(int g) const { return (g % fab.gpus_per_node) * fab.nics_per_node / fab.gpus_per_node; }
  int nodes() const { return fab.gpus / fab.gpus_per_node; }
  int region_of(int g) const { return node_of(g) / (nodes() / fab.regions); }
  // Leaves never straddle regions: numbered region by region.
  int leaves_per_region() const {
    const int per_region = nodes() / fab.regions;
    return (per_region + fab.nodes_per_leaf - 1) / fab.nodes_per_leaf;
  }
  int leaf_of(int g) const {
    const int per_region = nodes() / fab.regions;
    return region_of(g) * leaves_per_region() + (node_of(g) % per_region) / fab.nodes_per_leaf;
  }

  void build() {
    xbt_log_control_set("root.thres:critical");
    engine = std::make_unique<sg4::Engine>("fleetsim");
    engine->set_config("network/model:CM02");
    engine->set_config("network/crosstraffic:0");
    engine->set_config("network/TCP-gamma:0");
    // Keep the default lazy max-min update (network/optim:Lazy). network/optim:Full was
    // 1.5-2x faster on the transfer benchmark but its next_occurring_event, which we call
    // between run_until calls to find the next wake-up, went wrong after a latency phase
    // ended (no next event with flows in flight, then a crash); see README.
    zone = sg4::create_full_zone("fabric");
    const int n = fab.gpus;
    const int node_count = nodes();
    for (int g = 0; g < n; ++g) hosts.push_back(zone->create_host("gpu" + std::to_string(g), 1e9));
    auto link = [&](const std::string& name, double bw, double lat) {
      return zone->create_link(name, bw)->set_latency(lat)->seal();
    };
    std::vector<sg4::Link*> nv_up(n), nv_dn(n);
    if (fab.domain_gpus > 1)
      for (int g = 0; g < n; ++g) {
        nv_up[g] = link("nvlink_up" + std::to_string(g), fab.scaleup.bw_bytes_per_s, fab.scaleup.latency_s / 2);
        nv_dn[g] = link("nvlink_dn" + std::to_string(g), fab.scaleup.bw_bytes_per_s, fab.scaleup.latency_s / 2);
      }
    const int nics = fab.nics_per_node;
    const bool scaleout = n > fab.domain_gpus && nics > 0;
    std::vector<sg4::Link*> nic_up, nic_dn, leaf_up, leaf_dn;
    const int leaves = fab.regions * leaves_per_region();
    if (scaleout) {
      for (int node = 0; node < node_count; ++node)
        for (int k = 0; k < nics; ++k) {
          const std::string s = std::to_string(node) + "_" + std::to_string(k);
          nic_up.push_back(link("nic_up" + s, fab.nic.bw_bytes_per_s, fab.nic.latency_s / 2));
          nic_dn.push_back(link("nic_dn" + s, fab.nic.bw_bytes_per_s, fab.nic.latency_s / 2));
        }
      const double uplink = fab.nodes_per_leaf * fab.nic.bw_bytes_per_s / fab.oversubscription;
      for (int l = 0; l < leaves; ++l)
        for (int k = 0; k < nics; ++k) {
          const std::string s = std::to_string(l) + "_rail" + std::to_string(k);
          leaf_up.push_back(link("leaf_up" + s, uplink, 0));
          leaf_dn.push_back(link("leaf_dn" + s, uplink, 0));
        }
    }
    std::vector<sg4::Link*> wan(static_cast<size_t>(fab.regions) * fab.regions, nullptr);
    if (fab.regions > 1)
      for (int a = 0; a < fab.regions; ++a)
        for (int b = 0; b < fab.regions; ++b)
          if (a != b)
            wan[static_cast<size_t>(a) * fab.regions + b] =
                link("wan" + std::to_string(a) + "_" + std::to_string(b), fab.wan.bw_bytes_per_s,
                     fab.wan.latency_s);
    const bool keep_names = n <= 64;
    if (keep_names) routes.assign(static_cast<size_t>(n) * n, {});
    std::vector<sg4::LinkInRoute> r;
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        if (i == j) continue;
        r.clear();
        if (domain_of(i) == domain_of(j)) {
          r = {sg4::LinkInRoute(nv_up[i]), sg4::LinkInRoute(nv_dn[j])};
        } else {
          const int ni = node_of(i) * nics + nic_of(i), nj = node_of(j) * nics + nic_of(j);
          r.emplace_back(nic_up[ni]);
          if (nic_of(i) != nic_of(j) || leaf_of(i) != leaf_of(j)) {
            r.emplace_back(leaf_up[leaf_of(i) * nics + nic_of(i)]);
            if (region_of(i) != region_of(j))
              r.emplace_back(wan[static_cast<size_t>(region_of(i)) * fab.regions + region_of(j)]);
            r.emplace_back(leaf_dn[leaf_of(j) * nics + nic_of(j)]);
          }
          r.emplace_back(nic_dn[nj]);
        }
        zone->add_route(hosts[i]->get_netpoint(), hosts[j]->get_netpoint(), nullptr, nullptr, r, false);
        if (keep_names)
          for (const auto& l : r) routes[static_cast<size_t>(i) * n + j].push_back(l.get_link()->get_name());
      }
    zone->seal();
    netmodel = dynamic_cast<simgrid::kernel::resource::Model*>(zone->get_network_model());
    if (netmodel == nullptr) throw std::runtime_error("simgrid: no network model on the fabric zone");
    sg4::Activity::on_completion_cb([this](const sg4::Activity& a) {
      auto it = live.find(&a);
      if (it != live.end()) finished.push_back({it->second.first, sg4::Engine::get_clock() - origin});
    });
  }
};

namespace {
std::unique_ptr<SimGridFabric>& instance() {
  static std::unique_ptr<SimGridFabric> p;
  return p;
}
}  // namespace

SimGridFabric& SimGridFabric::acquire(const hw::Fabric& fabric) {
  auto& p = instance();
  if (!p) {
    fabric.validate();
    p.reset(new SimGridFabric(fabric));
    return *p;
  }
  if (p->fabric().serialize() != fabric.serialize())
    throw std::runtime_error(
        "simgrid: this process already built a different fabric (SimGrid allows one engine per "
        "process); run each such simulation in its own process");
  return *p;
}

SimGridFabric::SimGridFabric(const hw::Fabric& fabric) : impl_(std::make_unique<Impl>()) {
  impl_->fab = fabric;
  impl_->build();
}

SimGridFabric::~SimGridFabric() {
  // Drain: let every transfer still in flight finish before the engine goes away.
  if (impl_ && impl_->engine) {
    std::vector<Completion> done;
    try {
      for (int guard = 0; guard < 10000000 && advance_to_next_event(done); ++guard) done.clear();
    } catch (const std::logic_error&) {
      // no next event: nothing more will finish
    }
    impl_->live.clear();
  }
}

double SimGridFabric::now() const { return sg4::Engine::get_clock() - impl_->origin; }

const hw::Fabric& SimGridFabric::fabric() const { return impl_->fab; }

void SimGridFabric::reset_origin() {
  if (!impl_->live.empty() || !impl_->instant.empty())
    throw std::logic_error("simgrid: reset_origin with transfers in flight");
  impl_->origin = sg4::Engine::get_clock();
  impl_->finished.clear();
}

uint64_t SimGridFabric::start_transfer(int src, int dst, double bytes, double now_s) {
  Impl& m = *impl_;
  if (src < 0 || dst < 0 || src >= m.fab.gpus || dst >= m.fab.gpus)
    throw std::out_of_range("simgrid: transfer between GPUs " + std::to_string(src) + " and " +
                            std::to_string(dst) + " of a " + std::to_string(m.fab.gpus) + "-GPU fabric");
  if (now_s + m.origin < sg4::Engine::get_clock() - 1e-12)
    throw std::logic_error("simgrid: transfer started in the network's past");
  if (now_s + m.origin > sg4::Engine::get_clock()) {
    std::vector<Completion> none;
    advance_to(now_s, none);
    m.finished.insert(m.finished.begin(), none.begin(), none.end());
  }
  const uint64_t id = m.next_id++;
  if (src == dst) {
    m.instant.push_back(id);
    return id;
  }
  // At least one byte: SimGrid leaves an empty communication outside its event heap. One
  // byte more costs 1/bandwidth (2 ps at 450 GB/s).
  const auto size = static_cast<uint64_t>(std::max<long long>(1, std::llround(bytes)));
  sg4::CommPtr c = sg4::Comm::sendto_async(m.hosts[src], m.hosts[dst], size);
  m.live.emplace(c.get(), std::make_pair(id, c));
  return id;
}

void SimGridFabric::advance_to(double t_s, std::vector<Completion>& done) {
  Impl& m = *impl_;
  for (uint64_t id : m.instant) done.push_back({id, sg4::Engine::get_clock() - m.origin});
  m.instant.clear();
  const double target = t_s + m.origin;
  if (target > sg4::Engine::get_clock()) m.engine->run_until(target);
  for (const Completion& c : m.finished) done.push_back(c);
  // Release the handles of what finished (after run_until, never inside the signal).
  if (!m.finished.empty()) {
    std::unordered_map<uint64_t, bool> ended;
    for (const Completion& c : m.finished) ended[c.id] = true;
    for (auto it = m.live.begin(); it != m.live.end();)
      it = ended.count(it->second.first) ? m.live.erase(it) : std::next(it);
  }
  m.finished.clear();
}

double SimGridFabric::next_event_time() const {
  const Impl& m = *impl_;
  if (!m.instant.empty()) return sg4::Engine::get_clock() - m.origin;
  if (m.live.empty()) return std::numeric_limits<double>::infinity();
  const double now = sg4::Engine::get_clock();
  const double d = m.netmodel->next_occurring_event(now);
  if (d < 0) return std::numeric_limits<double>::infinity();
  return now + d - m.origin;
}

bool SimGridFabric::advance_to_next_event(std::vector<Completion>& done) {
  if (in_flight() == 0) return false;
  const double t = next_event_time();
  if (!std::isfinite(t)) throw std::logic_error("simgrid: transfers in flight but no next event");
  advance_to(std::max(t, now() + 1e-12 * std::max(1.0, now())), done);
  return true;
}

size_t SimGridFabric::in_flight() const { return impl_->live.size() + impl_->instant.size(); }

std::vector<std::string> SimGridFabric::route(int src, int dst) const {
  const Impl& m = *impl_;
  if (m.routes.empty()) throw std::logic_error("simgrid: route names kept for fabrics of <= 64 GPUs");
  return m.routes.at(static_cast<size_t>(src) * m.fab.gpus + dst);
}

}  // namespace fleetsim::net
