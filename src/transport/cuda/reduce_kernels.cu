#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "common/error.hpp"
#include "transport/cuda/reduce_kernels.hpp"

namespace blink::cuda {
namespace {

// Half types are combined in float: the same rounding as the CPU kernels, one
// rounding per element per step.
template <typename T>
struct Accum {
  using type = T;
};
template <>
struct Accum<__half> {
  using type = float;
};
template <>
struct Accum<__nv_bfloat16> {
  using type = float;
};

template <typename T>
__device__ typename Accum<T>::type widen(T v) {
  return static_cast<typename Accum<T>::type>(v);
}
template <>
__device__ float widen<__half>(__half v) {
  return __half2float(v);
}
template <>
__device__ float widen<__nv_bfloat16>(__nv_bfloat16 v) {
  return __bfloat162float(v);
}

template <typename T, typename A>
__device__ T narrow(A v) {
  return static_cast<T>(v);
}
template <>
__device__ __half narrow<__half, float>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __nv_bfloat16 narrow<__nv_bfloat16, float>(float v) {
  return __float2bfloat16_rn(v);
}

struct OpSum {
  template <typename A>
  __device__ A operator()(A x, A y) const {
    return x + y;
  }
};
struct OpProd {
  template <typename A>
  __device__ A operator()(A x, A y) const {
    return x * y;
  }
};
// The same comparisons as the host kernels (reduce_cpu.cpp, after Open MPI's
// ompi_op_base_2buff_min/max with x the accumulated operand): a NaN in either operand
// or a tie of +0 and -0 gives y, so a GPU rank and a host rank agree bit for bit.
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

template <typename T, typename Op>
__global__ void reduceKernel(T* dst, const T* a, const T* b, std::size_t count) {
  Op op;
  std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    dst[i] = narrow<T>(op(widen(a[i]), widen(b[i])));
  }
}

template <typename T>
__global__ void scaleKernel(T* data, float factor, std::size_t count) {
  std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    data[i] = narrow<T>(widen(data[i]) * factor);
  }
}

__global__ void scaleKernelF64(double* data, double factor, std::size_t count) {
  std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    data[i] *= factor;
  }
}

// The same division as the host's divideBy: IEEE division (nvcc's default
// -prec-div=true), 16-bit types widened to float and rounded once.
template <typename T, typename D>
__global__ void divideKernel(T* data, D divisor, std::size_t count) {
  std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
  for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count;
       i += stride) {
    data[i] = narrow<T>(widen(data[i]) / divisor);
  }
}

constexpr int kThreads = 256;

unsigned blocksFor(std::size_t count) {
  // Grid-stride loops: a bounded grid keeps launch cost flat for huge counts.
  std::size_t blocks = (count + kThreads - 1) / kThreads;
  return static_cast<unsigned>(blocks < 4096 ? (blocks == 0 ? 1 : blocks) : 4096);
}

blinkResult_t checkLaunch() {
  cudaError_t rc = cudaGetLastError();
  if (rc == cudaSuccess) return blinkSuccess;
  return setLastError(blinkSystemError,
                      std::string("CUDA kernel launch: ") + cudaGetErrorString(rc));
}

template <typename T>
blinkResult_t reduceTyped(blinkRedOp_t op, void* dst, const void* a, const void* b,
                          std::size_t count, cudaStream_t stream) {
  auto* d = static_cast<T*>(dst);
  auto* x = static_cast<const T*>(a);
  auto* y = static_cast<const T*>(b);
  unsigned grid = blocksFor(count);
  switch (op) {
    case blinkSum:
      reduceKernel<T, OpSum><<<grid, kThreads, 0, stream>>>(d, x, y, count);
      break;
    case blinkProd:
      reduceKernel<T, OpProd><<<grid, kThreads, 0, stream>>>(d, x, y, count);
      break;
    case blinkMin:
      reduceKernel<T, OpMin><<<grid, kThreads, 0, stream>>>(d, x, y, count);
      break;
    case blinkMax:
      reduceKernel<T, OpMax><<<grid, kThreads, 0, stream>>>(d, x, y, count);
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
      return reduceTyped<std::int8_t>(op, dst, a, b, count, s);
    case blinkUint8:
      return reduceTyped<std::uint8_t>(op, dst, a, b, count, s);
    case blinkInt16:
      return reduceTyped<std::int16_t>(op, dst, a, b, count, s);
    case blinkUint16:
      return reduceTyped<std::uint16_t>(op, dst, a, b, count, s);
    case blinkInt32:
      return reduceTyped<std::int32_t>(op, dst, a, b, count, s);
    case blinkUint32:
      return reduceTyped<std::uint32_t>(op, dst, a, b, count, s);
    case blinkInt64:
      return reduceTyped<std::int64_t>(op, dst, a, b, count, s);
    case blinkUint64:
      return reduceTyped<std::uint64_t>(op, dst, a, b, count, s);
    case blinkFloat16:
      return reduceTyped<__half>(op, dst, a, b, count, s);
    case blinkBfloat16:
      return reduceTyped<__nv_bfloat16>(op, dst, a, b, count, s);
    case blinkFloat32:
      return reduceTyped<float>(op, dst, a, b, count, s);
    case blinkFloat64:
      return reduceTyped<double>(op, dst, a, b, count, s);
    default:
      return setLastError(blinkInvalidArgument, "launchReduce: unknown datatype");
  }
}

blinkResult_t launchDivide(blinkDataType_t type, void* data, int divisor, std::size_t count,
                           void* stream) {
  if (count == 0) return blinkSuccess;
  if (divisor == 0) return setLastError(blinkInvalidArgument, "launchDivide: divisor is 0");
  auto s = static_cast<cudaStream_t>(stream);
  unsigned grid = blocksFor(count);
  const auto f = static_cast<float>(divisor);
  switch (type) {
    case blinkFloat16:
      divideKernel<__half, float><<<grid, kThreads, 0, s>>>(static_cast<__half*>(data), f, count);
      break;
    case blinkBfloat16:
      divideKernel<__nv_bfloat16, float>
          <<<grid, kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(data), f, count);
      break;
    case blinkFloat32:
      divideKernel<float, float><<<grid, kThreads, 0, s>>>(static_cast<float*>(data), f, count);
      break;
    case blinkFloat64:
      divideKernel<double, double><<<grid, kThreads, 0, s>>>(static_cast<double*>(data),
                                                             static_cast<double>(divisor), count);
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
  unsigned grid = blocksFor(count);
  auto f = static_cast<float>(factor);
  switch (type) {
    case blinkFloat16:
      scaleKernel<__half><<<grid, kThreads, 0, s>>>(static_cast<__half*>(data), f, count);
      break;
    case blinkBfloat16:
      scaleKernel<__nv_bfloat16>
          <<<grid, kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(data), f, count);
      break;
    case blinkFloat32:
      scaleKernel<float><<<grid, kThreads, 0, s>>>(static_cast<float*>(data), f, count);
      break;
    case blinkFloat64:
      scaleKernelF64<<<grid, kThreads, 0, s>>>(static_cast<double*>(data), factor, count);
      break;
    default:
      return setLastError(blinkInvalidArgument, "launchScale: only floating-point types scale");
  }
  return checkLaunch();
}

}  // namespace blink::cuda
