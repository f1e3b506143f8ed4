// Fabrics the SimGrid tests share.
#pragma once

#include "hw_models/network.h"

namespace fleetsim::test_fabrics {

/// `nodes` HGX-H100-like nodes of 8 GPUs: NVLink 450 GB/s with α 2 µs, one 400 Gb/s NIC
/// (50 GB/s, α 1 µs) per GPU, all nodes on one leaf, no oversubscription.
inline hw::Fabric hgx_h100_like(int nodes) {
  hw::Fabric f;
  f.gpus = 8 * nodes;
  f.gpus_per_node = 8;
  f.domain_gpus = 8;
  f.nics_per_node = 8;
  f.scaleup = {2e-6, 450e9};
  f.nic = {1e-6, 50e9};
  f.nodes_per_leaf = 32;
  f.oversubscription = 1.0;
  return f;
}

}  // namespace fleetsim::test_fabrics
