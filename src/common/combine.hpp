// How a reduction combines two buffers, as the algorithms and the executor see it:
// the element type and the operation are bound in by the caller, so code that
// moves bytes never needs to know them.
#pragma once

#include <cstddef>
#include <functional>

namespace blink {

// Combines `bytes` of incoming data into `inout` (inout = op(inout, in)).
using Combine = std::function<void(std::byte* inout, const std::byte* in, std::size_t bytes)>;

}  // namespace blink
