// The interposed collectives of libblink_mpi.so. Each decides whether Blink takes
// the call from what MPI guarantees equal on every rank (the collective, root, op,
// communicator and the datatype's signature, see type_signature.hpp), never from a
// rank's datatype handle, layout, buffer or MPI_IN_PLACE, so every rank decides
// alike; otherwise it calls its PMPI_* twin with the caller's arguments unchanged.
// Layouts with gaps are staged through a scratch buffer (staging.hpp).
// Once Blink has taken a call, a failure goes to the communicator's MPI error
// handler (as an MPI error would), except a failure every rank met together
// before any data moved, which hands the call to the MPI library instead; device
// buffers Blink cannot move go to the library only where it is CUDA-aware, else
// MPI_ERR_BUFFER (cuda_aware.hpp).
#include "interpose_common.hpp"

using blink::glue::Coll;
using blink::glue::Fallback;
using blink::glue::runOnBlink;
using blink::glue::ScratchLease;
using blink::glue::stageable;
using blink::glue::state;

extern "C" int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm) {
  blink::glue::Reduction r;
  auto why = blink::glue::reductionChecks(Coll::Allreduce, comm, count, datatype, op, r);
  if (!why && !blink::glue::everyRankCanStage(comm, r.bytes, stageable(r.info))) {
    why = Fallback::Arguments;
  }
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  if (!why) {
    if (auto rc = runOnBlink(Coll::Allreduce, comm, r.bytes, [&](auto& c) {
          blink::glue::stagedAllreduce(r, in, recvbuf, count, datatype, comm,
                                       [&](const void* from, void* to) {
                                         c.allReduce(from, to, r.elements(), r.type, r.op);
                                       });
        })) {
      return *rc;
    }
    why = Fallback::Unavailable;  // or PlanFailed: runOnBlink counted which
  } else {
    state().fellBack(Coll::Allreduce, *why);
  }
  if (blink::glue::reduceAsElements(r, *why)) {
    int rc = MPI_SUCCESS;
    return blink::glue::asMpiCall(comm, [&] {
      blink::glue::stagedAllreduce(
          r, in, recvbuf, count, datatype, comm, [&](const void* from, void* to) {
            rc = PMPI_Allreduce(blink::glue::inPlaceFor(from, to), to,
                                static_cast<int>(r.elements()), r.info.element, op, comm);
          });
      return rc;
    });
  }
  return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
}

extern "C" int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, int root, MPI_Comm comm) {
  blink::glue::Reduction r;
  auto why = blink::glue::reductionChecks(Coll::Reduce, comm, count, datatype, op, r);
  if (!why && !blink::glue::validRoot(root, comm)) why = Fallback::Arguments;
  if (!why && !blink::glue::everyRankCanStage(comm, r.bytes, stageable(r.info))) {
    why = Fallback::Arguments;
  }
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  if (!why) {
    if (auto rc = runOnBlink(Coll::Reduce, comm, r.bytes, [&](auto& c) {
          blink::glue::stagedReduce(r, in, recvbuf, count, datatype, c.rank() == root, comm,
                                    [&](const void* from, void* to) {
                                      c.reduce(from, to, r.elements(), r.type, r.op, root);
                                    });
        })) {
      return *rc;
    }
    why = Fallback::Unavailable;  // or PlanFailed: runOnBlink counted which
  } else {
    state().fellBack(Coll::Reduce, *why);
  }
  if (blink::glue::reduceAsElements(r, *why) && blink::glue::validRoot(root, comm)) {
    int rank = 0, rc = MPI_SUCCESS;
    PMPI_Comm_rank(comm, &rank);
    return blink::glue::asMpiCall(comm, [&] {
      blink::glue::stagedReduce(
          r, in, recvbuf, count, datatype, rank == root, comm, [&](const void* from, void* to) {
            rc = PMPI_Reduce(rank == root ? blink::glue::inPlaceFor(from, to) : from,
                             rank == root ? to : nullptr, static_cast<int>(r.elements()),
                             r.info.element, op, root, comm);
          });
      return rc;
    });
  }
  return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
}

extern "C" int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  blink::glue::Reduction r;
  auto why =
      blink::glue::reductionChecks(Coll::ReduceScatterBlock, comm, recvcount, datatype, op, r);
  if (!why && !blink::glue::allBlocks(r.bytes, comm)) why = Fallback::Arguments;
  if (!why && !blink::glue::everyRankCanStage(comm, r.bytes, stageable(r.info))) {
    why = Fallback::Arguments;
  }
  // With MPI_IN_PLACE the input is the whole of recvbuf and the result lands at
  // its start; Blink reads all of its input before it writes the result.
  const void* in = sendbuf == MPI_IN_PLACE ? recvbuf : sendbuf;
  if (!why) {
    if (auto rc = runOnBlink(Coll::ReduceScatterBlock, comm, r.bytes, [&](auto& c) {
          blink::glue::stagedReduceScatter(r, in, recvbuf, recvcount, datatype, comm,
                                           [&](const void* from, void* to) {
                                             c.reduceScatter(from, to, r.elements(), r.type, r.op);
                                           });
        })) {
      return *rc;
    }
    why = Fallback::Unavailable;  // or PlanFailed: runOnBlink counted which
  } else {
    state().fellBack(Coll::ReduceScatterBlock, *why);
  }
  if (blink::glue::reduceAsElements(r, *why)) {
    int rc = MPI_SUCCESS;
    return blink::glue::asMpiCall(comm, [&] {
      blink::glue::stagedReduceScatter(
          r, in, recvbuf, recvcount, datatype, comm, [&](const void* from, void* to) {
            rc =
                PMPI_Reduce_scatter_block(blink::glue::inPlaceFor(from, to), to,
                                          static_cast<int>(r.elements()), r.info.element, op, comm);
          });
      return rc;
    });
  }
  return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
}

