// Strict, located reading of YAML mappings (scenario and catalog files).
//
// A Map remembers its file and dotted key path. Every accessor registers the key it asks
// for, so `finish()` can reject any key nobody asked for, with "did you mean". Every error
// is an InputError naming file, line, field, what was expected and a hint.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hw_models/error.h"
#include "hw_models/units.h"

namespace fleetsim::yaml {

/// Where a document came from; shared by all Maps of one document.
struct Source {
  std::string file;                 ///< path as the user gave it
  std::set<std::string> overridden; ///< dotted paths set from the command line (--set)
};

class Map {
 public:
  Map(YAML::Node node, std::shared_ptr<const Source> source, std::string path);

  bool has(const std::string& key);

  std::string str(const std::string& key);
  std::string str_or(const std::string& key, const std::string& fallback);
  /// One of `allowed`; an unknown value is an error with "did you mean" and the list.
  std::string choice(const std::string& key, const std::vector<std::string>& allowed);
  std::string choice_or(const std::string& key, const std::vector<std::string>& allowed,
                        const std::string& fallback);

  /// A dimensioned value in SI units ("2s" -> 2.0). Bare numbers are rejected with a hint.
  double quantity(const std::string& key, units::Dim dim, double min_si = 0.0);
  double quantity_or(const std::string& key, units::Dim dim, double fallback, double min_si = 0.0);

  /// A dimensionless number in [min, max].
  double number(const std::string& key, double min, double max);
  double number_or(const std::string& key, double min, double max, double fallback);
  /// An integer in [min, max].
  int64_t integer(const std::string& key, int64_t min, int64_t max);
  int64_t integer_or(const std::string& key, int64_t min, int64_t max, int64_t fallback);
  bool boolean_or(const std::string& key, bool fallback);

  /// A nested mapping (an error if the key is missing or not a mapping).
  Map map(const std::string& key);
  std::optional<Map> map_opt(const std::string& key);
  /// A list of strings (a scalar is accepted as a list of one).
  std::vector<std::string> str_list_or(const std::string& key, std::vector<std::string> fallback);

  /// Rejects keys that no accessor asked for. Call after reading everything.
  void finish() const;

  /// Throws an InputError located at `key` (or at the map itself when key is empty).
  [[noreturn]] void fail(const std::string& key, const std::string& message,
                         const std::string& hint = {}) const;

  /// `e` located at `key` of this map (file or --set, line, dotted field), for errors found
  /// by code that did not read the value itself (catalog look-ups, unit parsing).
  InputError locate(const std::string& key, const InputError& e) const;

  const std::string& path() const { return path_; }
  const std::string& file() const { return source_->file; }
  int line_of(const std::string& key) const;
  const YAML::Node& node() const { return node_; }

 private:
  YAML::Node scalar(const std::string& key);
  std::string field(const std::string& key) const;
  std::string file_of(const std::string& key) const;

  YAML::Node node_;
  std::shared_ptr<const Source> source_;
  std::string path_;
  std::set<std::string> known_;
};

/// Parses a YAML file into its root mapping. A missing file or a syntax error is an
/// InputError with the line.
Map load_file(const std::string& file);

/// Applies "key.path=value" overrides to a loaded document (value parsed as YAML, so
/// "true", "12" and "[a, b]" work) and returns the root Map with them recorded, so errors in
/// an overridden value point at --set. Unknown intermediate keys are created; the strict
/// reader then rejects them with "did you mean".
Map load_file_with_overrides(const std::string& file, const std::vector<std::string>& overrides);

/// The YAML document as JSON-compatible text is not needed here; see reports for that.

}  // namespace fleetsim::yaml
