// fleetsim-simgrid-tables SPEC OUT: builds the SimGrid collective cost tables for the fabric
// and groups in SPEC (hw::Fabric::serialize lines plus `group=size,per_domain` lines) and
// writes them to OUT. Run by TableNetwork::load_or_build in its own process, because
// SimGrid allows one engine per process.
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "sim/network/table_network.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: fleetsim-simgrid-tables SPEC OUT\n";
    return 2;
  }
  try {
    std::ifstream in(argv[1]);
    if (!in) throw std::runtime_error(std::string("cannot read ") + argv[1]);
    std::string line, fabric_text;
    std::vector<fleetsim::hw::CommGroup> groups;
    while (std::getline(in, line)) {
      if (line.rfind("group=", 0) == 0) {
        fleetsim::hw::CommGroup g;
        if (std::sscanf(line.c_str(), "group=%d,%d", &g.size, &g.per_domain) != 2)
          throw std::runtime_error("bad line '" + line + "'");
        groups.push_back(g);
      } else {
        fabric_text += line + "\n";
      }
    }
    const auto fabric = fleetsim::hw::Fabric::parse(fabric_text);
    const std::string csv = fleetsim::net::TableNetwork::compute_csv(fabric, groups);
    std::ofstream out(argv[2], std::ios::binary);
    out << csv;
    if (!out) throw std::runtime_error(std::string("cannot write ") + argv[2]);
  } catch (const std::exception& e) {
    std::cerr << "fleetsim-simgrid-tables: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
