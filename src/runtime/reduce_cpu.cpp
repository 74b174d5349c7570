// CPU reduction kernels (see reduce_cpu.hpp for the semantics).
//
// How to check the vectorisation: this file is compiled with -O3 outside Debug builds
// (src/runtime/CMakeLists.txt; GCC 12's -O2 cost model vectorises only loops whose trip
// count is a known multiple of the vector width). Take its command from the build's
// compile_commands.json (the entry whose "file" ends in runtime/reduce_cpu.cpp), point -o
// at /dev/null and add -fopt-info-vec-optimized: each vectorised loop prints
// "reduce_cpu.cpp:LINE:COL: optimized: loop vectorized using N byte vectors", once per
// inlined instance (plus a narrower epilogue). -fdump-tree-vect-optimized=FILE instead
// writes the same lines grouped under ";; Function reduceGeneric / reduceAvx2 / ...".
// Expected (GCC 12.2): in reduceGeneric (SSE2, N = 16) 42 of the 48 combineLoop
// instances (12 types x 4 ops; int64/uint64 prod, min and max stay scalar: SSE2 has no
// 64-bit multiply or compare); in reduceAvx2 (N = 32) and reduceAvx512 (N = 64) all 40
// (fp16 and bf16 use the hand-written F16C/unpack loops there, which are not reported);
// all 4 divide loops in each variant. objdump -d -C on the object shows the result:
// vpaddd/vpmullq/vpminuq/vcvtph2ps/vpackusdw on ymm registers in reduceAvx2, zmm in
// reduceAvx512, xmm only in reduceGeneric. perf/reduce_bench measures every variant
// against memcpy.
#include "runtime/reduce_cpu.hpp"

#include <bit>
#include <cstring>
#include <type_traits>

#include "common/error.hpp"

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

namespace blink::runtime {
namespace {

// ---- fp16 / bf16 bit conversions (branch-free, so that loops over them vectorise) ----

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

// ---- The ops (Open MPI's: out = op(out, in)) ----------------------------------------

// Integer sum and product in an unsigned type at least as wide as unsigned int: no
// signed overflow, no promotion to (signed) int, and the result wraps modulo 2^bits.
template <typename T>
using Wide = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

struct OpSum {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<Wide<T>>(a) + static_cast<Wide<T>>(b));
    } else {
      return a + b;
    }
  }
};

struct OpProd {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<Wide<T>>(a) * static_cast<Wide<T>>(b));
    } else {
      return a * b;
    }
  }
};

// ompi_op_base_2buff_min_*: current_func(a, b) ((a) < (b) ? (a) : (b)) with a = out.
// For floats this is exactly x86's minps(out, in): a NaN in either operand gives in.
struct OpMin {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return a < b ? a : b;
  }
};

struct OpMax {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return a > b ? a : b;
  }
};

// ompi_op_base_2buff_{band,bor,bxor,land,lor,lxor}_*: integer types only (the
// dispatch below never instantiates them for floating types). The logical ops give
// 1 or 0 in the element's type, as C's && and || do.
struct OpBand {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return static_cast<T>(a & b);
  }
};

struct OpBor {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return static_cast<T>(a | b);
  }
};

struct OpBxor {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return static_cast<T>(a ^ b);
  }
};

struct OpLand {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return static_cast<T>(a != 0 && b != 0);
  }
};

struct OpLor {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return static_cast<T>(a != 0 || b != 0);
  }
};

struct OpLxor {
  template <typename T>
  [[gnu::always_inline]] T operator()(T a, T b) const {
    return static_cast<T>((a != 0) != (b != 0));
  }
};

// fp16 / bf16 elements: widen both, combine in float, round once.
template <typename Op>
struct HalfOp {
  Op op;
  [[gnu::always_inline]] std::uint16_t operator()(std::uint16_t a, std::uint16_t b) const {
    return floatToHalfBits(op(halfBitsToFloat(a), halfBitsToFloat(b)));
  }
};

