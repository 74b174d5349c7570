// The fp16 and bf16 reduction loops for AVX2 (+F16C) and AVX-512: F16C conversions for
// fp16, hand-written unpack/round/pack sequences for bf16 (the portable loops in
// reduce_cpu.cpp convert element by element). BLINK_REDUCE_X86 says whether they exist.
// Only the kernels' translation unit (reduce_cpu.cpp) includes this header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "runtime/reduce_ops.hpp"

#if defined(__x86_64__) || defined(__i386__)
// GCC 12's AVX-512 intrinsics initialise their "undefined" operands from themselves,
// which -Wmaybe-uninitialized reports once they are inlined (GCC bug 105593).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>
#pragma GCC diagnostic pop
#define BLINK_REDUCE_X86 1
#else
#define BLINK_REDUCE_X86 0
#endif

namespace blink::runtime::kernels {

#if BLINK_REDUCE_X86

#define BLINK_TARGET_AVX2 "avx2,f16c"
#define BLINK_TARGET_AVX512 "avx2,f16c,avx512f,avx512bw,avx512vl,avx512dq,prefer-vector-width=512"

template <typename Op>
[[gnu::target(BLINK_TARGET_AVX2), gnu::always_inline]] inline __m256 combine8(__m256 a, __m256 b) {
  // minps/maxps(a, b) return b when either is NaN or both are zero: a < b ? a : b.
  if constexpr (std::is_same_v<Op, OpSum>) return _mm256_add_ps(a, b);
  if constexpr (std::is_same_v<Op, OpProd>) return _mm256_mul_ps(a, b);
  if constexpr (std::is_same_v<Op, OpMin>) return _mm256_min_ps(a, b);
  if constexpr (std::is_same_v<Op, OpMax>) return _mm256_max_ps(a, b);
}

template <typename Op>
[[gnu::target(BLINK_TARGET_AVX2), gnu::always_inline]] inline void half8(std::uint16_t* out,
                                                                         const std::uint16_t* in) {
  const __m256 a = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(out)));
  const __m256 b = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in)));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                   _mm256_cvtps_ph(combine8<Op>(a, b), _MM_FROUND_TO_NEAREST_INT));
}

// bf16 -> float is a shift into the upper half; interleaving with zeros does it for
// half the lanes of a register at a time (unpacklo/hi work within 128-bit lanes, and so
// does the final pack, which puts the elements back in their order).
[[gnu::target(BLINK_TARGET_AVX2), gnu::always_inline]] inline __m256i roundToBfloat8(__m256 v) {
  // floatToBfloatBits, eight lanes: nearest even, NaN kept quiet.
  const __m256i x = _mm256_castps_si256(v);
  const __m256i high = _mm256_srli_epi32(x, 16);
  const __m256i odd = _mm256_and_si256(high, _mm256_set1_epi32(1));
  const __m256i rounded =
      _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7FFF)), odd), 16);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7FFFFFFF)),
                                         _mm256_set1_epi32(0x7F800000));
  return _mm256_blendv_epi8(rounded, _mm256_or_si256(high, _mm256_set1_epi32(0x40)), nan);
}

template <typename Op>
[[gnu::target(BLINK_TARGET_AVX2), gnu::always_inline]] inline void bfloat16x(
    std::uint16_t* out, const std::uint16_t* in) {
  const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(out));
  const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in));
  const __m256i zero = _mm256_setzero_si256();
  const __m256 lo = combine8<Op>(_mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, a)),
                                 _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, b)));
  const __m256 hi = combine8<Op>(_mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, a)),
                                 _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, b)));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      _mm256_packus_epi32(roundToBfloat8(lo), roundToBfloat8(hi)));
}

struct Avx2x16 {
  template <typename Op>
  [[gnu::target(BLINK_TARGET_AVX2)]] static void half(std::uint16_t* __restrict out,
                                                      const std::uint16_t* __restrict in,
                                                      std::size_t n, Op) {
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) {
      half8<Op>(out + i, in + i);
      half8<Op>(out + i + 8, in + i + 8);
    }
    for (; i + 8 <= n; i += 8) half8<Op>(out + i, in + i);
    if (i < n) {  // the last 1..7 elements, through a padded copy
      std::uint16_t a[8] = {}, b[8] = {};
      std::memcpy(a, out + i, (n - i) * sizeof(std::uint16_t));
      std::memcpy(b, in + i, (n - i) * sizeof(std::uint16_t));
      half8<Op>(a, b);
      std::memcpy(out + i, a, (n - i) * sizeof(std::uint16_t));
    }
  }
  template <typename Op>
  [[gnu::target(BLINK_TARGET_AVX2)]] static void bfloat(std::uint16_t* __restrict out,
                                                        const std::uint16_t* __restrict in,
                                                        std::size_t n, Op) {
    std::size_t i = 0;
    for (; i + 16 <= n; i += 16) bfloat16x<Op>(out + i, in + i);
    if (i < n) {  // the last 1..15 elements, through a padded copy
      std::uint16_t a[16] = {}, b[16] = {};
      std::memcpy(a, out + i, (n - i) * sizeof(std::uint16_t));
      std::memcpy(b, in + i, (n - i) * sizeof(std::uint16_t));
      bfloat16x<Op>(a, b);
      std::memcpy(out + i, a, (n - i) * sizeof(std::uint16_t));
    }
  }
};

