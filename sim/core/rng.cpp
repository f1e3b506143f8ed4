#include "sim/core/rng.h"

#include <cmath>
#include <stdexcept>

namespace fleetsim {

namespace {

// 128-bit product for Lemire's method (a GCC/Clang extension; __extension__ keeps
// -Wpedantic quiet).
__extension__ typedef unsigned __int128 u128;

constexpr uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

// splitmix64 (Steele, Lea, Flood 2014): advances `state` by the golden-ratio increment
// and returns a well-mixed 64-bit value. Used to expand one seed into xoshiro's 256 bits
// (xoshiro must not start from an all-zero state; splitmix64 never yields four zeros).
uint64_t splitmix64_next(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// One splitmix64 step from `x`, as a pure function.
uint64_t splitmix64(uint64_t x) { return splitmix64_next(x); }

// FNV-1a, 64-bit: offset basis 14695981039346656037, prime 1099511628211.
uint64_t fnv1a64(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

}  // namespace

Rng::Rng(uint64_t seed) {
  uint64_t state = seed;
  for (auto& w : s_) w = splitmix64_next(state);
}

// xoshiro256** 1.0 (Blackman & Vigna 2018): output = rotl(s1·5, 7)·9.
uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

// The top 53 bits k give k·2^-53 ∈ {0, 2^-53, ..., 1 - 2^-53}: every double is exact.
double Rng::uniform01() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }

// (k + 1)·2^-53 ∈ {2^-53, ..., 1}: never 0, so log() is finite.
double Rng::uniform01_open_low() {
  return static_cast<double>((next_u64() >> 11) + 1) * 0x1.0p-53;
}

// Lemire, "Fast random integer generation in an interval" (2019): the high word of x·n is
// uniform on [0, n) once the low words below 2^64 mod n (a biased sliver) are rejected.
uint64_t Rng::uniform_u64(uint64_t n) {
  if (n == 0) throw std::invalid_argument("Rng::uniform_u64: n must be > 0");
  u128 m = static_cast<u128>(next_u64()) * n;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < n) {
    const uint64_t threshold = (0 - n) % n;  // 2^64 mod n
    while (low < threshold) {
      m = static_cast<u128>(next_u64()) * n;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

// Marsaglia polar: (u, v) uniform in the unit disc, s = u² + v²; then u·f and v·f with
// f = sqrt(-2 ln s / s) are two independent standard normals. The second is kept.
double Rng::normal() {
  if (has_spare_) {
    has_spare_ = false;
    return spare_normal_;
  }
  double u, v, s;
  do {
    u = 2.0 * uniform01() - 1.0;
    v = 2.0 * uniform01() - 1.0;
    s = u * u + v * v;
  } while (s >= 1.0 || s == 0.0);
  const double f = std::sqrt(-2.0 * std::log(s) / s);
  spare_normal_ = v * f;
  has_spare_ = true;
  return u * f;
}

// Inverse CDF: X = -mean·ln U with U ∈ (0, 1].
double Rng::exponential(double mean) { return -mean * std::log(uniform01_open_low()); }

// Marsaglia & Tsang, "A simple method for generating gamma variables" (2000), for k ≥ 1:
// d = k - 1/3, c = 1/sqrt(9d); draw x ~ N(0,1), v = (1 + c·x)³ (v > 0), U ~ U(0,1);
// accept d·v when U < 1 - 0.0331·x⁴ (squeeze) or ln U < x²/2 + d·(1 - v + ln v).
// For k < 1: Gamma(k) = Gamma(k + 1)·U^(1/k).
double Rng::gamma(double shape, double scale) {
  if (!(shape > 0) || !(scale > 0))
    throw std::invalid_argument("Rng::gamma: shape and scale must be > 0");
  if (shape < 1.0) {
    const double g = gamma(shape + 1.0, 1.0);
    return g * std::pow(uniform01_open_low(), 1.0 / shape) * scale;
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = uniform01_open_low();
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) return d * v * scale;
    if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) return d * v * scale;
  }
}

Rng RngStreams::stream(std::string_view component) const {
  return Rng(splitmix64(seed_ ^ fnv1a64(component)));
}

double unit_hash(uint64_t key, uint64_t salt) {
  return static_cast<double>(splitmix64(splitmix64(key) ^ salt) >> 11) * 0x1.0p-53;
}

}  // namespace fleetsim
