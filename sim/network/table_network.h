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

#include <map>
#include <memory>
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
  static std::string compute_csv(const hw::Fabric& fabric, const std::vector<hw::CommGroup>& groups);
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

/// The helper program for work that needs a SimGrid engine of its own (fleetsim-simgrid:
/// $FLEETSIM_SIMGRID_HELPER, else next to this program, else where the build put it).
/// Throws std::runtime_error when it is not found.
std::string simgrid_helper_path();

/// The groups a deployment's performance model asks about (tp and gpus-per-stage, whole
/// domains), for `domain` GPUs per scale-up domain.
std::vector<hw::CommGroup> groups_for(int tp, int gpus_per_stage, int domain);

}  // namespace fleetsim::net
