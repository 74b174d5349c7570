// fp16 and bf16 <-> float on the bits, branch-free so that the reduction loops over
// them vectorise (reduce_cpu.cpp; reduce_cpu.hpp states the rounding and NaN rules).
// Only the kernels' translation unit includes this header.
#pragma once

#include <bit>
#include <cstdint>

namespace blink::runtime::kernels {

// c ? a : b without a branch. Written as ?:, GCC turns a chain of selects into nested
// branches and sinks the float operations of the fp16 conversions into them; under
// -ftrapping-math (the default) it then may not execute them unconditionally again,
// so if-conversion, and with it vectorisation, fails.
[[gnu::always_inline]] inline std::uint32_t blend(bool c, std::uint32_t a, std::uint32_t b) {
  const std::uint32_t mask = 0u - static_cast<std::uint32_t>(c);
  return (a & mask) | (b & ~mask);
}

[[gnu::always_inline]] inline float halfBitsToFloat(std::uint16_t h) {
  const std::uint32_t hv = h;
  const std::uint32_t sign = (hv & 0x8000u) << 16;
  const std::uint32_t em = hv & 0x7FFFu;  // exponent and mantissa
  // Normal numbers: shift into place and rebias the exponent by 127 - 15.
  std::uint32_t bits = (em << 13) + 0x38000000u;
  // Inf and NaN: exponent 31 becomes 255; NaNs come out quiet (as F16C's do).
  bits = blend(em >= 0x7C00u, bits + 0x38000000u, bits);
  bits = blend(em > 0x7C00u, bits | 0x00400000u, bits);
  // Zero and subnormals: em * 2^-24, exact in float (and a normal float).
  const float sub = static_cast<float>(static_cast<std::int32_t>(em)) * 0x1p-24f;
  bits = blend(em < 0x0400u, std::bit_cast<std::uint32_t>(sub), bits);
  return std::bit_cast<float>(bits | sign);
}

[[gnu::always_inline]] inline std::uint16_t floatToHalfBits(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t a = x & 0x7FFFFFFFu;
  // Normal results: rebias by -(127 - 15), round the 13 dropped bits to nearest even.
  // A carry out of the mantissa bumps the exponent, up to 0x7C00 (Inf) at 65520.
  const std::uint32_t normal = (a - 0x38000000u + 0x0FFFu + ((a >> 13) & 1u)) >> 13;
  // Results below 2^-14 (half subnormals or zero): adding 0.5 aligns the value so
  // that the float addition itself rounds it to a multiple of 2^-24 (nearest even, in
  // the default rounding mode, which is what the F16C variants use regardless).
  const float aligned = std::bit_cast<float>(a) + 0.5f;
  const std::uint32_t subnormal = std::bit_cast<std::uint32_t>(aligned) - 0x3F000000u;
  std::uint32_t r = blend(a < 0x38800000u, subnormal, normal);
  r = blend(a >= 0x47800000u, 0x7C00u, r);                         // overflow: Inf
  r = blend(a > 0x7F800000u, 0x7E00u | ((a >> 13) & 0x03FFu), r);  // NaN: quiet, top payload
  return static_cast<std::uint16_t>(r | sign);
}

[[gnu::always_inline]] inline float bfloatBitsToFloat(std::uint16_t b) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16);
}

[[gnu::always_inline]] inline std::uint16_t floatToBfloatBits(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint32_t rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
  const std::uint32_t nan = (x >> 16) | 0x0040u;  // quiet, sign and top payload kept
  return static_cast<std::uint16_t>((x & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
}

}  // namespace blink::runtime::kernels