template <typename Op>
struct BfloatOp {
  Op op;
  [[gnu::always_inline]] std::uint16_t operator()(std::uint16_t a, std::uint16_t b) const {
    return floatToBfloatBits(op(bfloatBitsToFloat(a), bfloatBitsToFloat(b)));
  }
};

// ---- Loops ----------------------------------------------------------------------------

template <typename T, typename Op>
[[gnu::always_inline]] inline void combineLoop(T* __restrict out, const T* __restrict in,
                                               std::size_t n, Op op) {
  for (std::size_t i = 0; i < n; ++i) out[i] = op(out[i], in[i]);
}

template <typename T>
[[gnu::always_inline]] inline void divideLoop(T* __restrict buf, std::size_t n, T divisor) {
  for (std::size_t i = 0; i < n; ++i) buf[i] = buf[i] / divisor;
}

[[gnu::always_inline]] inline void divideHalfLoop(std::uint16_t* __restrict buf, std::size_t n,
                                                  float divisor) {
  for (std::size_t i = 0; i < n; ++i) buf[i] = floatToHalfBits(halfBitsToFloat(buf[i]) / divisor);
}

[[gnu::always_inline]] inline void divideBfloatLoop(std::uint16_t* __restrict buf, std::size_t n,
                                                    float divisor) {
  for (std::size_t i = 0; i < n; ++i) {
    buf[i] = floatToBfloatBits(bfloatBitsToFloat(buf[i]) / divisor);
  }
}

// The 16-bit floating types, portably; the x86 variants below replace these loops with
// F16C conversions (fp16) and hand-written unpack/round/pack sequences (bf16).
struct Portable16 {
  template <typename Op>
  [[gnu::always_inline]] static void half(std::uint16_t* __restrict out,
                                          const std::uint16_t* __restrict in, std::size_t n,
                                          Op op) {
    combineLoop(out, in, n, HalfOp<Op>{op});
  }
  template <typename Op>
  [[gnu::always_inline]] static void bfloat(std::uint16_t* __restrict out,
                                            const std::uint16_t* __restrict in, std::size_t n,
                                            Op op) {
    combineLoop(out, in, n, BfloatOp<Op>{op});
  }
};

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

// ---- Dispatch on type and op (inlined into each instruction-set variant) --------------

template <typename Sixteen, typename Op>
[[gnu::always_inline]] inline void combineTyped(void* inout, const void* in, std::size_t n,
                                                blinkDataType_t type, Op op) {
  switch (type) {
#define BLINK_CASE(enumerator, T)                                          \
  case enumerator:                                                         \
    combineLoop(static_cast<T*>(inout), static_cast<const T*>(in), n, op); \
    return;
    BLINK_CASE(blinkInt8, std::int8_t)
    BLINK_CASE(blinkUint8, std::uint8_t)
    BLINK_CASE(blinkInt16, std::int16_t)
    BLINK_CASE(blinkUint16, std::uint16_t)
    BLINK_CASE(blinkInt32, std::int32_t)
    BLINK_CASE(blinkUint32, std::uint32_t)
    BLINK_CASE(blinkInt64, std::int64_t)
    BLINK_CASE(blinkUint64, std::uint64_t)
    BLINK_CASE(blinkFloat32, float)
    BLINK_CASE(blinkFloat64, double)
#undef BLINK_CASE
    case blinkFloat16:
      Sixteen::half(static_cast<std::uint16_t*>(inout), static_cast<const std::uint16_t*>(in), n,
                    op);
      return;
    case blinkBfloat16:
      Sixteen::bfloat(static_cast<std::uint16_t*>(inout), static_cast<const std::uint16_t*>(in), n,
                      op);
      return;
    default:
      return;  // checked by the caller
  }
}

