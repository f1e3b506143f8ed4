#include "kernels/common/calib_csv.h"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fleetsim::kernels {
namespace {

// Header values are single lines.
std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string num(long v) { return v < 0 ? std::string() : std::to_string(v); }

}  // namespace

const char* calibration_columns() {
  return "op,dtype,m,n,k,batch,q_len,kv_len,heads,kv_heads,head_dim,causal,time_us,citation";
}

std::string csv_field(const std::string& s) {
  const bool quote = s.find_first_of(",\"") != std::string::npos ||
                     (!s.empty() && (s.front() == ' ' || s.back() == ' '));
  if (!quote) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string format_calibration_csv(const CalibProvenance& p, const std::vector<CalibRow>& rows) {
  std::ostringstream o;
  o << "# fleetsim-calibration: 1\n";
  o << "# gpu: " << one_line(p.gpu) << "\n";
  o << "# source: " << one_line(p.source) << "\n";
  o << "# driver: " << one_line(p.driver) << "\n";
  o << "# cuda: " << one_line(p.cuda) << "\n";
  o << "# date: " << one_line(p.date) << "\n";
  if (!p.notes.empty()) o << "# notes: " << one_line(p.notes) << "\n";
  o << calibration_columns() << "\n";
  for (const auto& r : rows) {
    char t[64];
    std::snprintf(t, sizeof t, "%.3f", r.time_us);
    o << r.op << ',' << r.dtype << ',' << num(r.m) << ',' << num(r.n) << ',' << num(r.k) << ','
      << num(r.batch) << ',' << num(r.q_len) << ',' << num(r.kv_len) << ',' << num(r.heads) << ','
      << num(r.kv_heads) << ',' << num(r.head_dim) << ','
      << (r.causal < 0 ? std::string() : std::to_string(r.causal)) << ',' << t << ','
      << csv_field(one_line(r.citation)) << "\n";
  }
  return o.str();
}

void write_calibration_csv(const std::string& path, const CalibProvenance& p,
                           const std::vector<CalibRow>& rows) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << format_calibration_csv(p, rows);
  if (!f) throw std::runtime_error("error writing " + path);
}

}  // namespace fleetsim::kernels
