// Copies into shared memory that another core will read next. Ordinary stores first
// fetch each line for ownership, which means invalidating the copy a peer still holds
// from reading the last round; where the two cores sit on different dies that costs
// about 30 ns per line, one after another (measured on an AMD EPYC VM: a 512 KiB
// staging copy took 250 us instead of 17). Non-temporal stores write whole lines
// without fetching them, so the copy runs at memory speed whatever the peer cached.
#pragma once

#include <cstddef>

namespace blink::transport {

// memcpy(to, from, bytes) with non-temporal stores where the CPU has them (x86-64);
// a plain memcpy elsewhere. The ranges must not overlap. Stores are complete (fenced)
// when it returns, so a release store after it publishes them.
void streamingCopy(std::byte* to, const std::byte* from, std::size_t bytes);

}  // namespace blink::transport