// The integer types alone: the bitwise and logical ops have no floating variant.
template <typename Op>
[[gnu::always_inline]] inline void combineInteger(void* inout, const void* in, std::size_t n,
                                                  blinkDataType_t type, Op op) {
  switch (type) {
#define BLINK_CASE(enumerator, T)                                          \
  case enumerator:                                                         \
    combineLoop(static_cast<T*>(inout), static_cast<const T*>(in), n, op); \
    return;
    BLINK_CASE(blinkInt8, std::int8_t)
    BLINK_CASE(blinkUint8, std::uint8_t)
    BLINK_CASE(blinkInt16, std::int16_t)
    BLINK_CASE(blinkUint16, std::uint16_t)
    BLINK_CASE(blinkInt32, std::int32_t)
    BLINK_CASE(blinkUint32, std::uint32_t)
    BLINK_CASE(blinkInt64, std::int64_t)
    BLINK_CASE(blinkUint64, std::uint64_t)
#undef BLINK_CASE
    default:
      return;  // checked by the caller
  }
}

template <typename Sixteen>
[[gnu::always_inline]] inline void combineAny(void* inout, const void* in, std::size_t n,
                                              blinkDataType_t type, blinkRedOp_t op) {
  switch (op) {
    case blinkSum:
    case blinkAvg:
      return combineTyped<Sixteen>(inout, in, n, type, OpSum{});
    case blinkProd:
      return combineTyped<Sixteen>(inout, in, n, type, OpProd{});
    case blinkMin:
      return combineTyped<Sixteen>(inout, in, n, type, OpMin{});
    case blinkMax:
      return combineTyped<Sixteen>(inout, in, n, type, OpMax{});
    case blinkBand:
      return combineInteger(inout, in, n, type, OpBand{});
    case blinkBor:
      return combineInteger(inout, in, n, type, OpBor{});
    case blinkBxor:
      return combineInteger(inout, in, n, type, OpBxor{});
    case blinkLand:
      return combineInteger(inout, in, n, type, OpLand{});
    case blinkLor:
      return combineInteger(inout, in, n, type, OpLor{});
    case blinkLxor:
      return combineInteger(inout, in, n, type, OpLxor{});
    default:
      return;  // checked by the caller
  }
}

[[gnu::always_inline]] inline void divideAny(void* buf, std::size_t n, blinkDataType_t type,
                                             int divisor) {
  switch (type) {
    case blinkFloat32:
      return divideLoop(static_cast<float*>(buf), n, static_cast<float>(divisor));
    case blinkFloat64:
      return divideLoop(static_cast<double*>(buf), n, static_cast<double>(divisor));
    case blinkFloat16:
      return divideHalfLoop(static_cast<std::uint16_t*>(buf), n, static_cast<float>(divisor));
    case blinkBfloat16:
      return divideBfloatLoop(static_cast<std::uint16_t*>(buf), n, static_cast<float>(divisor));
    default:
      return;  // checked by the caller
  }
}

// ---- The instruction-set variants -------------------------------------------------------

using ReduceFn = void (*)(void*, const void*, std::size_t, blinkDataType_t, blinkRedOp_t);
using DivideFn = void (*)(void*, std::size_t, blinkDataType_t, int);

[[gnu::flatten]] void reduceGeneric(void* inout, const void* in, std::size_t n,
                                    blinkDataType_t type, blinkRedOp_t op) {
  combineAny<Portable16>(inout, in, n, type, op);
}

[[gnu::flatten]] void divideGeneric(void* buf, std::size_t n, blinkDataType_t type, int divisor) {
  divideAny(buf, n, type, divisor);
}

#if BLINK_REDUCE_X86

[[gnu::target(BLINK_TARGET_AVX2), gnu::flatten]] void reduceAvx2(void* inout, const void* in,
                                                                 std::size_t n,
                                                                 blinkDataType_t type,
                                                                 blinkRedOp_t op) {
  combineAny<Avx2x16>(inout, in, n, type, op);
}

[[gnu::target(BLINK_TARGET_AVX2), gnu::flatten]] void divideAvx2(void* buf, std::size_t n,
                                                                 blinkDataType_t type,
                                                                 int divisor) {
  divideAny(buf, n, type, divisor);
}

