#include "hw_models/files.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <sstream>

namespace fleetsim::files {

namespace fs = std::filesystem;

namespace {

std::string mib(std::uintmax_t bytes) {
  char b[32];
  std::snprintf(b, sizeof b, "%.0f MiB", static_cast<double>(bytes) / (1 << 20));
  return b;
}

std::mutex g_inputs_mutex;
std::set<std::string>& inputs() {
  static std::set<std::string> s;
  return s;
}

// Temporaries being written, for the signal handler: a fixed table (no allocation in the
// handler). state: 0 free, 1 being filled or emptied, 2 holds a path to remove.
constexpr int kSlots = 64;
constexpr std::size_t kPathMax = 4096;
struct Slot {
  std::atomic<int> state{0};
  char path[kPathMax];
};
Slot g_slots[kSlots];
std::atomic<unsigned> g_counter{0};

int register_temp(const std::string& path) {
  if (path.size() >= kPathMax) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (g_slots[i].state.compare_exchange_strong(expected, 1)) {
      std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
      g_slots[i].state.store(2);
      return i;
    }
  }
  return -1;  // more than 64 files at once: this one is not removed on a signal
}

void unregister_temp(int slot) {
  if (slot >= 0) g_slots[slot].state.store(0);
}

std::string errno_text(int e) { return std::strerror(e); }

}  // namespace

void note_input(const std::string& path) {
  std::error_code ec;
  const fs::path canon = fs::weakly_canonical(path, ec);
  const std::lock_guard<std::mutex> lock(g_inputs_mutex);
  inputs().insert(ec ? path : canon.string());
}

void clear_inputs() {
  const std::lock_guard<std::mutex> lock(g_inputs_mutex);
  inputs().clear();
}

void check_not_input(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return;  // a file that does not exist was not read
  std::set<std::string> copy;
  {
    const std::lock_guard<std::mutex> lock(g_inputs_mutex);
    copy = inputs();
  }
  for (const auto& in : copy) {
    std::error_code e2;
    if (fs::equivalent(path, in, e2))
      throw InputError("this output would replace an input file (" + in + ")",
                       "write outputs to another path; fleetsim never overwrites what it reads",
                       path);
  }
}

void check_input_file(const std::string& path, const std::string& what, std::uintmax_t max_bytes) {
  if (path.empty()) throw InputError("empty path for the " + what, "give a file name");
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st))
    throw InputError("cannot open the " + what + ": no such file",
                     "check the path (relative paths are relative to the current directory)", path);
  if (fs::is_directory(st))
    throw InputError("cannot open the " + what + ": it is a folder, not a file",
                     "name a file in it", path);
  if (!fs::is_regular_file(st))
    throw InputError(
        "cannot open the " + what + ": it is not a regular file (a device, pipe or socket)",
        "copy the data into a file and name that file", path);
  const std::uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > max_bytes)
    throw InputError(what + " is " + mib(size) + ", larger than the limit of " + mib(max_bytes),
                     "is this the right file? split it, or sample it", path);
  note_input(path);
}

void check_input_dir(const std::string& path, const std::string& what, const std::string& hint) {
  if (path.empty()) throw InputError("empty path for the " + what, hint);
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st)) throw InputError(what + " not found", hint, path);
  if (!fs::is_directory(st)) throw InputError("is not a folder, expected a " + what, hint, path);
}

std::string read_input_file(const std::string& path, const std::string& what,
                            std::uintmax_t max_bytes) {
  check_input_file(path, what, max_bytes);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError("cannot open the " + what + ": " + errno_text(errno), "", path);
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) throw InputError("cannot read the " + what, "", path);
  std::string text = buf.str();
  // The size was checked before reading; a file that grows while being read is cut here.
  if (text.size() > max_bytes)
    throw InputError(what + " is larger than the limit of " + mib(max_bytes), "", path);
  return text;
}

