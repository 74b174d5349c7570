// The direct path by cross-memory attach (node_collectives.hpp): every rank reads
// what it needs straight out of its peers' own buffers (cross_memory.hpp), so no
// byte is staged in shared memory. An AllReduce is
// a reduce-scatter and an all-gather done this way: rank r owns the r-th of n
// segments, reduces it from every peer's input into its output, and then every rank
// copies each owner's finished segment out of the owner's output. Per rank that is
// the least memory traffic an AllReduce can have (its input read once, the others'
// segments once each, its output written once), but every read is a system call
// that pins the peer's pages one by one: on some machines that costs more than the
// two plain copies of the staged path.
//
// Control lines in a small shared segment, one per rank, carry three counters:
// `posted` (the call whose buffer addresses the line holds), `reduced` (the call
// whose segment this rank has finished) and `done` (the call this rank has finished
// reading from the others). A rank returns only once every peer is done with its
// buffers, which the caller may then reuse.
//
// The communicator uses it where the staging area (shm_staged.hpp) is off or cannot
// be set up.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "algorithms/node_collectives.hpp"
#include "transport/shm/shm_segment.hpp"

namespace blink::algorithms {

class ShmDirect final : public NodeCollectives {
 public:
  // Collective over `node_comm` (not owned; ranks below are its ranks). Throws
  // blink::Error on every rank together when any rank cannot set up the control
  // lines or cannot read another rank's memory.
  ShmDirect(MPI_Comm node_comm, double timeout_seconds);

  void allReduce(const std::byte* in, std::byte* out, std::size_t bytes, std::size_t element_bytes,
                 const Combine& combine) override;
  // An AllReduce into `out` on every rank (the others' `out` is working space).
  void reduce(const std::byte* in, std::byte* out, std::size_t bytes, std::size_t element_bytes,
              const Combine& combine, int root) override;
  void reduceScatter(const std::byte* in, std::byte* out, std::size_t block_bytes,
                     const Combine& combine) override;
  void allGather(const std::byte* in, std::byte* out, std::size_t block_bytes) override;
  void broadcast(const std::byte* in, std::byte* out, std::size_t bytes, int root) override;
  std::string describe() const override;
  // Peers read every block of the input but the rank's own until the call ends.
  bool reduceScatterIntoInputStart() const override { return false; }

 private:
  struct alignas(64) Control {
    std::uint64_t posted;
    std::uint64_t in;  // addresses in the owner's address space, valid for call `posted`
    std::uint64_t out;
    char pad0[40];
    std::uint64_t reduced;
    char pad1[56];
    std::uint64_t done;
    char pad2[56];
  };
  static_assert(sizeof(Control) == 192);

  Control& control(int rank) const;
  void begin(const char* collective, std::size_t bytes);
  void post(const std::byte* in, const std::byte* out);
  // Waits until rank's counter `field` reaches the current call.
  void awaitCounter(int rank, std::uint64_t Control::*field, const char* what_for);
  std::uint64_t peerAddress(int rank, std::uint64_t Control::*field) const;
  // out[0, n) = mine[0, n) combined with every peer's input at `offset`, in pieces
  // that stay in cache.
  void reduceSegment(const std::byte* mine, std::byte* out, std::size_t offset, std::size_t n,
                     const Combine& combine);
  void read(int rank, std::uint64_t address, std::byte* to, std::size_t n) const;
  void publish(std::uint64_t Control::*field);
  // Marks this call done and waits until every peer is done with this rank's buffers.
  void finish();
  [[noreturn]] void timedOut(int rank, const char* what_for, double seconds) const;

  transport::ShmSegment segment_;
  int rank_ = 0;
  int size_ = 0;
  double timeout_seconds_ = 300.0;
  std::vector<long> pids_;
  std::uint64_t probe_word_;      // what the peers read to check that they can
  std::vector<std::byte> piece_;  // a peer's piece of a segment, before it is combined
  std::uint64_t call_ = 0;        // the call in progress (calls count from 1)
  const char* collective_ = "";
  std::size_t bytes_ = 0;
};

}  // namespace blink::algorithms
