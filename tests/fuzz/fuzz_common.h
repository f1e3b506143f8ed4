// Shared by the libFuzzer targets: the contract every reader is held to. A fuzzed input may
// load, or be refused with an InputError (a located message for the user); anything else —
// another exception, a crash, a sanitizer report — is a bug, and the target aborts so that
// libFuzzer keeps the input.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <string>

#include "hw_models/error.h"
#include "hw_models/files.h"

namespace fleetsim::fuzz {

/// A file in this process's own temporary folder (created once).
inline std::string temp_file(const std::string& name) {
  static const std::filesystem::path dir = [] {
    const auto d =
        std::filesystem::temp_directory_path() / ("fleetsim-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d;
  }();
  return (dir / name).string();
}

inline std::string write_temp(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = temp_file(name);
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

/// Runs `fn`; InputError is the expected way to refuse an input, anything else aborts.
template <class Fn>
void expect_input_errors_only(Fn&& fn) {
  try {
    fn();
  } catch (const InputError&) {
    // Refused with a located message: the contract holds.
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fuzz: not an InputError: %s\n", e.what());
    std::abort();
  } catch (...) {
    std::fprintf(stderr, "fuzz: a non-std exception escaped\n");
    std::abort();
  }
  files::clear_inputs();
}

}  // namespace fleetsim::fuzz
