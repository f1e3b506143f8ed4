#include "sim/network/table_network.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "hw_models/error.h"
#include "sim/network/simgrid_network.h"

extern char** environ;

namespace fleetsim::net {

namespace fs = std::filesystem;

namespace {
constexpr const char* kMagic = "# fleetsim simgrid collective table v1";

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

fs::path cache_root() {
  if (const char* d = std::getenv("FLEETSIM_CACHE_DIR"); d && *d) return fs::path(d);
  if (const char* d = std::getenv("XDG_CACHE_HOME"); d && *d) return fs::path(d) / "fleetsim";
  if (const char* d = std::getenv("HOME"); d && *d) return fs::path(d) / ".cache" / "fleetsim";
  return fs::temp_directory_path() / "fleetsim-cache";
}

}  // namespace

std::string simgrid_helper_path() {
  if (const char* p = std::getenv("FLEETSIM_SIMGRID_HELPER"); p && *p) return p;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path sibling = self.parent_path() / "fleetsim-simgrid";
    if (fs::exists(sibling)) return sibling.string();
  }
#ifdef FLEETSIM_SIMGRID_HELPER_BIN
  if (fs::exists(FLEETSIM_SIMGRID_HELPER_BIN)) return FLEETSIM_SIMGRID_HELPER_BIN;
#endif
  throw std::runtime_error(
      "network model simgrid: the helper fleetsim-simgrid was not found next to this program "
      "(set FLEETSIM_SIMGRID_HELPER to its path)");
}

namespace {

// The fabric the tables need: the scenario's, cut to the GPUs of the largest group (and two
// domains, for the cross-domain point-to-point, when the nodes have NICs), in one region.
hw::Fabric table_fabric(hw::Fabric f, const std::vector<hw::CommGroup>& groups) {
  int need = f.domain_gpus;
  for (const auto& g : groups) {
    const int m = std::max(1, std::min(g.per_domain, g.size));
    need = std::max(need, (g.size / m) * f.domain_gpus);
  }
  if (f.nics_per_node > 0 && f.nic.bw_bytes_per_s > 0) need = std::max(need, 2 * f.domain_gpus);
  f.gpus = need;
  // A collective group never leaves its region: the tables are priced inside one.
  f.regions = 1;
  f.wan = {};
  return f;
}
}  // namespace

std::vector<hw::CommGroup> groups_for(int tp, int gpus_per_stage, int domain) {
  std::vector<hw::CommGroup> out;
  for (int n : {tp, gpus_per_stage}) {
    if (n <= 1) continue;
    const hw::CommGroup g{n, std::min(n, std::max(1, domain))};
    if (std::none_of(out.begin(), out.end(), [&](const hw::CommGroup& o) {
          return o.size == g.size && o.per_domain == g.per_domain;
        }))
      out.push_back(g);
  }
  return out;
}

std::vector<double> TableNetwork::size_grid() {
  std::vector<double> s{0.0};
  for (int k = 10; k <= 36; ++k) s.push_back(std::ldexp(1.0, k));
  return s;
}

std::string TableNetwork::header(const hw::Fabric& fabric,
                                 const std::vector<hw::CommGroup>& groups) {
  std::ostringstream o;
  o << kMagic << " fabric=" << std::hex << fabric.hash() << std::dec << " groups=";
  for (const auto& g : groups) o << g.size << "/" << g.per_domain << ";";
  o << " sizes=" << size_grid().size();
  return o.str();
}

std::string TableNetwork::compute_csv(const hw::Fabric& fabric,
                                      const std::vector<hw::CommGroup>& groups) {
  SimGridFabric& f = SimGridFabric::acquire(fabric);
  std::ostringstream o;
  o << header(fabric, groups) << "\n";
  o << "op,group_size,per_domain,bytes,seconds\n";
  char buf[128];
  auto emit = [&](const char* op, const hw::CommGroup& g, double bytes, double t) {
    std::snprintf(buf, sizeof buf, "%s,%d,%d,%.17g,%.17g\n", op, g.size, g.per_domain, bytes, t);
    o << buf;
  };
  // Point-to-point inside a domain (when domains hold two GPUs or more) and across two
  // (when the fabric has a second domain, i.e. NICs).
  std::vector<hw::CommGroup> p2p;
  if (fabric.domain_gpus >= 2) p2p.push_back({2, 2});
  if (fabric.gpus > fabric.domain_gpus) p2p.push_back({2, 1});
  for (const double b : size_grid()) {
    for (const auto& g : p2p) emit("p2p", g, b, run_collective(f, Collective::kP2p, b, g));
    for (const auto& g : groups)
      for (Collective c : all_collectives())
        if (c != Collective::kP2p) emit(collective_name(c), g, b, run_collective(f, c, b, g));
  }
  return o.str();
}

