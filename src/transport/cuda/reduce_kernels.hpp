// Element-wise reduction kernels for GPU buffers, callable from plain C++ (no CUDA
// headers needed): the CUDA transport combines a received chunk with a local one.
#pragma once

#include <cstddef>

#include "blink/blink.h"

namespace blink::cuda {

// dst[i] = op(a[i], b[i]) for i < count, queued on `stream` (a cudaStream_t; null
// is the legacy default stream), element for element what reduceInto(a, b) gives on
// the host, NaN and signed zeros included (a is the accumulated operand). dst may alias a or b.
// blinkAvg is not element-wise (sum, then launchDivide). Returns blinkInvalidArgument for an
// unsupported pair and blinkSystemError (with the CUDA message as last error) when the launch
// fails.
blinkResult_t launchReduce(blinkDataType_t type, blinkRedOp_t op, void* dst, const void* a,
                           const void* b, std::size_t count, void* stream);

// data[i] = data[i] / divisor for floating-point types, bit for bit divideBy on the
// host (fp16/bf16 divided in float, rounded once): blinkAvg's final division.
blinkResult_t launchDivide(blinkDataType_t type, void* data, int divisor, std::size_t count,
                           void* stream);

// data[i] *= factor for floating-point types (not bit-equal to a division).
blinkResult_t launchScale(blinkDataType_t type, void* data, double factor, std::size_t count,
                          void* stream);

}  // namespace blink::cuda
