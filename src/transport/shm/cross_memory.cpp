#include "transport/shm/cross_memory.hpp"

#include <sys/uio.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/error.hpp"

namespace blink::transport {

void readPeerMemory(long pid, std::uint64_t remote_address, std::byte* to, std::size_t bytes,
                    int peer_rank) {
  std::size_t done = 0;
  while (done < bytes) {
    iovec local{to + done, bytes - done};
    iovec remote{reinterpret_cast<void*>(remote_address + done), bytes - done};
    const ssize_t got = process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      throw Error(blinkSystemError, "shared memory: reading " + std::to_string(bytes - done) +
                                        " bytes from rank " + std::to_string(peer_rank) + " (pid " +
                                        std::to_string(pid) + ") failed; has it exited? " +
                                        std::strerror(errno));
    }
    done += static_cast<std::size_t>(got);  // a partial read continues where it stopped
  }
}

bool canReadPeerWord(long pid, std::uint64_t word_address, std::uint64_t expected) {
  std::uint64_t word = 0;
  iovec local{&word, sizeof word};
  iovec remote{reinterpret_cast<void*>(word_address), sizeof word};
  return process_vm_readv(static_cast<pid_t>(pid), &local, 1, &remote, 1, 0) ==
             static_cast<ssize_t>(sizeof word) &&
         word == expected;
}

}  // namespace blink::transport
