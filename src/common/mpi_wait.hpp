// Blink's own MPI collectives (bootstrap, plan agreement, stream set-up) are
// nonblocking and waited for with a deadline, like every other wait: a rank that
// never arrives ends in blinkTimeout, not a hang inside MPI.
#pragma once

#include <mpi.h>

#include <string>

#include "blink/blink.h"

namespace blink {

// Waits for `request` with the Backoff policy; throws blink::Error(blinkTimeout)
// naming `what` after `timeout_seconds` without completion (the request is then
// left to MPI: a collective cannot be cancelled).
void waitWithin(MPI_Request& request, double timeout_seconds, const std::string& what);

// PMPI_Iallreduce + waitWithin.
void allreduceWithin(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op,
                     MPI_Comm comm, double timeout_seconds, const std::string& what);

// Whether `ok` holds on every rank of `comm` (collective; the same answer everywhere).
bool everyRankOk(bool ok, MPI_Comm comm, double timeout_seconds, const std::string& stage);

// Every rank learns whether every rank got through `stage`: throws CollectiveError
// on every rank where any failed (`failure`: this rank's error, or null), with this
// rank's message where it failed itself, else `others_status` and a message saying
// that another rank failed.
class Error;
void agreeAllOk(MPI_Comm comm, const Error* failure, const std::string& stage,
                double timeout_seconds, blinkResult_t others_status = blinkSystemError);

// PMPI_Iallgather + waitWithin.
void allgatherWithin(const void* send, int count, MPI_Datatype type, void* recv, MPI_Comm comm,
                     double timeout_seconds, const std::string& what);

}  // namespace blink
