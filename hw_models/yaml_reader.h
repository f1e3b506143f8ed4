// Strict, located reading of YAML mappings (scenario and catalog files).
//
// A Map remembers its file and dotted key path. Every accessor registers the key it asks
// for, so `finish()` can reject any key nobody asked for, with "did you mean". Every error
// is an InputError naming file, line, field, what was expected and a hint.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hw_models/error.h"
#include "hw_models/units.h"

namespace fleetsim::yaml {

/// One declared parameter of a schema: its dotted path, type, unit, range, default and help.
/// A schema is a table of these (the scenario's: sim/scenario/schema.h); the Map accessors
/// that take a Key read its range and default from it, and their errors name them.
struct Key {
  enum class Type {
    kInt,           ///< a whole number in [min, max]
    kNumber,        ///< a plain number in [min, max]
    kQuantity,      ///< a number with a unit of `dim`, in SI units in [min, max]
    kString,        ///< any scalar (an id, a name, a path)
    kChoice,        ///< one of `choices`
    kBool,          ///< true/yes/on or false/no/off
    kMap,           ///< a mapping (its fields are keys of their own, unless `open`)
    kList,          ///< a list (of mappings: its items' fields are keys under "path[]")
    kDistribution,  ///< a number or a distribution mapping (scenarios/README.md#distributions)
    kPercentiles,   ///< a time bound, or a mapping of percentiles to time bounds (slo)
  };
  /// Dotted path from the document's root; an item of a list is "name[]"
  /// (e.g. "fleet.regions[].pools[].replicas").
  std::string path;
  Type type = Type::kString;
  units::Dim dim = units::Dim::kTime;  ///< kQuantity only
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  std::vector<std::string> choices;  ///< kChoice only
  /// The default as a scenario would write it ("16", "1GiB", "round-robin"); empty when the
  /// key is required, has no default, or its default depends on other fields (`default_doc`).
  std::string fallback;
  /// The default in words where it is not a fixed value ("the engine's"), or "" to show
  /// `fallback` (or "required" / "none").
  std::string default_doc;
  bool required = false;
  /// The fields under this mapping are free (names of regions, GPUs, percentiles) or are
  /// declared elsewhere (a pool's hardware overrides are `hardware` keys).
  bool open = false;
  /// A mapping whose fields are those of another declared mapping ("hardware" for a pool's
  /// hardware overrides); "" for none.
  std::string same_as;
  std::string help;  ///< one line: what it means

  /// The last component of `path`: the field name inside its mapping.
  std::string name() const;
  /// "integer", "number", "time", "bytes", "choice", ... (the unit dimension for quantities).
  std::string type_name() const;
  /// The range as text ("1 … 1024", "≥ 0", "0.05 … 1", "≥ 1s"), or "" when unbounded.
  std::string range_text() const;
  /// The default as the reference shows it.
  std::string default_text() const;
  /// "serving.max_num_seqs: integer, 1 … 65536, default 256: ..." for error hints.
  std::string summary() const;
};

/// `dotted` with every list index replaced by "[]" ("fleet.regions[2].name" ->
/// "fleet.regions[].name"), as Key paths write it.
std::string generic_path(const std::string& dotted);

/// A test aid: while one is alive, every field asked of any Map on this thread is recorded as
/// (file, generic dotted path), so a test can check that every key a parser reads is declared.
class ReadLog {
 public:
  ReadLog();
  ~ReadLog();
  ReadLog(const ReadLog&) = delete;
  ReadLog& operator=(const ReadLog&) = delete;
  const std::set<std::pair<std::string, std::string>>& reads() const { return reads_; }
  void record(const std::string& file, const std::string& path) { reads_.emplace(file, path); }
  /// Reads through a declaration: (generic path read, declared path used).
  const std::set<std::pair<std::string, std::string>>& declared_reads() const { return declared_; }
  void record_declared(const std::string& path, const std::string& key) {
    declared_.emplace(path, key);
  }

 private:
  std::set<std::pair<std::string, std::string>> reads_, declared_;
  ReadLog* previous_;
};

/// Where a document came from; shared by all Maps of one document.
struct Source {
  std::string file;                  ///< path as the user gave it
  std::set<std::string> overridden;  ///< dotted paths set from the command line (--set)
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

  /// Declared reads: the field is `k.name()`, which must be the end of this map's path plus
  /// that name (a read through the wrong declaration is an internal error, std::logic_error).
  /// The range and the error hints come from `k`; the one-argument `_or` forms take the
  /// declared default (an internal error when `k` has none), the others the caller's, for
  /// defaults that depend on other fields. Errors the plain accessors give without a hint
  /// get `k.summary()` as their hint.
  bool has(const Key& k);
  std::string str(const Key& k);
  std::string str_or(const Key& k);
  std::string str_or(const Key& k, const std::string& fallback);
  std::string choice(const Key& k);
  std::string choice_or(const Key& k);
  std::string choice_or(const Key& k, const std::string& fallback);
  double quantity(const Key& k);
  double quantity_or(const Key& k);
  double quantity_or(const Key& k, double fallback);
  double number(const Key& k);
  double number_or(const Key& k);
  double number_or(const Key& k, double fallback);
  int64_t integer(const Key& k);
  int64_t integer_or(const Key& k);
  int64_t integer_or(const Key& k, int64_t fallback);
  bool boolean_or(const Key& k);
  bool boolean_or(const Key& k, bool fallback);
  Map map(const Key& k);
  std::optional<Map> map_opt(const Key& k);
  std::vector<std::string> str_list_or(const Key& k, std::vector<std::string> fallback);

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
  /// The field name of `k`, after checking that `k` declares a field of this map.
  std::string declared(const Key& k) const;
  /// Runs `read`, adding `k.summary()` as the hint of an InputError that has none.
  template <typename F>
  auto with_hint(const Key& k, F read) -> decltype(read());

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
