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

#include <cstring>
#include <string>

#include "common/error.hpp"
#include "runtime/half_float_bits.hpp"
#include "runtime/reduce_ops.hpp"
#include "runtime/reduce_x86_sixteen.hpp"

namespace blink::runtime {
namespace {

using namespace kernels;  // NOLINT(google-build-using-namespace): this file's own parts

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

// The 16-bit floating types, portably; the x86 variants replace these loops with those of
// reduce_x86_sixteen.hpp.
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