void TableNetwork::parse(const std::string& text) {
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);  // header
  std::getline(in, line);  // column names
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::istringstream ls(line);
    std::string op, a, b, c, d;
    if (!std::getline(ls, op, ',') || !std::getline(ls, a, ',') || !std::getline(ls, b, ',') ||
        !std::getline(ls, c, ',') || !std::getline(ls, d))
      throw std::runtime_error("simgrid table " + file_ + ": malformed line '" + line + "'");
    rows_[{op, std::stoi(a), std::stoi(b)}].emplace_back(std::stod(c), std::stod(d));
  }
  for (auto& [k, v] : rows_) std::sort(v.begin(), v.end());
}

void TableNetwork::check(const hw::Fabric& scenario_fabric,
                         const std::vector<hw::CommGroup>& groups) {
  for (const auto& g : groups)
    if (g.size % std::max(1, g.per_domain) != 0)
      throw std::runtime_error("network model simgrid: a group of " + std::to_string(g.size) +
                               " GPUs is not whole scale-up domains of " +
                               std::to_string(g.per_domain) +
                               " (use a tp that divides or is a multiple of the domain)");
  table_fabric(scenario_fabric, groups).validate();
}

std::shared_ptr<const TableNetwork> TableNetwork::load_or_build(const hw::Fabric& scenario_fabric,
                                                                std::vector<hw::CommGroup> groups) {
  check(scenario_fabric, groups);
  const hw::Fabric fabric = table_fabric(scenario_fabric, groups);
  auto net = std::make_shared<TableNetwork>();
  net->fabric_ = fabric;
  const std::string head = header(fabric, groups);
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char ch : head) {
    h ^= ch;
    h *= 1099511628211ULL;
  }
  char name[64];
  std::snprintf(name, sizeof name, "tables-%016llx.csv", static_cast<unsigned long long>(h));
  const fs::path dir = cache_root() / "simgrid";
  const fs::path file = dir / name;
  net->file_ = file.string();
  if (fs::exists(file)) {
    const std::string text = read_all(file);
    if (text.compare(0, head.size() + 1, head + "\n") != 0)
      throw std::runtime_error("network model simgrid: " + file.string() +
                               " exists but is not this fabric's fleetsim table; not overwriting "
                               "it (move it away, or set FLEETSIM_CACHE_DIR to another folder)");
    net->parse(text);
    return net;
  }
  if (!simgrid_available())
    throw std::runtime_error(
        "network model simgrid: this fleetsim was built without SimGrid (install "
        "libsimgrid-dev and rebuild, or use network: {model: analytic})");
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw std::runtime_error("network model simgrid: cannot create the cache folder " +
                             dir.string() + ": " + ec.message() + " (set FLEETSIM_CACHE_DIR)");
  const std::string pid = std::to_string(::getpid());
  const fs::path spec = dir / (std::string(name) + ".spec." + pid);
  const fs::path tmp = dir / (std::string(name) + ".tmp." + pid);
  {
    std::ofstream s(spec);
    s << fabric.serialize();
    for (const auto& g : groups) s << "group=" << g.size << "," << g.per_domain << "\n";
  }
  const std::string helper = simgrid_helper_path();
  std::vector<std::string> args{helper, "tables", spec.string(), tmp.string()};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  // The helper's messages go to a file, so a failure can say why.
  const fs::path log = dir / (std::string(name) + ".log." + pid);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 2, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t child = 0;
  const int spawned = posix_spawn(&child, helper.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) {
    fs::remove(spec, ec);
    fs::remove(log, ec);
    throw std::runtime_error("network model simgrid: cannot run " + helper);
  }
  int status = 0;
  waitpid(child, &status, 0);
  fs::remove(spec, ec);
  std::string why = read_all(log);
  fs::remove(log, ec);
  while (!why.empty() && (why.back() == '\n' || why.back() == '\r')) why.pop_back();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !fs::exists(tmp)) {
    fs::remove(tmp, ec);
    throw std::runtime_error("network model simgrid: building the collective tables failed" +
                             (why.empty() ? std::string() : ": " + why));
  }
  const std::string text = read_all(tmp);
  if (text.compare(0, head.size() + 1, head + "\n") != 0) {
    fs::remove(tmp, ec);
    throw std::runtime_error("network model simgrid: " + helper +
                             " wrote tables for another fabric");
  }
  fs::rename(tmp, file, ec);  // atomic; a concurrent builder wrote the same content
  if (ec) fs::remove(tmp, ec);
  net->parse(text);
  net->built_now_ = true;
  return net;
}

