#include "hw_models/yaml_reader.h"

#include <cmath>
#include <fstream>
#include <map>
#include <sstream>

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
