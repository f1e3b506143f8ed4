// Stands in for simgrid_network.cpp when SimGrid is not installed: the analytic network
// still works; asking for the SimGrid one says what is missing.
#include <stdexcept>

#include "sim/network/simgrid_network.h"

namespace fleetsim::net {

namespace {
[[noreturn]] void missing() {
  throw std::runtime_error(
      "this fleetsim was built without SimGrid (install libsimgrid-dev and rebuild)");
}
}  // namespace

bool simgrid_available() { return false; }

struct SimGridFabric::Impl {};

SimGridFabric& SimGridFabric::acquire(const hw::Fabric&) { missing(); }
SimGridFabric::SimGridFabric(const hw::Fabric&) { missing(); }
SimGridFabric::~SimGridFabric() = default;
const hw::Fabric& SimGridFabric::fabric() const { missing(); }
void SimGridFabric::reset_origin() { missing(); }
double SimGridFabric::now() const { missing(); }
uint64_t SimGridFabric::start_transfer(int, int, double, double) { missing(); }
void SimGridFabric::advance_to(double, std::vector<Completion>&) { missing(); }
double SimGridFabric::next_event_time() const { missing(); }
bool SimGridFabric::advance_to_next_event(std::vector<Completion>&) { missing(); }
size_t SimGridFabric::in_flight() const { missing(); }
std::vector<std::string> SimGridFabric::route(int, int) const { missing(); }

}  // namespace fleetsim::net