DeferredTableNetwork::DeferredTableNetwork(hw::Fabric fabric, std::vector<hw::CommGroup> groups,
                                           std::string file, int line, std::string field)
    : fabric_(std::move(fabric)),
      groups_(std::move(groups)),
      file_(std::move(file)),
      field_(std::move(field)),
      line_(line) {}

const TableNetwork& DeferredTableNetwork::tables() const {
  if (const TableNetwork* t = ready_.load(std::memory_order_acquire)) return *t;
  std::lock_guard<std::mutex> lock(mutex_);
  if (!tables_) {
    try {
      tables_ = TableNetwork::load_or_build(fabric_, groups_);
    } catch (const std::exception& e) {
      // As the scenario loader reported it when it built the tables itself.
      throw InputError(e.what(), "use network: {model: analytic}").located(file_, line_, field_);
    }
    ready_.store(tables_.get(), std::memory_order_release);
  }
  return *tables_;
}

void build_tables(const hw::NetworkModel* network) {
  if (const auto* d = dynamic_cast<const DeferredTableNetwork*>(network)) (void)d->tables();
}

double TableNetwork::lookup(const std::string& op, int size, int per_domain, double bytes) const {
  auto it = rows_.find({op, size, per_domain});
  if (it == rows_.end())
    throw std::logic_error("network model simgrid: no " + op + " table for a group of " +
                           std::to_string(size) + " GPUs (" + std::to_string(per_domain) +
                           " per domain); tables hold the groups of the scenario's deployment");
  const auto& v = it->second;
  if (v.size() < 2) return v.empty() ? 0.0 : v[0].second;
  auto hi = std::upper_bound(v.begin(), v.end(), std::make_pair(bytes, -1e300));
  if (hi == v.begin()) hi = v.begin() + 1;
  if (hi == v.end()) hi = v.end() - 1;
  const auto& [x1, y1] = *hi;
  const auto& [x0, y0] = *(hi - 1);
  return y0 + (y1 - y0) * (bytes - x0) / (x1 - x0);
}

double TableNetwork::allreduce_s(double bytes, const hw::CommGroup& g) const {
  return g.size <= 1 ? 0.0 : lookup("allreduce", g.size, std::min(g.per_domain, g.size), bytes);
}
double TableNetwork::alltoall_s(double bytes, const hw::CommGroup& g) const {
  return g.size <= 1 ? 0.0 : lookup("alltoall", g.size, std::min(g.per_domain, g.size), bytes);
}
double TableNetwork::reduce_scatter_s(double bytes, const hw::CommGroup& g) const {
  return g.size <= 1 ? 0.0
                     : lookup("reduce_scatter", g.size, std::min(g.per_domain, g.size), bytes);
}
double TableNetwork::allgather_s(double bytes, const hw::CommGroup& g) const {
  return g.size <= 1 ? 0.0 : lookup("allgather", g.size, std::min(g.per_domain, g.size), bytes);
}
double TableNetwork::tree_allreduce_s(double bytes, const hw::CommGroup& g) const {
  return g.size <= 1 ? 0.0
                     : lookup("tree_allreduce", g.size, std::min(g.per_domain, g.size), bytes);
}
double TableNetwork::p2p_s(double bytes, bool cross_domain) const {
  return lookup("p2p", 2, cross_domain ? 1 : 2, bytes);
}

}  // namespace fleetsim::net
