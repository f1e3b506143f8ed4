// Counter-based random inputs, identical on host and device.
//
// Every input tensor element is a pure function of (seed, flat index), so the CPU can
// regenerate any slice of a device tensor for a reference check without copying it back,
// and a fresh seed gives fresh inputs. The values are exact: a bf16 value is
// (v / 256) * scale with v an integer in [-255, 255] and scale a power of two, which has at
// most 8 significant bits and so is representable in bf16 and float without rounding; no
// conversion on either side can differ. FP8 (e4m3) values are produced as bit patterns.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define FK_HD __host__ __device__ __forceinline__
#else
#define FK_HD inline
#endif

namespace fleetsim::kernels {

/// SplitMix64 finaliser (Steele, Lea, Flood 2014).
FK_HD std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

FK_HD std::uint64_t hash2(std::uint64_t seed, std::uint64_t index) {
  return mix64(seed ^ mix64(index));
}

/// Uniform-ish value in [-255/256, 255/256] * scale; `scale` must be a power of two.
/// Exactly representable in bf16.
FK_HD float rand_bf16_exact(std::uint64_t seed, std::uint64_t index, float scale) {
  const int v = static_cast<int>(hash2(seed, index) % 511u) - 255;
  return static_cast<float>(v) * 0.00390625f * scale;
}

/// An FP8 e4m3 bit pattern with a normal value of magnitude in [0.125, 3.75]:
/// sign random, exponent field 4..8 (2^-3 .. 2^1), mantissa random.
FK_HD std::uint8_t rand_fp8_e4m3_bits(std::uint64_t seed, std::uint64_t index) {
  const std::uint64_t h = hash2(seed, index);
  const unsigned sign = static_cast<unsigned>(h & 1u) << 7;
  const unsigned exp = 4u + static_cast<unsigned>((h >> 1) % 5u);
  const unsigned man = static_cast<unsigned>((h >> 8) & 7u);
  return static_cast<std::uint8_t>(sign | (exp << 3) | man);
}

}  // namespace fleetsim::kernels
