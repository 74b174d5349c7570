// MPI_Init / MPI_Init_thread / MPI_Finalize wrappers of libblink_mpi.so: the points
// where Blink validates its configuration and reports on itself. Everything is
// forwarded to the PMPI twin with the caller's arguments; MPI's result is returned.
#include <mpi.h>

#include "common/env.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "glue_state.hpp"

namespace {

void afterInit() {
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  blink::log::setRankLabel(rank);
  try {
    blink::env::validateAll();
  } catch (const blink::Error& e) {
    // A bad setting must be seen even with BLINK_DEBUG=NONE; the job still runs,
    // on the MPI library's own collectives.
    blink::log::write(blink::log::Level::Warn,
                      std::string(e.what()) + "; Blink is disabled for this job");
    blink::glue::state().enabled = false;
  }
  if (rank == 0) {
    BLINK_LOG(Info, blinkGetBuildInfo()
                        << " interposing MPI collectives ("
                        << (blink::glue::state().enabled ? "enabled" : "disabled") << ")");
  }
}

}  // namespace

extern "C" int MPI_Init(int* argc, char*** argv) {
  int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS) afterInit();
  return rc;
}

extern "C" int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS) afterInit();
  return rc;
}

extern "C" int MPI_Finalize(void) {
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) BLINK_LOG(Info, "MPI_Finalize: Blink shutting down");
  return PMPI_Finalize();
}
