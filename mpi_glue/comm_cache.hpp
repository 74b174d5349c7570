// One Blink communicator per MPI communicator, created on the first call Blink
// takes on it and cached with MPI attribute caching: a keyval whose delete callback
// frees the Blink communicator when the MPI one is freed (MPI_Comm_free, or the
// deletion of MPI_COMM_WORLD's attributes at MPI_Finalize). Duplicates and splits
// get their own on first use (the keyval does not copy).
//
// Thread safety: the keyval is created once; attribute calls are MPI's own
// (thread-safe under MPI_THREAD_MULTIPLE); the list of live entries is guarded by
// a mutex. A communicator is only ever used by the thread inside a collective on
// it, and MPI already forbids two concurrent collectives on one communicator.
//
// Speed: an MPI attribute lookup costs a lock and a hash lookup, more than the rest
// of a small collective's bookkeeping, so each thread remembers the communicator it
// used last. Every freed entry (and releaseAll) starts a new generation, which
// forgets what every thread remembered: a freed handle that MPI reuses is looked up
// afresh.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "glue_support.hpp"

namespace blink::glue {

// The Blink communicator of `comm`, creating it (collectively: every rank reaches
// its first eligible call together) if needed; nullptr when Blink cannot run on it,
// a decision taken once, on every rank alike, and logged once on its rank 0.
BlinkComm* communicatorFor(MPI_Comm comm);

// Whether `comm` is the intra-communicator this thread used last (one that already
// has its entry, so MPI_Comm_test_inter need not be asked again).
bool isLastUsed(MPI_Comm comm);

// Frees every Blink communicator still alive (from the MPI_Finalize wrapper,
// before PMPI_Finalize, while MPI still works).
void releaseAll();

}  // namespace blink::glue
