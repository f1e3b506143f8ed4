// A plain binary encoding for moving results between processes of one job (MPI ranks
// running partitions of one fleet run): fixed-size values as their bytes, strings and
// vectors with a 64-bit length in front. Both ends run the same binary on the same kind of
// machine, so there is no versioning or byte-order conversion; a reader that runs past the
// end, or finds bytes left over, throws (a damaged or mismatched message is an error, never
// a silently wrong result).
#pragma once

#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

namespace fleetsim::core {

class ByteWriter {
 public:
  template <class T>
  void put(const T& v) {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>, "put() takes numbers");
    const auto* p = reinterpret_cast<const char*>(&v);
    out_.append(p, sizeof v);
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    out_.append(s);
  }
  /// A vector of numbers, length first.
  template <class T>
  void put_vector(const std::vector<T>& v) {
    static_assert(std::is_arithmetic_v<T>, "put_vector() takes numbers");
    put<uint64_t>(v.size());
    out_.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  /// The bytes written so far (the writer is left empty).
  std::string take() { return std::move(out_); }

 private:
  std::string out_;
};

class ByteReader {
 public:
  /// `what` names the message in errors ("partition 2 of the fleet run").
  ByteReader(const std::string& in, std::string what) : in_(in), what_(std::move(what)) {}
  template <class T>
  T get() {
    static_assert(std::is_arithmetic_v<T> || std::is_enum_v<T>, "get() takes numbers");
    T v;
    std::memcpy(&v, take(sizeof v), sizeof v);
    return v;
  }
  std::string get_string() {
    const auto n = length(1);
    return std::string(take(n), n);
  }
  template <class T>
  std::vector<T> get_vector() {
    static_assert(std::is_arithmetic_v<T>, "get_vector() takes numbers");
    const auto n = length(sizeof(T));
    std::vector<T> v(n);
    if (n > 0) std::memcpy(v.data(), take(n * sizeof(T)), n * sizeof(T));
    return v;
  }
  /// A count of items of at least `min_item_bytes` each: no more than the bytes left hold
  /// (a damaged length fails here, not in a huge allocation).
  size_t length(size_t min_item_bytes) {
    const auto n = get<uint64_t>();
    if (min_item_bytes > 0 && n > (in_.size() - pos_) / min_item_bytes) fail();
    return static_cast<size_t>(n);
  }
  /// Throws unless every byte was read.
  void expect_end() const {
    if (pos_ != in_.size()) fail();
  }

 private:
  const char* take(size_t n) {
    if (n > in_.size() - pos_) fail();
    const char* p = in_.data() + pos_;
    pos_ += n;
    return p;
  }
  [[noreturn]] void fail() const {
    throw std::runtime_error("damaged " + what_ + ": " + std::to_string(in_.size()) +
                             " bytes, read up to byte " + std::to_string(pos_));
  }

  const std::string& in_;
  std::string what_;
  size_t pos_ = 0;
};

}  // namespace fleetsim::core
