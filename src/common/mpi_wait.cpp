#include "common/mpi_wait.hpp"

#include "common/backoff.hpp"
#include "common/error.hpp"

namespace blink {

void waitWithin(MPI_Request& request, double timeout_seconds, const std::string& what) {
  Backoff backoff(timeout_seconds);
  for (;;) {
    int done = 0;
    if (PMPI_Test(&request, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      throw Error(blinkSystemError, what + ": MPI_Test failed");
    }
    if (done) return;
    if (!backoff.idle()) {
      throw Error(blinkTimeout, what + ": not every rank arrived within " +
                                    std::to_string(static_cast<int>(timeout_seconds)) +
                                    " s (BLINK_TIMEOUT_S); is a rank dead or in another call?");
    }
  }
}

void allreduceWithin(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                     MPI_Comm comm, double timeout_seconds, const std::string& what) {
  MPI_Request request = MPI_REQUEST_NULL;
  if (PMPI_Iallreduce(send, recv, count, type, op, comm, &request) != MPI_SUCCESS) {
    throw Error(blinkSystemError, what + ": MPI_Iallreduce failed");
  }
  waitWithin(request, timeout_seconds, what);
}

void allgatherWithin(const void* send, int count, MPI_Datatype type, void* recv, MPI_Comm comm,
                     double timeout_seconds, const std::string& what) {
  MPI_Request request = MPI_REQUEST_NULL;
  if (PMPI_Iallgather(send, count, type, recv, count, type, comm, &request) != MPI_SUCCESS) {
    throw Error(blinkSystemError, what + ": MPI_Iallgather failed");
  }
  waitWithin(request, timeout_seconds, what);
}

bool everyRankOk(bool ok, MPI_Comm comm, double timeout_seconds, const std::string& stage) {
  int mine = ok ? 1 : 0, all = 0;
  allreduceWithin(&mine, &all, 1, MPI_INT, MPI_MIN, comm, timeout_seconds, stage);
  return all == 1;
}

void agreeAllOk(MPI_Comm comm, const Error* failure, const std::string& stage,
                double timeout_seconds, blinkResult_t others_status) {
  const bool all_ok = everyRankOk(failure == nullptr, comm, timeout_seconds, stage);
  if (failure != nullptr) throw CollectiveError(failure->status(), failure->what());
  if (!all_ok) {
    throw CollectiveError(others_status, stage + " failed on another rank (see its error message)");
  }
}

}  // namespace blink
