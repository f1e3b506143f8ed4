// Helpers shared by the workload sources' error messages.
#pragma once

#include <cstdio>
#include <limits>
#include <string>

namespace fleetsim::workload::detail {

inline constexpr double kInf = std::numeric_limits<double>::infinity();

/// A number as printf's %g writes it (error messages quote the user's values this way).
inline std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace fleetsim::workload::detail
