// Files the user gives and files fleetsim writes: one place that checks both.
//
// Inputs: every path is checked for existence and kind (a regular file where a file is
// expected, a folder where a folder is), files are size-capped (so /dev/zero or an endless
// pipe cannot hang or exhaust memory), text must be UTF-8, and each input file is
// remembered so that no output may replace it.
//
// Outputs: AtomicFile writes to a temporary name in the target's folder and renames it into
// place only when everything was written, flushed and closed without error; until then the
// temporary is registered so that a SIGINT/SIGTERM handler can remove it (async-signal-safe).
// A target that exists and is not a regular file (/dev/null, /dev/full, a pipe) is written in
// place, still with every write checked.
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <string>

#include "hw_models/error.h"

namespace fleetsim::files {

/// Largest input file read into memory (scenario, catalog, calibration, checkpoint): 64 MiB.
constexpr std::uintmax_t kMaxTextBytes = 64ull << 20;
/// Largest trace file: 4 GiB (traces are read line by line).
constexpr std::uintmax_t kMaxTraceBytes = 4ull << 30;

/// Throws an InputError (file `path`, `what` naming the role: "scenario file", "trace") unless
/// `path` is an existing regular file of at most `max_bytes`; remembers it as an input.
void check_input_file(const std::string& path, const std::string& what,
                      std::uintmax_t max_bytes = kMaxTextBytes);
/// Throws an InputError unless `path` is an existing folder (`what`: "catalog folder").
void check_input_dir(const std::string& path, const std::string& what, const std::string& hint);

/// check_input_file, then the whole file as bytes.
std::string read_input_file(const std::string& path, const std::string& what,
                            std::uintmax_t max_bytes = kMaxTextBytes);

/// Throws an InputError at `file`:line (column and byte in the message) on the first byte
/// sequence of `text` that is not UTF-8. `field`: the field it belongs to, or "".
void check_utf8(const std::string& text, const std::string& file, int first_line = 1,
                const std::string& field = {});
/// Where `text` stops being UTF-8 (its byte offset), or npos when it is valid.
std::size_t invalid_utf8_at(const std::string& text);
/// `text` with every byte that is not part of a UTF-8 sequence replaced by U+FFFD.
std::string to_valid_utf8(const std::string& text);

/// Throws an InputError when `path` (an output) is, or would replace, a file read as input.
void check_not_input(const std::string& path);
/// Records a file read as input (done by check_input_file; for readers that open files
/// themselves).
void note_input(const std::string& path);
/// Forgets every recorded input (tests and fuzzers that load many unrelated files).
void clear_inputs();

/// A file written under a temporary name and renamed into place by commit().
class AtomicFile {
 public:
  /// Opens the temporary (InputError naming `path` when that fails or `path` is an input).
  /// `binary`: no newline translation. `may_replace_input`: for the few commands whose job is
  /// to rewrite an input (calibrate fit --write).
  explicit AtomicFile(std::string path, bool binary = false, bool may_replace_input = false);
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  std::ostream& stream() { return out_; }
  template <class T>
  AtomicFile& operator<<(const T& v) {
    out_ << v;
    return *this;
  }
  /// Throws an InputError naming the file if a write has failed so far (for long streams).
  void check();
  /// Flushes, closes and renames into place; InputError naming the file on any failure (the
  /// temporary is then removed).
  void commit();
  const std::string& path() const { return path_; }
  bool committed() const { return committed_; }

 private:
  void discard();
  std::string path_, temp_;
  std::ofstream out_;
  int slot_ = -1;
  bool committed_ = false;
};

/// AtomicFile(path) << contents, committed.
void write_file_atomically(const std::string& path, const std::string& contents,
                           bool binary = false);

/// Removes every temporary file still registered (async-signal-safe: unlink only); returns
/// how many it removed. For signal handlers.
int remove_temporaries_signal_safe();

}  // namespace fleetsim::files
