// Errors about user input (scenario files, catalog files, traces, command-line overrides).
//
// Every error a user can cause is an InputError: it names the file, the line, the field,
// what was expected and a hint, and the command-line tool prints it as one line and exits
// non-zero. Code that finds a problem but does not know the file/line (e.g. the unit
// parser) throws InputError with only `message`/`hint`; the caller that knows where the
// value came from rethrows it with `located(...)`.
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace fleetsim {

class InputError : public std::runtime_error {
 public:
  /// `file` may be empty (e.g. a --set override), `line` is 1-based and 0 when unknown,
  /// `field` is a dotted key path such as "workload.arrival.rate".
  InputError(std::string message, std::string hint = {}, std::string file = {}, int line = 0,
             std::string field = {});

  const std::string& message() const { return message_; }
  const std::string& hint() const { return hint_; }
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  const std::string& field() const { return field_; }

  /// A copy with the location filled in where this error has none yet.
  InputError located(const std::string& file, int line, const std::string& field) const;

 private:
  static std::string format(const std::string& message, const std::string& hint,
                            const std::string& file, int line, const std::string& field);
  std::string message_, hint_, file_;
  int line_;
  std::string field_;
};

/// The candidate closest to `word` by edit distance, or "" when none is close enough to be a
/// plausible typo (distance > max(2, |word|/3)).
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" or "" — for appending to error messages.
std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace fleetsim
