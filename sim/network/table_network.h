// The SimGrid-backed NetworkModel: collective costs precomputed by SimGrid on the
// scenario's fabric, per collective, group shape and message size, cached on disk, and
// interpolated.
//
// Tables are built by a helper process (fleetsim-simgrid tables; SimGrid allows one engine
// per process, and this process may need its own for live transfers) and stored as CSV in
// the cache folder ($FLEETSIM_CACHE_DIR, else $XDG_CACHE_HOME/fleetsim, else
// ~/.cache/fleetsim), file simgrid/tables-<hash>.csv, the hash covering the fabric, the
// groups, the size grid and the table format. A file there that is not such a table is
// never overwritten: that is an error naming it.
//
// Between grid sizes the time is interpolated linearly in bytes: every algorithm is a
// fixed number of rounds whose time is affine in the message size while the set of
// bottleneck links stays the same, so the interpolation is exact on an uncontended fabric.
// Beyond the largest size the last segment is extended.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <vector>

#include "hw_models/network.h"

namespace fleetsim::net {

class TableNetwork final : public hw::NetworkModel {
 public:
  /// Loads the tables for `fabric` and `groups` from the cache, building them first when
  /// absent. Throws std::runtime_error (SimGrid missing, helper failed, foreign file in the
  /// way) with what to do.
  static std::shared_ptr<const TableNetwork> load_or_build(const hw::Fabric& fabric,
                                                           std::vector<hw::CommGroup> groups);
  /// What load_or_build checks before it looks at the cache (every group whole scale-up
  /// domains, the tables' fabric buildable), without touching a file or a process. Throws
  /// std::runtime_error or std::invalid_argument saying what is wrong.
  static void check(const hw::Fabric& fabric, const std::vector<hw::CommGroup>& groups);

  double allreduce_s(double bytes, const hw::CommGroup& g) const override;
  double alltoall_s(double bytes_per_gpu, const hw::CommGroup& g) const override;
  double p2p_s(double bytes, bool cross_domain) const override;
  double reduce_scatter_s(double bytes, const hw::CommGroup& g) const override;
  double allgather_s(double bytes, const hw::CommGroup& g) const override;
  double tree_allreduce_s(double bytes, const hw::CommGroup& g) const override;

  const std::string& cache_file() const { return file_; }
  bool built_now() const { return built_now_; }

  /// The message sizes of the grid: 0 and 2^10 ... 2^36 bytes.
  static std::vector<double> size_grid();
  /// The table file text for `fabric` and `groups`, computed in this process with SimGrid
  /// (the helper's work).
  static std::string compute_csv(const hw::Fabric& fabric,
                                 const std::vector<hw::CommGroup>& groups);
  /// The header line naming what a table file holds (its first line).
  static std::string header(const hw::Fabric& fabric, const std::vector<hw::CommGroup>& groups);

  /// Parses a table file's text (throws std::runtime_error on a malformed one).
  void parse(const std::string& text);

 private:
  double lookup(const std::string& op, int size, int per_domain, double bytes) const;
  std::map<std::tuple<std::string, int, int>, std::vector<std::pair<double, double>>> rows_;
  hw::Fabric fabric_;
  std::string file_;
  bool built_now_ = false;
};

/// A deployment's collective tables, built when a cost is first asked. Loading a scenario
/// only records the fabric and the groups (and checks them, TableNetwork::check), so that
/// loading touches no process and writes no file; the first allreduce_s, ... (or tables())
/// builds or reads the tables (TableNetwork::load_or_build), once, under a lock: copies of
/// a scenario and threads running it share one build. A failure is an InputError located
/// at the scenario's network.model field (file, line, field given at construction) with
/// the builder's reason; the next call tries again.
///
/// Lazily rather than in a step every caller must remember: the planner, validation cases,
/// the SimGrid helper, --explain and tests all price iterations from loaded scenarios, and
/// a forgotten step would either crash or fall back to another model silently. The app
/// layer (sim/app/run.h, prepare_network) asks for the tables before a run starts, so that
/// a run reports a failure before it writes anything.
class DeferredTableNetwork final : public hw::NetworkModel {
 public:
  DeferredTableNetwork(hw::Fabric fabric, std::vector<hw::CommGroup> groups, std::string file,
                       int line, std::string field);

  /// The tables, built now if they were not (InputError when they cannot be).
  const TableNetwork& tables() const;
  /// Whether the tables were built (or read from the cache) already.
  bool built() const { return ready_.load(std::memory_order_acquire) != nullptr; }

  double allreduce_s(double bytes, const hw::CommGroup& g) const override {
    return tables().allreduce_s(bytes, g);
  }
  double alltoall_s(double bytes_per_gpu, const hw::CommGroup& g) const override {
    return tables().alltoall_s(bytes_per_gpu, g);
  }
  double p2p_s(double bytes, bool cross_domain) const override {
    return tables().p2p_s(bytes, cross_domain);
  }
  double reduce_scatter_s(double bytes, const hw::CommGroup& g) const override {
    return tables().reduce_scatter_s(bytes, g);
  }
  double allgather_s(double bytes, const hw::CommGroup& g) const override {
    return tables().allgather_s(bytes, g);
  }
  double tree_allreduce_s(double bytes, const hw::CommGroup& g) const override {
    return tables().tree_allreduce_s(bytes, g);
  }

 private:
  hw::Fabric fabric_;
  std::vector<hw::CommGroup> groups_;
  std::string file_, field_;
  int line_ = 0;
  mutable std::mutex mutex_;
  mutable std::shared_ptr<const TableNetwork> tables_;       // written under mutex_
  mutable std::atomic<const TableNetwork*> ready_{nullptr};  // tables_.get() once built
};

/// Builds the tables of `network` now when it is a DeferredTableNetwork (InputError when
/// they cannot be); any other model (or null) needs nothing.
void build_tables(const hw::NetworkModel* network);

/// The helper program for work that needs a SimGrid engine of its own (fleetsim-simgrid:
/// $FLEETSIM_SIMGRID_HELPER, else next to this program, else where the build put it).
/// Throws std::runtime_error when it is not found.
std::string simgrid_helper_path();

/// The groups a deployment's performance model asks about (tp and gpus-per-stage, whole
/// domains), for `domain` GPUs per scale-up domain.
std::vector<hw::CommGroup> groups_for(int tp, int gpus_per_stage, int domain);

}  // namespace fleetsim::net