[[gnu::target(BLINK_TARGET_AVX512), gnu::flatten]] void reduceAvx512(void* inout, const void* in,
                                                                     std::size_t n,
                                                                     blinkDataType_t type,
                                                                     blinkRedOp_t op) {
  combineAny<Avx512x16>(inout, in, n, type, op);
}

[[gnu::target(BLINK_TARGET_AVX512), gnu::flatten]] void divideAvx512(void* buf, std::size_t n,
                                                                     blinkDataType_t type,
                                                                     int divisor) {
  divideAny(buf, n, type, divisor);
}

#endif  // BLINK_REDUCE_X86

ReduceFn reduceFn(CpuIsa isa) {
  switch (isa) {
#if BLINK_REDUCE_X86
    case CpuIsa::Avx2:
      return reduceAvx2;
    case CpuIsa::Avx512:
      return reduceAvx512;
#endif
    default:
      return reduceGeneric;
  }
}

DivideFn divideFn(CpuIsa isa) {
  switch (isa) {
#if BLINK_REDUCE_X86
    case CpuIsa::Avx2:
      return divideAvx2;
    case CpuIsa::Avx512:
      return divideAvx512;
#endif
    default:
      return divideGeneric;
  }
}

struct Selected {
  CpuIsa isa;
  ReduceFn reduce;
  DivideFn divide;
};

const Selected& selected() {
  static const Selected s = [] {
    CpuIsa isa = CpuIsa::Generic;
    if (cpuIsaSupported(CpuIsa::Avx512)) {
      isa = CpuIsa::Avx512;
    } else if (cpuIsaSupported(CpuIsa::Avx2)) {
      isa = CpuIsa::Avx2;
    }
    return Selected{isa, reduceFn(isa), divideFn(isa)};
  }();
  return s;
}

void checkBuffers(const char* what, const void* a, const void* b, std::size_t count) {
  if (count > 0 && (a == nullptr || b == nullptr)) {
    throw Error(blinkInvalidArgument,
                std::string(what) + ": null buffer with count " + std::to_string(count));
  }
}

void checkDivide(const void* buf, std::size_t count, blinkDataType_t type, int divisor) {
  if (!isFloating(type)) {
    throw Error(blinkInvalidArgument,
                "divideBy needs a floating-point datatype, not " + toString(type));
  }
  if (divisor == 0) throw Error(blinkInvalidArgument, "divideBy: division by zero");
  checkBuffers("divideBy", buf, buf, count);
}

void checkIsa(CpuIsa isa) {
  if (!cpuIsaSupported(isa)) {
    throw Error(blinkUnsupported,
                "this CPU cannot run the " + toString(isa) + " reduction kernels");
  }
}

}  // namespace

std::size_t elementSize(blinkDataType_t type) {
  switch (type) {
    case blinkInt8:
    case blinkUint8:
      return 1;
    case blinkInt16:
    case blinkUint16:
    case blinkFloat16:
    case blinkBfloat16:
      return 2;
    case blinkInt32:
    case blinkUint32:
    case blinkFloat32:
      return 4;
    case blinkInt64:
    case blinkUint64:
    case blinkFloat64:
      return 8;
    default:
      throw Error(blinkInvalidArgument,
                  "unknown datatype " + std::to_string(static_cast<int>(type)));
  }
}

bool isFloating(blinkDataType_t type) {
  return type == blinkFloat16 || type == blinkBfloat16 || type == blinkFloat32 ||
         type == blinkFloat64;
}

std::string toString(blinkDataType_t type) {
  switch (type) {
    case blinkInt8:
      return "int8";
    case blinkUint8:
      return "uint8";
    case blinkInt16:
      return "int16";
    case blinkUint16:
      return "uint16";
    case blinkInt32:
      return "int32";
    case blinkUint32:
      return "uint32";
    case blinkInt64:
      return "int64";
    case blinkUint64:
      return "uint64";
    case blinkFloat16:
      return "float16";
    case blinkBfloat16:
      return "bfloat16";
    case blinkFloat32:
      return "float32";
    case blinkFloat64:
      return "float64";
    default:
      return "unknown(" + std::to_string(static_cast<int>(type)) + ")";
  }
}

