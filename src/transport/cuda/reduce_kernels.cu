#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "common/error.hpp"
#include "transport/cuda/reduce_kernels.hpp"

namespace blink::cuda {
namespace {

// ---- Element types: how each is stored, widened and narrowed ------------------------
// Bit for bit the host kernels (runtime/reduce_cpu.cpp): integers combine in an
// unsigned type at least as wide as unsigned int (sums and products wrap, no signed
// overflow); fp16 and bf16 are widened to float, combined, and rounded once, with the
// host's own integer conversions (NaNs keep sign and top payload and come out quiet,
// which the CUDA intrinsics do not promise).

template <typename T>
struct Plain {
  using Storage = T;
  using Compute = T;
  __device__ static T widen(T v) { return v; }
  __device__ static T narrow(T v) { return v; }
};

// The hardware conversions (cvt) are exact for every finite fp16 and round float to
// fp16 to nearest even, subnormals and overflow included, as the host's do; only NaNs
// differ (cvt returns a canonical NaN), so those take the host's rule by a select. The
// software conversions this replaced made fp16 sums compute-bound at 0.68 of the copy
// bandwidth on an H200 (bf16: 1.0).
__device__ inline float halfBitsToFloat(std::uint16_t h) {
  const std::uint32_t hv = h;
  const float converted = __half2float(__ushort_as_half(h));
  // NaN: sign, quiet bit, top payload bits kept.
  const std::uint32_t nan = ((hv & 0x8000u) << 16) | 0x7FC00000u | ((hv & 0x03FFu) << 13);
  return (hv & 0x7FFFu) > 0x7C00u ? __uint_as_float(nan) : converted;
}

__device__ inline std::uint16_t floatToHalfBits(float f) {
  const std::uint32_t x = __float_as_uint(f);
  const std::uint32_t a = x & 0x7FFFFFFFu;
  const std::uint16_t converted = __half_as_ushort(__float2half_rn(f));
  // NaN: quiet, top payload bits, sign kept.
  const auto nan =
      static_cast<std::uint16_t>(((x >> 16) & 0x8000u) | 0x7E00u | ((a >> 13) & 0x03FFu));
  return a > 0x7F800000u ? nan : converted;
}

__device__ inline float bfloatBitsToFloat(std::uint16_t b) {
  return __uint_as_float(static_cast<std::uint32_t>(b) << 16);
}

__device__ inline std::uint16_t floatToBfloatBits(float f) {
  const std::uint32_t x = __float_as_uint(f);
  const std::uint32_t rounded = (x + 0x7FFFu + ((x >> 16) & 1u)) >> 16;
  const std::uint32_t nan = (x >> 16) | 0x0040u;
  return static_cast<std::uint16_t>((x & 0x7FFFFFFFu) > 0x7F800000u ? nan : rounded);
}

struct Half {
  using Storage = std::uint16_t;
  using Compute = float;
  __device__ static float widen(std::uint16_t v) { return halfBitsToFloat(v); }
  __device__ static std::uint16_t narrow(float v) { return floatToHalfBits(v); }
};

struct Bfloat {
  using Storage = std::uint16_t;
  using Compute = float;
  __device__ static float widen(std::uint16_t v) { return bfloatBitsToFloat(v); }
  __device__ static std::uint16_t narrow(float v) { return floatToBfloatBits(v); }
};

// ---- The ops (Open MPI's: out = op(out, in), x the accumulated operand) -------------

template <typename T>
struct WideOf {
  using type = T;  // floating types
};
template <>
struct WideOf<std::int8_t> {
  using type = unsigned;
};
template <>
struct WideOf<std::uint8_t> {
  using type = unsigned;
};
template <>
struct WideOf<std::int16_t> {
  using type = unsigned;
};
template <>
struct WideOf<std::uint16_t> {
  using type = unsigned;
};
template <>
struct WideOf<std::int32_t> {
  using type = std::uint32_t;
};
template <>
struct WideOf<std::uint32_t> {
  using type = std::uint32_t;
};
template <>
struct WideOf<std::int64_t> {
  using type = std::uint64_t;
};
template <>
struct WideOf<std::uint64_t> {
  using type = std::uint64_t;
};

struct OpSum {
  template <typename A>
  __device__ A operator()(A x, A y) const {
    using W = typename WideOf<A>::type;
    return static_cast<A>(static_cast<W>(x) + static_cast<W>(y));
  }
  __device__ float operator()(float x, float y) const { return __fadd_rn(x, y); }
  __device__ double operator()(double x, double y) const { return __dadd_rn(x, y); }
};
struct OpProd {
  template <typename A>
  __device__ A operator()(A x, A y) const {
    using W = typename WideOf<A>::type;
    return static_cast<A>(static_cast<W>(x) * static_cast<W>(y));
  }
  // _rn: never fused into an FMA with a neighbouring add.
  __device__ float operator()(float x, float y) const { return __fmul_rn(x, y); }
  __device__ double operator()(double x, double y) const { return __dmul_rn(x, y); }
};
// A NaN in either operand or a tie of +0 and -0 gives y, as on the host.
struct OpMin {
  template <typename A>
  __device__ A operator()(A x, A y) const {
    return x < y ? x : y;
  }
};
struct OpMax {
  template <typename A>
  __device__ A operator()(A x, A y) const {
    return x > y ? x : y;
  }
};

constexpr int kThreads = 256;

// 16-byte loads and stores where all three pointers allow them (the usual case:
// cudaMalloc aligns to 256 bytes and chunks are multiples of 64 bytes), element by
// element otherwise and for the tail.
template <typename Traits, typename Op>
__global__ void __launch_bounds__(kThreads)
    reduceKernel(typename Traits::Storage* dst, const typename Traits::Storage* a,
                 const typename Traits::Storage* b, std::size_t count) {
  using S = typename Traits::Storage;
  constexpr std::size_t kPer = 16 / sizeof(S);
  Op op;
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  const std::size_t first = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  std::size_t done = 0;
  const auto address = reinterpret_cast<std::uintptr_t>(dst) | reinterpret_cast<std::uintptr_t>(a) |
                       reinterpret_cast<std::uintptr_t>(b);
  if ((address & 15u) == 0) {
    union Vector {
      uint4 raw;
      S e[kPer];
    };
    auto combine = [&op](const Vector& x, const Vector& y) {
      Vector out;
#pragma unroll
      for (std::size_t k = 0; k < kPer; ++k) {
        out.e[k] = Traits::narrow(op(Traits::widen(x.e[k]), Traits::widen(y.e[k])));
      }
      return out;
    };
    const auto* a4 = reinterpret_cast<const uint4*>(a);
    const auto* b4 = reinterpret_cast<const uint4*>(b);
    auto* d4 = reinterpret_cast<uint4*>(dst);
    const std::size_t vectors = count / kPer;
    // kUnroll loads of each operand in flight per thread before any store: memory
    // latency is hidden by parallelism within a thread, not only across warps.
    constexpr std::size_t kUnroll = 4;
    std::size_t v = first;
    for (; v + (kUnroll - 1) * stride < vectors; v += kUnroll * stride) {
      Vector x[kUnroll], y[kUnroll];
#pragma unroll
      for (std::size_t u = 0; u < kUnroll; ++u) {
        x[u].raw = a4[v + u * stride];
        y[u].raw = b4[v + u * stride];
      }
#pragma unroll
      for (std::size_t u = 0; u < kUnroll; ++u) d4[v + u * stride] = combine(x[u], y[u]).raw;
    }
    for (; v < vectors; v += stride) {
      Vector x, y;
      x.raw = a4[v];
      y.raw = b4[v];
      d4[v] = combine(x, y).raw;
    }
    done = vectors * kPer;
  }
  for (std::size_t i = done + first; i < count; i += stride) {
    dst[i] = Traits::narrow(op(Traits::widen(a[i]), Traits::widen(b[i])));
  }
}

// data[i] / divisor as divideBy: IEEE division (_rn), 16-bit types in float.
template <typename Traits, typename D>
__global__ void __launch_bounds__(kThreads)
    divideKernel(typename Traits::Storage* data, D divisor, std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    if constexpr (sizeof(D) == 8) {
      data[i] = Traits::narrow(__ddiv_rn(Traits::widen(data[i]), divisor));
    } else {
      data[i] = Traits::narrow(__fdiv_rn(Traits::widen(data[i]), divisor));
    }
  }
}

template <typename Traits>
__global__ void __launch_bounds__(kThreads)
    scaleKernel(typename Traits::Storage* data, typename Traits::Compute factor,
                std::size_t count) {
  const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    data[i] = Traits::narrow(OpProd()(Traits::widen(data[i]), factor));
  }
}

