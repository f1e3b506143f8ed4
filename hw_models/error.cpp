#include "hw_models/error.h"

#include <algorithm>

namespace fleetsim {

InputError::InputError(std::string message, std::string hint, std::string file, int line,
                       std::string field)
    : std::runtime_error(format(message, hint, file, line, field)),
      message_(std::move(message)),
      hint_(std::move(hint)),
      file_(std::move(file)),
      line_(line),
      field_(std::move(field)) {}

InputError InputError::located(const std::string& file, int line, const std::string& field) const {
  return InputError(message_, hint_, file_.empty() ? file : file_, line_ == 0 ? line : line_,
                    field_.empty() ? field : field_);
}

std::string InputError::format(const std::string& message, const std::string& hint,
                               const std::string& file, int line, const std::string& field) {
  // file:line: field: message (hint: ...)  — the shape compilers use, so editors can jump to it.
  std::string out;
  if (!file.empty()) {
    out += file;
    // Two appends rather than ":" + to_string(line): GCC 12 -O2 reports a false -Wrestrict
    // on the temporary (GCC bug 105329).
    if (line > 0) {
      out += ':';
      out += std::to_string(line);
    }
    out += ": ";
  }
  if (!field.empty()) out += "'" + field + "': ";
  out += message;
  if (!hint.empty()) out += " (hint: " + hint + ")";
  return out;
}

namespace {
size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}
}  // namespace

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_d = std::max<size_t>(2, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(const std::string& word, const std::vector<std::string>& candidates) {
  std::string m = closest_match(word, candidates);
  return m.empty() ? std::string() : " (did you mean '" + m + "'?)";
}

}  // namespace fleetsim