extern "C" int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  blink::glue::TypeInfo info;
  std::uint64_t bytes = 0;
  auto why = blink::glue::movementChecks(Coll::Bcast, comm, count, datatype, info, bytes);
  if (!why && !blink::glue::validRoot(root, comm)) why = Fallback::Arguments;
  if (!why && !blink::glue::everyRankCanStage(comm, bytes, stageable(info))) {
    why = Fallback::Arguments;
  }
  if (!why) {
    if (auto rc = runOnBlink(Coll::Bcast, comm, bytes, [&](auto& c) {
          if (info.contiguous) {
            c.broadcast(buffer, buffer, static_cast<std::size_t>(bytes), blinkUint8, root);
            return;
          }
          ScratchLease scratch;
          std::byte* work = scratch.get(bytes);
          if (c.rank() == root) blink::glue::pack(buffer, count, datatype, info, work, comm);
          c.broadcast(work, work, static_cast<std::size_t>(bytes), blinkUint8, root);
          if (c.rank() != root) blink::glue::unpack(work, buffer, count, datatype, info, comm);
        })) {
      return *rc;
    }
  } else {
    state().fellBack(Coll::Bcast, *why);
  }
  return PMPI_Bcast(buffer, count, datatype, root, comm);
}

extern "C" int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                             void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  // Everything that decides comes from the receive side, whose signature is the
  // same on every rank; the send side (type, count, MPI_IN_PLACE) may differ per
  // rank and only says how this rank's block is read.
  blink::glue::TypeInfo recv;
  std::uint64_t block = 0, all = 0;
  auto why = blink::glue::movementChecks(Coll::Allgather, comm, recvcount, recvtype, recv, block);
  if (!why) {
    if (auto total = blink::glue::allBlocks(block, comm)) {
      all = *total;
    } else {
      why = Fallback::Arguments;
    }
  }
  const bool in_place = sendbuf == MPI_IN_PLACE;
  blink::glue::TypeInfo send;
  if (!why && !in_place) blink::glue::describe(sendtype, send);
  if (!why && !blink::glue::everyRankCanStage(comm, block,
                                              stageable(recv) && (in_place || stageable(send)))) {
    why = Fallback::Arguments;
  }
  if (!why) {
    if (auto rc = runOnBlink(Coll::Allgather, comm, block, [&](auto& c) {
          const auto me = static_cast<MPI_Aint>(c.rank());
          if (!in_place && blink::glue::signatureBytes(sendcount, send) != block) {
            throw blink::glue::Error(blinkInvalidArgument,
                                     "the send buffer's signature does not match a receive block");
          }
          // This rank's block in recvbuf, where MPI_IN_PLACE keeps it.
          const void* own = blink::glue::offsetBy(recvbuf, me * recvcount * recv.extent);
          ScratchLease scratch;
          if (recv.contiguous) {
            const void* in = own;
            if (!in_place && send.contiguous) {
              in = sendbuf;
            } else if (!in_place) {
              std::byte* packed = scratch.get(block);
              blink::glue::pack(sendbuf, sendcount, sendtype, send, packed, comm);
              in = packed;
            }
            c.allGather(in, recvbuf, static_cast<std::size_t>(block), blinkUint8);
            return;
          }
          std::byte* work = scratch.get(all);
          std::byte* mine = work + static_cast<std::uint64_t>(me) * block;
          if (in_place) {
            blink::glue::pack(own, recvcount, recvtype, recv, mine, comm);
          } else {
            blink::glue::pack(sendbuf, sendcount, sendtype, send, mine, comm);
          }
          c.allGather(mine, work, static_cast<std::size_t>(block), blinkUint8);
          // Block i lands at i * recvcount * extent, as MPI_Allgather places it.
          blink::glue::unpack(work, recvbuf, static_cast<MPI_Count>(recvcount) * c.size(), recvtype,
                              recv, comm);
        })) {
      return *rc;
    }
  } else {
    state().fellBack(Coll::Allgather, *why);
  }
  return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
}

// ---- The collectives Blink builds from the ones above ----------------------------
//
// Blink's runtime has no gather or vector algorithms of its own: Allgatherv and
// Gather(v) run as one Blink AllGather of equal blocks, each as large as the largest
// (the shorter ones padded), and Reduce_scatter as one ReduceScatter of padded blocks
// or, where padding would more than double the data, an AllReduce of the whole
// input. Each underlying call is planned and chosen like any other of its size.
// Gather(v) delivers every block to every rank and keeps them on the root only.

// Nonblocking collectives stay MPI's: running one to completion inside the call
// could deadlock a legal program (one that posts MPI_Iallreduce, then a send its
// peer must receive before posting its own), and completing it later would need a
// progress engine of Blink's own. They are counted, so the accounting shows them.
extern "C" int MPI_Iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm, MPI_Request* request) {
  state().fellBack(Coll::Iallreduce, state().enabled.load(std::memory_order_relaxed)
                                         ? Fallback::Nonblocking
                                         : Fallback::Disabled);
  return PMPI_Iallreduce(sendbuf, recvbuf, count, datatype, op, comm, request);
}

extern "C" int MPI_Ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                          MPI_Request* request) {
  state().fellBack(Coll::Ibcast, state().enabled.load(std::memory_order_relaxed)
                                     ? Fallback::Nonblocking
                                     : Fallback::Disabled);
  return PMPI_Ibcast(buffer, count, datatype, root, comm, request);
}