unsigned blocksFor(std::size_t count) {
  // Grid-stride loops: a bounded grid keeps launch cost flat for huge counts (4096
  // blocks of 256 threads fill an H100/H200 many times over).
  const std::size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 4096 ? (blocks == 0 ? 1 : blocks) : 4096);
}

blinkResult_t checkLaunch() {
  const cudaError_t rc = cudaGetLastError();
  if (rc == cudaSuccess) return blinkSuccess;
  return setLastError(blinkSystemError,
                      std::string("CUDA kernel launch: ") + cudaGetErrorString(rc));
}

template <typename Traits>
blinkResult_t reduceTyped(blinkRedOp_t op, void* dst, const void* a, const void* b,
                          std::size_t count, cudaStream_t stream) {
  using S = typename Traits::Storage;
  auto* d = static_cast<S*>(dst);
  auto* x = static_cast<const S*>(a);
  auto* y = static_cast<const S*>(b);
  const unsigned grid = blocksFor(count);
  switch (op) {
    case blinkSum:
      reduceKernel<Traits, OpSum><<<grid, kThreads, 0, stream>>>(d, x, y, count);
      break;
    case blinkProd:
      reduceKernel<Traits, OpProd><<<grid, kThreads, 0, stream>>>(d, x, y, count);
      break;
    case blinkMin:
      reduceKernel<Traits, OpMin><<<grid, kThreads, 0, stream>>>(d, x, y, count);
      break;
    case blinkMax:
      reduceKernel<Traits, OpMax><<<grid, kThreads, 0, stream>>>(d, x, y, count);
      break;
    default:
      return setLastError(blinkInvalidArgument, "launchReduce: op is not element-wise");
  }
  return checkLaunch();
}

}  // namespace

