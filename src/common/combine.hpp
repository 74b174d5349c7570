// How a reduction combines two buffers, as the algorithms and the executor see it:
// the element type and the operation are bound in by the caller, so code that
// moves bytes never needs to know them. Code that reduces on a device (the CUDA
// transport) needs them named instead: Reduction.
#pragma once

#include <cstddef>
#include <functional>

#include "blink/blink.h"

namespace blink {

// Combines `bytes` of incoming data into `inout` (inout = op(inout, in)).
using Combine = std::function<void(std::byte* inout, const std::byte* in, std::size_t bytes)>;

// The same reduction named by type and op, for code that runs it elsewhere than on
// the host (a device's kernels). avg combines as sum; the caller divides at the end.
struct Reduction {
  blinkDataType_t type = blinkFloat32;
  blinkRedOp_t op = blinkSum;
};

}  // namespace blink
