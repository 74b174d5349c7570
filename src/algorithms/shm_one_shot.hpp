// One-shot collectives for small messages among the ranks of one node. Every rank
// posts its whole input on a board in shared memory and reads what the others
// posted: one synchronisation per call, where a tree plan pays one message latency
// per level (four in a row for a double binary tree at 4 ranks, each a chance to be
// descheduled when ranks outnumber cores). Each rank reads every input, so the
// path pays only for small messages (BLINK_ONE_SHOT_MAX_BYTES).
//
// The board: per rank two rings of slots used in turn, 64 slots for calls of at most
// 4 KiB and 4 of the whole capacity for larger ones, and a `done` counter (the last
// call it has finished reading) on a cache line of its own. A slot starts with its
// call's sequence number, written after the data, so a reader waits on the line that
// holds the first 56 bytes: a small call moves one cache line per peer, no flag line
// besides. A rank writes call k into slot k % D of its ring of depth D only once every
// peer is done with call k - D (the last call of that ring to use the slot was no
// later); it remembers what it saw of each peer's `done` (a peer that posted call k
// has finished k - 1), so in an AllReduce it never reads a `done` line at all. Every
// rank knows each call's bytes, so readers find the ring the writer took. The depth
// lets the root of a Broadcast, or the non-roots of a Reduce, which wait for nobody,
// run up to 64 small calls ahead of a descheduled reader (Open MPI's eager sends let
// a root run ahead without bound), in a few hundred KiB of shared memory per rank.
// Reductions run in rank order on every rank, so every rank gets the same bits.
//
// Every rank of the node must make the same one-shot calls in the same order (as
// MPI requires of collectives); every wait ends after the timeout with an error that
// names the rank waited for.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "algorithms/host_memory_model.hpp"
#include "common/combine.hpp"
#include "transport/shm/shm_segment.hpp"

namespace blink::algorithms {

class ShmOneShot {
 public:
  // Collective over `node_comm` (not owned; ranks below are its ranks). Messages up
  // to `capacity` bytes fit. Throws blink::Error on every rank together when any
  // rank cannot set up the board.
  ShmOneShot(MPI_Comm node_comm, std::size_t capacity, double timeout_seconds);

  std::size_t capacity() const { return capacity_; }

  // The cost model: what each rank writes to the board and reads from it in a call
  // of `bytes` (the whole buffer: size * block for AllGather and ReduceScatter) among
  // `ranks` ranks, `root` the plan rank of a rooted call. One synchronisation.
  static Traffic traffic(plan::Collective collective, std::uint64_t bytes, int ranks, int root);

  // `bytes` <= capacity() in each (for reduceScatter: size * block_bytes). `in` may
  // equal `out` (in place; for allGather `in` may be out + rank * block_bytes).
  void allReduce(const std::byte* in, std::byte* out, std::size_t bytes, const Combine& combine);
  // `in` is read on the root only.
  void broadcast(const std::byte* in, std::byte* out, std::size_t bytes, int root);
  // `out` is written on the root only.
  void reduce(const std::byte* in, std::byte* out, std::size_t bytes, const Combine& combine,
              int root);
  void allGather(const std::byte* in, std::byte* out, std::size_t block_bytes);
  // The blocks land in rank order in `out` on the root only (node_leaders.hpp).
  void gather(const std::byte* in, std::byte* out, std::size_t block_bytes, int root);
  // The root posts `bytes` (`in`, read on the root only); each rank copies the part
  // [at, at + part_bytes) of them, its own, to `out` (node_leaders.hpp).
  void scatter(const std::byte* in, std::size_t bytes, std::byte* out, std::size_t at,
               std::size_t part_bytes, int root);
  void reduceScatter(const std::byte* in, std::byte* out, std::size_t block_bytes,
                     const Combine& combine);

 private:
  struct alignas(64) Control {
    std::uint64_t done;
    char pad[56];
  };
  static_assert(sizeof(Control) == 64);

  Control& control(int rank) const;
  // How many calls apart a slot of the call in progress is reused (by its bytes).
  std::size_t depth() const;
  // Rank `rank`'s slot for `call` (of the call in progress's bytes): its sequence
  // number, then its data.
  std::uint64_t& sequence(int rank, std::uint64_t call) const;
  std::byte* slotData(int rank, std::uint64_t call) const;
  void begin(const char* collective, std::size_t bytes);
  void post(const std::byte* data, std::size_t bytes);
  const std::byte* await(int rank);
  void finish();
  [[noreturn]] void timedOut(int rank, const char* what_for, double seconds) const;

  transport::ShmSegment segment_;
  int rank_ = 0;
  int size_ = 0;
  std::size_t capacity_ = 0;
  std::size_t deep_slot_bytes_ = 0;  // a sequence number and the small calls' bytes, whole lines
  std::size_t slot_bytes_ = 0;       // the same for larger calls (0: capacity_ is small)
  double timeout_seconds_ = 300.0;
  unsigned full_spin_rounds_ = 0;         // spinRoundsFor(ranks of the node)
  unsigned spin_rounds_ = 0;              // the next wait's, adapted (see awaitCounter)
  std::vector<std::uint64_t> peer_done_;  // the last `done` seen of each peer
  std::uint64_t call_ = 0;                // the call in progress (calls count from 1)
  const char* collective_ = "";
  std::size_t bytes_ = 0;
};

}  // namespace blink::algorithms
