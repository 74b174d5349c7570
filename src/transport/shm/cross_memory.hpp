// Reading another process's memory with Linux cross-memory attach (process_vm_readv):
// one copy from the peer's buffer into ours, where shared memory needs two (into a
// shared slot, out of it). The kernel allows it between processes of one user unless
// ptrace rules (Yama) or a seccomp filter forbid it, so users of it probe first.
#pragma once

#include <cstddef>
#include <cstdint>

namespace blink::transport {

// Copies `bytes` from `remote_address` in process `pid` to `to`. Throws
// blink::Error(blinkSystemError) naming `peer_rank` (a rank, for the message) when
// the kernel refuses, e.g. because the peer has exited.
void readPeerMemory(long pid, std::uint64_t remote_address, std::byte* to, std::size_t bytes,
                    int peer_rank);

// Whether this process can read the 8-byte word at `word_address` of `pid` and finds
// `expected` there. errno says why not.
bool canReadPeerWord(long pid, std::uint64_t word_address, std::uint64_t expected);

}  // namespace blink::transport