namespace {

// Length of the UTF-8 sequence at text[i] (1-4), or 0 when it is not valid UTF-8 (stray
// continuation byte, overlong form, surrogate, beyond U+10FFFF or cut short).
std::size_t utf8_sequence(const std::string& text, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char c = b(i);
  if (c < 0x80) return 1;
  std::size_t n;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return 0;
  }
  if (i + n > text.size()) return 0;
  if (b(i + 1) < lo || b(i + 1) > hi) return 0;
  for (std::size_t k = 2; k < n; ++k)
    if (b(i + k) < 0x80 || b(i + k) > 0xBF) return 0;
  return n;
}

}  // namespace

std::size_t invalid_utf8_at(const std::string& text) {
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) return i;
    i += n;
  }
  return std::string::npos;
}

std::string to_valid_utf8(const std::string& text) {
  if (invalid_utf8_at(text) == std::string::npos) return text;
  std::string out;
  out.reserve(text.size() + 8);
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(text, i, n);
      i += n;
    }
  }
  return out;
}

void check_utf8(const std::string& text, const std::string& file, int first_line,
                const std::string& field) {
  const std::size_t at = invalid_utf8_at(text);
  if (at == std::string::npos) return;
  int line = first_line;
  std::size_t line_start = 0;
  for (std::size_t i = 0; i < at; ++i)
    if (text[i] == '\n') {
      ++line;
      line_start = i + 1;
    }
  char msg[96];
  std::snprintf(msg, sizeof msg, "not valid UTF-8 (byte 0x%02X at column %zu)",
                static_cast<unsigned>(static_cast<unsigned char>(text[at])), at - line_start + 1);
  throw InputError(msg, "save the file as UTF-8", file, line, field);
}

AtomicFile::AtomicFile(std::string path, bool binary, bool may_replace_input)
    : path_(std::move(path)) {
  if (path_.empty()) throw InputError("empty output path", "give a file name");
  if (!may_replace_input) check_not_input(path_);
  std::error_code ec;
  const fs::file_status st = fs::status(path_, ec);
  if (fs::is_directory(st))
    throw InputError("is a folder, expected a file to write", "name a file", path_);
  const auto mode = std::ios::out | std::ios::trunc | (binary ? std::ios::binary : std::ios::out);
  if (fs::exists(st) && !fs::is_regular_file(st)) {
    // A device or a pipe (/dev/null, /dev/stdout): written in place, every write checked.
    out_.open(path_, mode);
  } else {
    const fs::path p(path_);
    std::string name = "." + p.filename().string() + ".tmp-";
    name += std::to_string(::getpid());
    name += '-';
    name += std::to_string(g_counter.fetch_add(1));
    temp_ = (p.parent_path() / name).string();
    slot_ = register_temp(temp_);
    out_.open(temp_, mode);
  }
  if (!out_) {
    const int e = errno;
    discard();
    throw InputError("cannot write file: " + errno_text(e),
                     "check that the folder exists and is writable", path_);
  }
}

AtomicFile::~AtomicFile() {
  if (!committed_) discard();
}

void AtomicFile::discard() {
  if (out_.is_open()) out_.close();
  if (!temp_.empty()) {
    std::remove(temp_.c_str());
    unregister_temp(slot_);
    slot_ = -1;
    temp_.clear();
  }
}

void AtomicFile::check() {
  if (!out_) {
    const int e = errno;
    discard();
    throw InputError("cannot write file: " + (e ? errno_text(e) : std::string("write failed")),
                     "check the free space and permissions of the folder", path_);
  }
}

void AtomicFile::commit() {
  if (committed_) return;
  errno = 0;
  out_.flush();
  check();
  out_.close();
  check();
  if (!temp_.empty() && std::rename(temp_.c_str(), path_.c_str()) != 0) {
    const int e = errno;
    discard();
    throw InputError("cannot write file: " + errno_text(e), "check that the folder is writable",
                     path_);
  }
  unregister_temp(slot_);
  slot_ = -1;
  temp_.clear();
  committed_ = true;
}

void write_file_atomically(const std::string& path, const std::string& contents, bool binary) {
  AtomicFile f(path, binary);
  f.stream().write(contents.data(), static_cast<std::streamsize>(contents.size()));
  f.commit();
}

int remove_temporaries_signal_safe() {
  int n = 0;
  for (auto& s : g_slots)
    if (s.state.load() == 2 && ::unlink(s.path) == 0) ++n;
  return n;
}

}  // namespace fleetsim::files