template <typename Op>
[[gnu::target(BLINK_TARGET_AVX512), gnu::always_inline]] inline __m512 combine16(__m512 a,
                                                                                 __m512 b) {
  if constexpr (std::is_same_v<Op, OpSum>) return _mm512_add_ps(a, b);
  if constexpr (std::is_same_v<Op, OpProd>) return _mm512_mul_ps(a, b);
  if constexpr (std::is_same_v<Op, OpMin>) return _mm512_min_ps(a, b);
  if constexpr (std::is_same_v<Op, OpMax>) return _mm512_max_ps(a, b);
}

template <typename Op>
[[gnu::target(BLINK_TARGET_AVX512), gnu::always_inline]] inline void half16(std::uint16_t* out,
                                                                            const std::uint16_t* in,
                                                                            __mmask16 mask) {
  const __m512 a = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, out));
  const __m512 b = _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(mask, in));
  _mm256_mask_storeu_epi16(out, mask,
                           _mm512_cvtps_ph(combine16<Op>(a, b), _MM_FROUND_TO_NEAREST_INT));
}

[[gnu::target(BLINK_TARGET_AVX512), gnu::always_inline]] inline __m512i roundToBfloat16(__m512 v) {
  const __m512i x = _mm512_castps_si512(v);
  const __m512i high = _mm512_srli_epi32(x, 16);
  const __m512i odd = _mm512_and_si512(high, _mm512_set1_epi32(1));
  const __m512i rounded =
      _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(x, _mm512_set1_epi32(0x7FFF)), odd), 16);
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(x, _mm512_set1_epi32(0x7FFFFFFF)),
                                                _mm512_set1_epi32(0x7F800000));
  return _mm512_mask_blend_epi32(nan, rounded, _mm512_or_si512(high, _mm512_set1_epi32(0x40)));
}

template <typename Op>
[[gnu::target(BLINK_TARGET_AVX512), gnu::always_inline]] inline void bfloat32x(
    std::uint16_t* out, const std::uint16_t* in, __mmask32 mask) {
  const __m512i a = _mm512_maskz_loadu_epi16(mask, out);
  const __m512i b = _mm512_maskz_loadu_epi16(mask, in);
  const __m512i zero = _mm512_setzero_si512();
  const __m512 lo = combine16<Op>(_mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, a)),
                                  _mm512_castsi512_ps(_mm512_unpacklo_epi16(zero, b)));
  const __m512 hi = combine16<Op>(_mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, a)),
                                  _mm512_castsi512_ps(_mm512_unpackhi_epi16(zero, b)));
  _mm512_mask_storeu_epi16(out, mask,
                           _mm512_packus_epi32(roundToBfloat16(lo), roundToBfloat16(hi)));
}

struct Avx512x16 {
  template <typename Op>
  [[gnu::target(BLINK_TARGET_AVX512)]] static void half(std::uint16_t* __restrict out,
                                                        const std::uint16_t* __restrict in,
                                                        std::size_t n, Op) {
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32) {
      half16<Op>(out + i, in + i, 0xFFFF);
      half16<Op>(out + i + 16, in + i + 16, 0xFFFF);
    }
    for (; i < n; i += 16) {
      const std::size_t left = n - i;
      const __mmask16 mask =
          left >= 16 ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << left) - 1u);
      half16<Op>(out + i, in + i, mask);
    }
  }
  template <typename Op>
  [[gnu::target(BLINK_TARGET_AVX512)]] static void bfloat(std::uint16_t* __restrict out,
                                                          const std::uint16_t* __restrict in,
                                                          std::size_t n, Op) {
    std::size_t i = 0;
    for (; i + 32 <= n; i += 32) bfloat32x<Op>(out + i, in + i, ~__mmask32{0});
    if (i < n) bfloat32x<Op>(out + i, in + i, static_cast<__mmask32>((1u << (n - i)) - 1u));
  }
};

#endif  // BLINK_REDUCE_X86

}  // namespace blink::runtime::kernels