blinkResult_t launchReduce(blinkDataType_t type, blinkRedOp_t op, void* dst, const void* a,
                           const void* b, std::size_t count, void* stream) {
  if (count == 0) return blinkSuccess;
  auto s = static_cast<cudaStream_t>(stream);
  switch (type) {
    case blinkInt8:
      return reduceTyped<Plain<std::int8_t>>(op, dst, a, b, count, s);
    case blinkUint8:
      return reduceTyped<Plain<std::uint8_t>>(op, dst, a, b, count, s);
    case blinkInt16:
      return reduceTyped<Plain<std::int16_t>>(op, dst, a, b, count, s);
    case blinkUint16:
      return reduceTyped<Plain<std::uint16_t>>(op, dst, a, b, count, s);
    case blinkInt32:
      return reduceTyped<Plain<std::int32_t>>(op, dst, a, b, count, s);
    case blinkUint32:
      return reduceTyped<Plain<std::uint32_t>>(op, dst, a, b, count, s);
    case blinkInt64:
      return reduceTyped<Plain<std::int64_t>>(op, dst, a, b, count, s);
    case blinkUint64:
      return reduceTyped<Plain<std::uint64_t>>(op, dst, a, b, count, s);
    case blinkFloat16:
      return reduceTyped<Half>(op, dst, a, b, count, s);
    case blinkBfloat16:
      return reduceTyped<Bfloat>(op, dst, a, b, count, s);
    case blinkFloat32:
      return reduceTyped<Plain<float>>(op, dst, a, b, count, s);
    case blinkFloat64:
      return reduceTyped<Plain<double>>(op, dst, a, b, count, s);
    default:
      return setLastError(blinkInvalidArgument, "launchReduce: unknown datatype");
  }
}

blinkResult_t launchDivide(blinkDataType_t type, void* data, int divisor, std::size_t count,
                           void* stream) {
  if (count == 0) return blinkSuccess;
  if (divisor == 0) return setLastError(blinkInvalidArgument, "launchDivide: divisor is 0");
  auto s = static_cast<cudaStream_t>(stream);
  const unsigned grid = blocksFor(count);
  const auto f = static_cast<float>(divisor);
  switch (type) {
    case blinkFloat16:
      divideKernel<Half, float>
          <<<grid, kThreads, 0, s>>>(static_cast<std::uint16_t*>(data), f, count);
      break;
    case blinkBfloat16:
      divideKernel<Bfloat, float>
          <<<grid, kThreads, 0, s>>>(static_cast<std::uint16_t*>(data), f, count);
      break;
    case blinkFloat32:
      divideKernel<Plain<float>, float>
          <<<grid, kThreads, 0, s>>>(static_cast<float*>(data), f, count);
      break;
    case blinkFloat64:
      divideKernel<Plain<double>, double><<<grid, kThreads, 0, s>>>(
          static_cast<double*>(data), static_cast<double>(divisor), count);
      break;
    default:
      return setLastError(blinkInvalidArgument, "launchDivide: only floating-point types divide");
  }
  return checkLaunch();
}

blinkResult_t launchScale(blinkDataType_t type, void* data, double factor, std::size_t count,
                          void* stream) {
  if (count == 0) return blinkSuccess;
  auto s = static_cast<cudaStream_t>(stream);
  const unsigned grid = blocksFor(count);
  const auto f = static_cast<float>(factor);
  switch (type) {
    case blinkFloat16:
      scaleKernel<Half><<<grid, kThreads, 0, s>>>(static_cast<std::uint16_t*>(data), f, count);
      break;
    case blinkBfloat16:
      scaleKernel<Bfloat><<<grid, kThreads, 0, s>>>(static_cast<std::uint16_t*>(data), f, count);
      break;
    case blinkFloat32:
      scaleKernel<Plain<float>><<<grid, kThreads, 0, s>>>(static_cast<float*>(data), f, count);
      break;
    case blinkFloat64:
      scaleKernel<Plain<double>>
          <<<grid, kThreads, 0, s>>>(static_cast<double*>(data), factor, count);
      break;
    default:
      return setLastError(blinkInvalidArgument, "launchScale: only floating-point types scale");
  }
  return checkLaunch();
}

}  // namespace blink::cuda
