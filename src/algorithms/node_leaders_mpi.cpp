// NodeLeaders: the Mpi way, the MPI library's own collective among the node leaders
// (node_leaders.hpp says when it is taken).
#include <cstring>

#include "algorithms/node_leaders.hpp"
#include "common/error.hpp"

namespace blink::algorithms {

void NodeLeaders::setLeadersComm(MPI_Comm leaders) {
  leaders_comm_ = leaders;
  mpi_ready_ = true;
}

void NodeLeaders::useMpi(plan::Collective collective, bool use) {
  if (use && !mpi_ready_) {
    throw Error(blinkInternalError, "node leaders: MPI among the leaders without their comm");
  }
  use_mpi_[static_cast<std::size_t>(collective)] = use;
}

void NodeLeaders::setWholeComm(MPI_Comm whole) {
  whole_comm_ = whole;
}

void NodeLeaders::useMpiOnAll(plan::Collective collective, bool use) {
  if (use && whole_comm_ == MPI_COMM_NULL) {
    throw Error(blinkInternalError, "node leaders: MPI on every rank without the comm");
  }
  use_mpi_on_all_[static_cast<std::size_t>(collective)] = use;
}

bool NodeLeaders::mpiOnAll(plan::Collective collective, const char* name, const std::byte* in,
                           std::byte* out, std::size_t bytes, int root, const MpiReduction& mpi) {
  using plan::Collective;
  const bool reduces = collective == Collective::AllReduce || collective == Collective::Reduce ||
                       collective == Collective::ReduceScatter;
  if (!usesMpiOnAll(collective) || (reduces && mpi.type == MPI_DATATYPE_NULL)) return false;
  ++call_;
  collective_ = name;
  shape_ = Shape::Mpi;  // nothing of the transport's is used
  bytes_ = bytes;
  mpi_reduction_ = mpi;
  mpiOnCallersBuffers(collective, in, out, bytes, root, whole_comm_);
  return true;
}

void NodeLeaders::mpiOnCallersBuffers(plan::Collective collective, const std::byte* in,
                                      std::byte* out, std::size_t bytes, int root, MPI_Comm comm) {
  using plan::Collective;
  const MpiReduction& mpi = mpi_reduction_;
  const int rank = layout_.rank;
  const void* in_or_in_place = in == out ? MPI_IN_PLACE : static_cast<const void*>(in);
  switch (collective) {
    case Collective::AllReduce:
      mpiDone(PMPI_Allreduce(in_or_in_place, out, elements(bytes), mpi.type, mpi.op, comm),
              "MPI_Allreduce");
      break;
    case Collective::Broadcast:
      if (rank == root && out != in) std::memcpy(out, in, bytes);
      mpiDone(PMPI_Bcast(out, static_cast<int>(bytes), MPI_BYTE, root, comm), "MPI_Bcast");
      break;
    case Collective::Reduce:
      mpiDone(PMPI_Reduce(rank == root ? in_or_in_place : in, rank == root ? out : nullptr,
                          elements(bytes), mpi.type, mpi.op, root, comm),
              "MPI_Reduce");
      break;
    case Collective::AllGather: {  // in place: the rank's block already at its place in `out`
      const bool in_place = in == out + static_cast<std::size_t>(rank) * bytes;
      const int count = static_cast<int>(bytes);
      mpiDone(
          PMPI_Allgather(in_place ? MPI_IN_PLACE : in, count, MPI_BYTE, out, count, MPI_BYTE, comm),
          "MPI_Allgather");
      break;
    }
    case Collective::ReduceScatter:  // in place: the input in `out`, the block at its start
      mpiDone(
          PMPI_Reduce_scatter_block(in_or_in_place, out, elements(bytes), mpi.type, mpi.op, comm),
          "MPI_Reduce_scatter_block");
      break;
  }
}

int NodeLeaders::elements(std::size_t bytes) const {
  return static_cast<int>(bytes / static_cast<std::size_t>(mpi_reduction_.element_bytes));
}

void NodeLeaders::mpiDone(int status, const char* what) const {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int length = 0;
  PMPI_Error_string(status, text, &length);
  throw Error(blinkSystemError, std::string("node leaders: ") + what + " among the leaders (" +
                                    collective_ + "): " + text);
}

void NodeLeaders::mpiReduceScatter(std::byte* out, std::size_t block_bytes) {
  // MPI's reduce-scatter among the leaders gives each leader only its node's blocks
  // (an AllReduce of the whole buffer, as the other shapes do, moves and sums the
  // other nodes' blocks too); equal nodes take the block form. It splits its input in node order,
  // so the blocks go in node order first where the ranks of a node are not consecutive in the comm.
  const std::size_t node_bytes = static_cast<std::size_t>(local_size_) * block_bytes;
  if (leader()) {
    const std::byte* in = work_a_.data();
    if (!ranks_in_node_order_) {
      for (std::size_t r = 0; r < layout_.node_of_rank.size(); ++r) {
        const auto n = static_cast<std::size_t>(layout_.node_of_rank[r]);
        const std::size_t at =
            first_block_[n] + static_cast<std::size_t>(layout_.local_rank_of_rank[r]);
        std::memcpy(work_b_.data() + at * block_bytes, in + r * block_bytes, block_bytes);
      }
      in = work_b_.data();
    }
    const auto per_element = static_cast<std::size_t>(mpi_reduction_.element_bytes);
    gather_counts_.resize(static_cast<std::size_t>(nodes_));
    for (std::size_t n = 0; n < gather_counts_.size(); ++n) {
      gather_counts_[n] =
          static_cast<int>(static_cast<std::size_t>(ranks_on_[n]) * block_bytes / per_element);
    }
    if (equal_nodes_) {  // the block form, as tuned as MPI_Allgather is against its v form
      mpiDone(PMPI_Reduce_scatter_block(in, packed_.data(), gather_counts_[0], mpi_reduction_.type,
                                        mpi_reduction_.op, leaders_comm_),
              "MPI_Reduce_scatter_block");
    } else {
      mpiDone(PMPI_Reduce_scatter(in, packed_.data(), gather_counts_.data(), mpi_reduction_.type,
                                  mpi_reduction_.op, leaders_comm_),
              "MPI_Reduce_scatter");
    }
  }
  if (alone()) {
    std::memcpy(out, packed_.data(), block_bytes);
  } else {  // the node's blocks are in local rank order
    board_->scatter(leader() ? packed_.data() : nullptr, node_bytes, out,
                    static_cast<std::size_t>(local_rank_) * block_bytes, block_bytes, 0);
  }
}

}  // namespace blink::algorithms