bool isBitwiseOrLogical(blinkRedOp_t op) {
  return op >= blinkBand && op <= blinkLxor;
}

std::string toString(blinkRedOp_t op) {
  switch (op) {
    case blinkSum:
      return "sum";
    case blinkProd:
      return "prod";
    case blinkMin:
      return "min";
    case blinkMax:
      return "max";
    case blinkAvg:
      return "avg";
    case blinkBand:
      return "band";
    case blinkBor:
      return "bor";
    case blinkBxor:
      return "bxor";
    case blinkLand:
      return "land";
    case blinkLor:
      return "lor";
    case blinkLxor:
      return "lxor";
    default:
      return "unknown(" + std::to_string(static_cast<int>(op)) + ")";
  }
}

void checkReduction(blinkDataType_t type, blinkRedOp_t op) {
  if (static_cast<int>(type) < 0 || static_cast<int>(type) >= blinkNumTypes) {
    throw Error(blinkInvalidArgument, "unknown datatype " + std::to_string(static_cast<int>(type)));
  }
  if (static_cast<int>(op) < 0 || static_cast<int>(op) >= blinkNumOps) {
    throw Error(blinkInvalidArgument,
                "unknown reduction op " + std::to_string(static_cast<int>(op)));
  }
  if (op == blinkAvg && !isFloating(type)) {
    throw Error(blinkInvalidArgument,
                "avg is defined only for floating-point datatypes, not " + toString(type));
  }
  if (isBitwiseOrLogical(op) && isFloating(type)) {
    throw Error(blinkInvalidArgument,
                toString(op) + " is defined only for integer datatypes, not " + toString(type));
  }
}

void reduceInto(void* inout, const void* in, std::size_t count, blinkDataType_t type,
                blinkRedOp_t op) {
  checkReduction(type, op);
  checkBuffers("reduceInto", inout, in, count);
  selected().reduce(inout, in, count, type, op);
}

void reduceIntoChecked(void* inout, const void* in, std::size_t count, blinkDataType_t type,
                       blinkRedOp_t op) {
  selected().reduce(inout, in, count, type, op);
}

void divideBy(void* buf, std::size_t count, blinkDataType_t type, int divisor) {
  checkDivide(buf, count, type, divisor);
  selected().divide(buf, count, type, divisor);
}

float halfToFloat(std::uint16_t h) {
  return halfBitsToFloat(h);
}
std::uint16_t floatToHalf(float f) {
  return floatToHalfBits(f);
}
float bfloat16ToFloat(std::uint16_t b) {
  return bfloatBitsToFloat(b);
}
std::uint16_t floatToBfloat16(float f) {
  return floatToBfloatBits(f);
}

std::string toString(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Generic:
      return "generic";
    case CpuIsa::Avx2:
      return "avx2";
    case CpuIsa::Avx512:
      return "avx512";
  }
  return "unknown";
}

bool cpuIsaSupported(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Generic:
      return true;
#if BLINK_REDUCE_X86
    case CpuIsa::Avx2:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    case CpuIsa::Avx512:
      __builtin_cpu_init();
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
             __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
#endif
    default:
      return false;
  }
}

CpuIsa bestCpuIsa() {
  return selected().isa;
}

void reduceIntoIsa(CpuIsa isa, void* inout, const void* in, std::size_t count, blinkDataType_t type,
                   blinkRedOp_t op) {
  checkIsa(isa);
  checkReduction(type, op);
  checkBuffers("reduceInto", inout, in, count);
  reduceFn(isa)(inout, in, count, type, op);
}

void divideByIsa(CpuIsa isa, void* buf, std::size_t count, blinkDataType_t type, int divisor) {
  checkIsa(isa);
  checkDivide(buf, count, type, divisor);
  divideFn(isa)(buf, count, type, divisor);
}

}  // namespace blink::runtime
