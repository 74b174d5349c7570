// Checks of an NCCL topology XML's text before it is parsed: what the JSON writer and
// Boost's recursive XML parser cannot take must be rejected with a clear error first.
#pragma once

#include <cstddef>
#include <string_view>

namespace blink::topo {

// The offset of the first byte that is not well-formed UTF-8 (RFC 3629), or npos.
std::size_t firstInvalidUtf8(std::string_view text);

// Elements may nest at most this deep.
constexpr int kMaxXmlDepth = 64;

// The offset of the first element nested deeper than kMaxXmlDepth, or npos.
std::size_t firstTooDeep(std::string_view xml);

}  // namespace blink::topo
