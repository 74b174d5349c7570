// MPI_Init / MPI_Init_thread / MPI_Finalize wrappers of libblink_mpi.so: the points
// where Blink validates its configuration and reports on itself. Everything is
// forwarded to the PMPI twin with the caller's arguments; MPI's result is returned.
#include <mpi.h>

#include <string>

#include "comm_cache.hpp"
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
    blink::glue::configure();
  } catch (const blink::Error& e) {
    // A bad setting must be seen even with BLINK_DEBUG=NONE; the job still runs,
    // on the MPI library's own collectives.
    blink::log::write(blink::log::Level::Warn,
                      std::string(e.what()) + "; Blink is disabled for this job");
    blink::glue::state().enabled = false;
  }
  if (rank == 0) {
    const auto& s = blink::glue::state();
    std::string thresholds;
    for (std::size_t c = 0; c < blink::glue::kNumColls; ++c) {
      thresholds += std::string(thresholds.empty() ? "" : ",") +
                    blink::glue::name(static_cast<blink::glue::Coll>(c)) + "=" +
                    std::to_string(s.min_bytes[c]);
    }
    BLINK_LOG(Info, blinkGetBuildInfo()
                        << " interposing MPI_Allreduce, MPI_Bcast, MPI_Reduce, MPI_Allgather, "
                           "MPI_Reduce_scatter_block ("
                        << (s.enabled ? "enabled" : "disabled: every call goes to PMPI")
                        << "; minimum bytes " << thresholds << ")");
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
  if (rank == 0 && blink::log::enabled(blink::log::Level::Info)) {
    // What Blink took and what it left to MPI, per collective, in a form scripts parse.
    std::string report = blink::glue::accountingReport();
    std::size_t at = 0;
    while (at < report.size()) {
      std::size_t end = report.find('\n', at);
      blink::log::write(blink::log::Level::Info, report.substr(at, end - at));
      at = end == std::string::npos ? report.size() : end + 1;
    }
    BLINK_LOG(Info, "MPI_Finalize: Blink shutting down");
  }
  blink::glue::releaseAll();
  return PMPI_Finalize();
}
