#include "hw_models/yaml_reader.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "hw_models/error.h"
#include "hw_models/files.h"

namespace fleetsim::yaml {

namespace {

std::string join_path(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

std::string node_kind(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "'" + n.Scalar() + "'";
    default: return "an undefined value";
  }
}

// Parses a plain YAML scalar as a number; false when it is not one.
bool to_double(const std::string& s, double& out) {
  if (s.empty()) return false;
  std::istringstream in(s);
  in.imbue(std::locale::classic());
  in >> out;
  return !in.fail() && in.eof() && std::isfinite(out);
}

}  // namespace

namespace {

thread_local ReadLog* read_log = nullptr;

// A quantity as a scenario would write it, in the largest unit that keeps it whole
// ("14h", "1GiB", "2GB/s", "0s").
std::string quantity_text(double v, units::Dim dim) {
  struct U {
    double scale;
    const char* name;
  };
  static const std::vector<U> time = {{86400, "d"}, {3600, "h"},  {60, "min"}, {1, "s"},
                                      {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
  static const std::vector<U> bytes = {{1099511627776.0, "TiB"},
                                       {1073741824.0, "GiB"},
                                       {1048576.0, "MiB"},
                                       {1024.0, "KiB"},
                                       {1e12, "TB"},
                                       {1e9, "GB"},
                                       {1e6, "MB"},
                                       {1e3, "kB"},
                                       {1, "B"}};
  static const std::vector<U> bandwidth = {
      {1e12, "TB/s"}, {1e9, "GB/s"}, {1e6, "MB/s"}, {1e3, "kB/s"}, {1, "B/s"}};
  static const std::vector<U> rate = {{1, "/s"}};
  static const std::vector<U> power = {{1e6, "MW"}, {1e3, "kW"}, {1, "W"}};
  static const std::vector<U> flops = {{1e12, "TFLOP/s"}, {1e9, "GFLOP/s"}, {1, "FLOP/s"}};
  const std::vector<U>& us = dim == units::Dim::kTime        ? time
                             : dim == units::Dim::kBytes     ? bytes
                             : dim == units::Dim::kBandwidth ? bandwidth
                             : dim == units::Dim::kRate      ? rate
                             : dim == units::Dim::kPower     ? power
                                                             : flops;
  char buf[64];
  const U* unit = &us.back();
  if (v != 0)
    for (const U& u : us) {
      const double x = v / u.scale;
      if (std::fabs(x) >= 1 && std::fabs(x - std::round(x)) < 1e-9 * std::fabs(x)) {
        unit = &u;
        break;
      }
    }
  std::snprintf(buf, sizeof buf, "%g%s", v / unit->scale, unit->name);
  return buf;
}

// A bound as the reference writes it: whole numbers without a fraction, others in %g.
std::string bound_text(double v, const Key& k) {
  if (k.type == Key::Type::kQuantity) return quantity_text(v, k.dim);
  char buf[64];
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    std::snprintf(buf, sizeof buf, "%.0f", v);
  else
    std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Bounds at the limits of the type count as none (a seed goes up to 2^63 - 1).
bool bounded_below(const Key& k) { return std::isfinite(k.min) && k.min > -9.0e18; }
bool bounded_above(const Key& k) { return std::isfinite(k.max) && k.max < 9.0e18; }

}  // namespace

std::string Key::name() const {
  const size_t dot = path.rfind('.');
  return dot == std::string::npos ? path : path.substr(dot + 1);
}

std::string Key::type_name() const {
  switch (type) {
    case Type::kInt: return "integer";
    case Type::kNumber: return "number";
    case Type::kQuantity: return units::dim_name(dim);
    case Type::kString: return "string";
    case Type::kChoice: return "choice";
    case Type::kBool: return "boolean";
    case Type::kMap: return "mapping";
    case Type::kList: return "list";
    case Type::kDistribution: return "distribution";
    case Type::kPercentiles: return "time or percentiles";
  }
  return "?";
}

std::string Key::range_text() const {
  if (type == Type::kChoice) {
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
    return list;
  }
  if (type != Type::kInt && type != Type::kNumber && type != Type::kQuantity) return "";
  const bool lo = bounded_below(*this), hi = bounded_above(*this);
  if (lo && hi) return bound_text(min, *this) + " … " + bound_text(max, *this);
  if (lo) return "≥ " + bound_text(min, *this);
  if (hi) return "≤ " + bound_text(max, *this);
  return "";
}

std::string Key::default_text() const {
  if (!default_doc.empty()) return default_doc;
  if (!fallback.empty()) return fallback;
  return required ? "required" : "none";
}

std::string Key::summary() const {
  std::string s = path + ": " + type_name();
  if (const std::string r = range_text(); !r.empty())
    s += type == Type::kChoice ? " of " + r : ", " + r;
  s += required ? std::string(", required") : ", default " + default_text();
  if (!help.empty()) s += "; " + help;
  return s;
}

std::string generic_path(const std::string& dotted) {
  std::string out;
  out.reserve(dotted.size());
  for (size_t i = 0; i < dotted.size(); ++i) {
    out += dotted[i];
    if (dotted[i] == '[') {
      size_t j = i + 1;
      while (j < dotted.size() && dotted[j] >= '0' && dotted[j] <= '9') ++j;
      if (j < dotted.size() && dotted[j] == ']' && j > i + 1) i = j - 1;
    }
  }
  return out;
}

ReadLog::ReadLog() : previous_(read_log) { read_log = this; }
ReadLog::~ReadLog() { read_log = previous_; }

Map::Map(YAML::Node node, std::shared_ptr<const Source> source, std::string path)
    : node_(std::move(node)), source_(std::move(source)), path_(std::move(path)) {}

std::string Map::field(const std::string& key) const { return join_path(path_, key); }

std::string Map::file_of(const std::string& key) const {
  // A value set with --set has no line in the file: point at the command line instead.
  for (const auto& o : source_->overridden) {
    const std::string f = field(key);
    if (f == o || f.rfind(o + ".", 0) == 0) return "--set " + o;
  }
  return source_->file;
}

int Map::line_of(const std::string& key) const {
  if (!file_of(key).empty() && file_of(key) != source_->file) return 0;
  if (!key.empty() && node_.IsMap()) {
    for (auto it = node_.begin(); it != node_.end(); ++it) {
      if (it->first.Scalar() == key) return it->first.Mark().line + 1;
    }
  }
  const int line = node_.Mark().line;
  return line >= 0 ? line + 1 : 0;
}

void Map::fail(const std::string& key, const std::string& message, const std::string& hint) const {
  throw InputError(message, hint, file_of(key), line_of(key), key.empty() ? path_ : field(key));
}

InputError Map::locate(const std::string& key, const InputError& e) const {
  return e.located(file_of(key), line_of(key), field(key));
}

bool Map::has(const std::string& key) {
  known_.insert(key);
  if (read_log) read_log->record(source_->file, generic_path(field(key)));
  // Const access: a non-const operator[] would insert the key into the document.
  const YAML::Node& n = node_;
  return n.IsMap() && n[key] && !n[key].IsNull();
}

YAML::Node Map::scalar(const std::string& key) {
  if (!has(key)) fail(key, "missing required field", "add '" + key + ": ...' to the file");
  const YAML::Node& cn = node_;
  YAML::Node n = cn[key];
  if (!n.IsScalar()) fail(key, "expected a single value, got " + node_kind(n));
  return n;
}

std::string Map::str(const std::string& key) { return scalar(key).Scalar(); }

std::string Map::str_or(const std::string& key, const std::string& fallback) {
  return has(key) ? str(key) : fallback;
}

std::string Map::choice(const std::string& key, const std::vector<std::string>& allowed) {
  const std::string v = str(key);
  for (const auto& a : allowed)
    if (a == v) return v;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
  const std::string m = closest_match(v, allowed);
  fail(key, "unknown value '" + v + "'" + (m.empty() ? "" : " (did you mean '" + m + "'?)"),
       "one of: " + list);
}

std::string Map::choice_or(const std::string& key, const std::vector<std::string>& allowed,
                           const std::string& fallback) {
  return has(key) ? choice(key, allowed) : fallback;
}

double Map::quantity(const std::string& key, units::Dim dim, double min_si) {
  const std::string text = str(key);
  double v = 0;
  try {
    v = units::parse(text, dim);
  } catch (const InputError& e) {
    throw e.located(file_of(key), line_of(key), field(key));
  }
  if (v < min_si) {
    fail(key,
         std::string("must be at least ") + units::format(min_si, dim) + ", got '" + text + "'");
  }
  return v;
}

double Map::quantity_or(const std::string& key, units::Dim dim, double fallback, double min_si) {
  return has(key) ? quantity(key, dim, min_si) : fallback;
}

double Map::number(const std::string& key, double min, double max) {
  const std::string text = str(key);
  double v = 0;
  if (!to_double(text, v)) fail(key, "expected a number, got '" + text + "'");
  if (v < min || v > max) {
    std::ostringstream range;
    range << "must be in [" << min << ", " << max << "], got " << text;
    fail(key, range.str());
  }
  return v;
}

double Map::number_or(const std::string& key, double min, double max, double fallback) {
  return has(key) ? number(key, min, max) : fallback;
}

int64_t Map::integer(const std::string& key, int64_t min, int64_t max) {
  const std::string text = str(key);
  double v = 0;
  if (!to_double(text, v) || v != std::floor(v) || std::fabs(v) > 9.0e18) {
    fail(key, "expected a whole number, got '" + text + "'");
  }
  if (v < static_cast<double>(min) || v > static_cast<double>(max)) {
    fail(key, "must be in [" + std::to_string(min) + ", " + std::to_string(max) + "], got " + text);
  }
  return static_cast<int64_t>(v);
}

int64_t Map::integer_or(const std::string& key, int64_t min, int64_t max, int64_t fallback) {
  return has(key) ? integer(key, min, max) : fallback;
}

bool Map::boolean_or(const std::string& key, bool fallback) {
  if (!has(key)) return fallback;
  const std::string v = str(key);
  if (v == "true" || v == "yes" || v == "on") return true;
  if (v == "false" || v == "no" || v == "off") return false;
  fail(key, "expected true or false, got '" + v + "'");
}

Map Map::map(const std::string& key) {
  if (!has(key)) fail(key, "missing required section", "add '" + key + ":' with its fields");
  const YAML::Node& cn = node_;
  YAML::Node n = cn[key];
  if (!n.IsMap()) fail(key, "expected a mapping of fields, got " + node_kind(n));
  return Map(n, source_, field(key));
}

std::optional<Map> Map::map_opt(const std::string& key) {
  if (!has(key)) return std::nullopt;
  return map(key);
}

std::vector<std::string> Map::str_list_or(const std::string& key,
                                          std::vector<std::string> fallback) {
  if (!has(key)) return fallback;
  const YAML::Node& cn = node_;
  YAML::Node n = cn[key];
  if (n.IsScalar()) return {n.Scalar()};
  if (!n.IsSequence()) fail(key, "expected a list, got " + node_kind(n));
  std::vector<std::string> out;
  for (const auto& item : n) {
    if (!item.IsScalar()) fail(key, "expected a list of single values, got " + node_kind(item));
    out.push_back(item.Scalar());
  }
  return out;
}

std::string Map::declared(const Key& k) const {
  const std::string name = k.name();
  if (name.empty() || name.find('[') != std::string::npos)
    throw std::logic_error("declaration " + k.path + " names no field");
  // Which declaration a read goes through (a pool's `speculative` reads through
  // serving.speculative's) is checked by the schema's tests, from the read log.
  if (read_log) read_log->record_declared(generic_path(field(name)), k.path);
  return name;
}

template <typename F>
auto Map::with_hint(const Key& k, F read) -> decltype(read()) {
  try {
    return read();
  } catch (const InputError& e) {
    if (!e.hint().empty()) throw;
    throw InputError(e.message(), k.summary(), e.file(), e.line(), e.field());
  }
}

namespace {

// The declared default of `k`, parsed as a scenario value; an internal error when it has none.
const std::string& declared_default(const Key& k) {
  if (k.fallback.empty())
    throw std::logic_error(k.path + " has no fixed default; the reader must give one");
  return k.fallback;
}

double default_number(const Key& k) {
  double v = 0;
  if (!to_double(declared_default(k), v))
    throw std::logic_error(k.path + ": default '" + k.fallback + "' is not a number");
  return v;
}

}  // namespace

bool Map::has(const Key& k) { return has(declared(k)); }

std::string Map::str(const Key& k) { return str(declared(k)); }
std::string Map::str_or(const Key& k) { return str_or(declared(k), k.fallback); }
std::string Map::str_or(const Key& k, const std::string& fallback) {
  return str_or(declared(k), fallback);
}

std::string Map::choice(const Key& k) { return choice(declared(k), k.choices); }
std::string Map::choice_or(const Key& k) { return choice_or(k, declared_default(k)); }
std::string Map::choice_or(const Key& k, const std::string& fallback) {
  return choice_or(declared(k), k.choices, fallback);
}

double Map::quantity(const Key& k) {
  const std::string key = declared(k);
  return with_hint(k, [&] {
    const double v = quantity(key, k.dim, -std::numeric_limits<double>::infinity());
    if (v < k.min)
      fail(key, "must be at least " + quantity_text(k.min, k.dim) + ", got '" + str(key) + "'");
    if (v > k.max)
      fail(key, "must be at most " + quantity_text(k.max, k.dim) + ", got '" + str(key) + "'");
    return v;
  });
}
double Map::quantity_or(const Key& k) {
  return quantity_or(k, units::parse(declared_default(k), k.dim));
}
double Map::quantity_or(const Key& k, double fallback) { return has(k) ? quantity(k) : fallback; }

double Map::number(const Key& k) {
  const std::string key = declared(k);
  return with_hint(k, [&] { return number(key, k.min, k.max); });
}
double Map::number_or(const Key& k) { return number_or(k, default_number(k)); }
double Map::number_or(const Key& k, double fallback) { return has(k) ? number(k) : fallback; }

int64_t Map::integer(const Key& k) {
  const std::string key = declared(k);
  const int64_t lo =
      bounded_below(k) ? static_cast<int64_t>(k.min) : std::numeric_limits<int64_t>::min();
  const int64_t hi =
      bounded_above(k) ? static_cast<int64_t>(k.max) : std::numeric_limits<int64_t>::max();
  return with_hint(k, [&] { return integer(key, lo, hi); });
}
int64_t Map::integer_or(const Key& k) {
  return integer_or(k, static_cast<int64_t>(default_number(k)));
}
int64_t Map::integer_or(const Key& k, int64_t fallback) { return has(k) ? integer(k) : fallback; }

bool Map::boolean_or(const Key& k) {
  const std::string& d = declared_default(k);
  if (d != "true" && d != "false")
    throw std::logic_error(k.path + ": default '" + d + "' is not true or false");
  return boolean_or(k, d == "true");
}
bool Map::boolean_or(const Key& k, bool fallback) {
  const std::string key = declared(k);
  return with_hint(k, [&] { return boolean_or(key, fallback); });
}

Map Map::map(const Key& k) { return map(declared(k)); }
std::optional<Map> Map::map_opt(const Key& k) { return map_opt(declared(k)); }

std::vector<std::string> Map::str_list_or(const Key& k, std::vector<std::string> fallback) {
  return str_list_or(declared(k), std::move(fallback));
}

void Map::finish() const {
  if (!node_.IsMap()) return;
  std::vector<std::string> known(known_.begin(), known_.end());
  for (auto it = node_.begin(); it != node_.end(); ++it) {
    const std::string key = it->first.Scalar();
    if (known_.count(key)) continue;
    const std::string m = closest_match(key, known);
    std::string list;
    for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
    throw InputError("unknown field" + (m.empty() ? std::string() : " (did you mean '" + m + "'?)"),
                     "fields here: " + list, file_of(key),
                     file_of(key) == source_->file ? it->first.Mark().line + 1 : 0, field(key));
  }
}

namespace {

// yaml-cpp keeps every entry of a mapping that repeats a key and lookups find the first, so
// a second `serving:` section would be dropped without a word: refuse it, naming both lines.
void reject_duplicate_keys(const YAML::Node& node, const std::string& file) {
  if (node.IsMap()) {
    std::map<std::string, int> seen;  // key -> line of its first occurrence
    for (auto it = node.begin(); it != node.end(); ++it) {
      if (it->first.IsScalar()) {
        const std::string& key = it->first.Scalar();
        const int line = it->first.Mark().line + 1;
        const auto [first, fresh] = seen.emplace(key, line);
        if (!fresh)
          throw InputError(
              "duplicate key '" + key + "' (first at line " + std::to_string(first->second) + ")",
              "a mapping holds each key once: merge the two entries or remove one", file, line);
      }
      reject_duplicate_keys(it->second, file);
    }
  } else if (node.IsSequence()) {
    for (const auto& item : node) reject_duplicate_keys(item, file);
  }
}

YAML::Node parse_file(const std::string& file) {
  // A regular file of at most 64 MiB (not a folder, /dev/zero or a pipe), in UTF-8: every
  // string read from it may end up in JSON, CSV and HTML outputs.
  const std::string text = files::read_input_file(file, "YAML file");
  files::check_utf8(text, file);
  try {
    YAML::Node root = YAML::Load(text);
    if (!root.IsMap()) {
      throw InputError("expected a YAML mapping at the top level, got " + node_kind(root), "", file,
                       1);
    }
    reject_duplicate_keys(root, file);
    return root;
  } catch (const YAML::ParserException& e) {
    throw InputError("YAML syntax error: " + e.msg, "check indentation and quoting", file,
                     e.mark.line + 1);
  }
}

// Splits "a.b.c=value" into the path and the value; InputError when malformed.
std::pair<std::vector<std::string>, std::string> split_override(const std::string& o) {
  const auto eq = o.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError("malformed override '" + o + "'", "write --set key.path=value", "--set");
  }
  std::vector<std::string> keys;
  std::string path = o.substr(0, eq);
  size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    keys.push_back(path.substr(start, dot - start));
    if (keys.back().empty()) {
      throw InputError("empty key in override '" + o + "'", "write --set key.path=value", "--set");
    }
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return {keys, o.substr(eq + 1)};
}

}  // namespace

Map load_file(const std::string& file) { return load_file_with_overrides(file, {}); }

Map load_file_with_overrides(const std::string& file, const std::vector<std::string>& overrides) {
  YAML::Node root = parse_file(file);
  auto source = std::make_shared<Source>();
  source->file = file;
  for (const auto& o : overrides) {
    files::check_utf8(o, "--set " + o.substr(0, o.find('=')), 0);
    auto [keys, value] = split_override(o);
    std::string dotted;
    for (const auto& k : keys) dotted += (dotted.empty() ? "" : ".") + k;
    YAML::Node parsed;
    try {
      parsed = YAML::Load(value);
    } catch (const YAML::ParserException& e) {
      throw InputError("cannot parse value '" + value + "': " + e.msg, "quote it",
                       "--set " + dotted);
    }
    // Walk down, creating mappings as needed. YAML::Node is a handle: assigning through a
    // copy modifies the tree. A key `name[i]` is item i of the list `name` (as errors name
    // it, e.g. fleet.regions[0].pools[1].replicas).
    auto item = [&](YAML::Node list, const std::string& name, const std::string& k) {
      const size_t open = k.find('[');
      const std::string digits = k.substr(open + 1, k.size() - open - 2);
      if (k.back() != ']' || digits.empty() ||
          digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9)
        throw InputError("malformed list index in '" + k + "'",
                         "write name[i] with i from 0, e.g. fleet.regions[0].pools[1].replicas=8",
                         "--set " + dotted);
      if (!list || !list.IsSequence())
        throw InputError("'" + name + "' is " + (list ? node_kind(list) : std::string("absent")) +
                             ", not a list",
                         "index only a list", "--set " + dotted);
      const size_t i = std::stoul(digits);
      if (i >= list.size())
        throw InputError("'" + name + "' has " + std::to_string(list.size()) +
                             " items; there is no [" + digits + "]",
                         "index from 0 to " + std::to_string(list.size() - 1), "--set " + dotted);
      return i;
    };
    YAML::Node cur = root;
    for (size_t i = 0; i + 1 < keys.size(); ++i) {
      const std::string& k = keys[i];
      const size_t open = k.find('[');
      YAML::Node next;
      if (open != std::string::npos) {
        const std::string name = k.substr(0, open);
        YAML::Node list = cur[name];
        next = list[item(list, name, k)];
      } else {
        next = cur[k];
        if (!next || next.IsNull()) {
          cur[k] = YAML::Node(YAML::NodeType::Map);
          next = cur[k];
        }
      }
      if (!next.IsMap()) {
        throw InputError("'" + k + "' is " + node_kind(next) + ", not a section",
                         "override a field inside a section", "--set " + dotted);
      }
      cur.reset(next);
    }
    const YAML::Node leaf = parsed.IsNull() ? YAML::Node(value) : parsed;
    const std::string& last = keys.back();
    if (const size_t open = last.find('['); open != std::string::npos) {
      const std::string name = last.substr(0, open);
      YAML::Node list = cur[name];
      list[item(list, name, last)] = leaf;
    } else {
      cur[last] = leaf;
    }
    source->overridden.insert(dotted);
  }
  return Map(root, source, "");
}

}  // namespace fleetsim::yaml
