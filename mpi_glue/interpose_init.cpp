// MPI_Init / MPI_Init_thread / MPI_Finalize wrappers of libblink_mpi.so: the points
// where Blink validates its configuration, agrees it across ranks and reports on
// itself. Everything is forwarded to the PMPI twin with the caller's arguments;
// MPI's result is returned.
#include <mpi.h>

#include <array>
#include <cstdint>
#include <string>

#include "comm_cache.hpp"
#include "cuda_aware.hpp"
#include "glue_state.hpp"
#include "glue_support.hpp"

namespace {

// Every rank reads its own environment, but a call must take Blink on all ranks or
// none: a rank with BLINK_MPI_DISABLE=1, another threshold or an invalid BLINK_*
// value would wait in MPI while the others wait in Blink. So the ranks agree once,
// with one PMPI allreduce over MPI_COMM_WORLD (the maximum of each value and of its
// complement, i.e. its maximum and minimum), and any difference disables Blink on
// every rank. The same reduction agrees whether the MPI library is CUDA-aware: only
// where every rank's is (a difference does not disable Blink).
void agreeAcrossRanks(int rank, const blink::glue::CudaAwareness& cuda) {
  auto& s = blink::glue::state();
  constexpr std::size_t kSettings = 1 + blink::glue::kNumColls;
  constexpr std::size_t kValues = kSettings + 1;  // + CUDA-aware
  std::array<std::uint64_t, 2 * kValues> mine{}, all{};
  mine[0] = s.enabled ? 1 : 0;
  for (std::size_t c = 0; c < blink::glue::kNumColls; ++c) mine[1 + c] = s.min_bytes[c];
  mine[kSettings] = cuda.aware ? 1 : 0;
  for (std::size_t i = 0; i < kValues; ++i) mine[kValues + i] = ~mine[i];
  std::string differs;
  s.mpi_cuda_aware = false;
  s.mpi_cuda_aware_why = cuda.why;
  if (PMPI_Allreduce(mine.data(), all.data(), static_cast<int>(all.size()), MPI_UINT64_T, MPI_MAX,
                     MPI_COMM_WORLD) != MPI_SUCCESS) {
    differs = "their settings (MPI_Allreduce failed)";
  } else {
    s.mpi_cuda_aware = ~all[kValues + kSettings] == 1;  // the minimum
    if (cuda.aware && !s.mpi_cuda_aware) s.mpi_cuda_aware_why = "another rank's MPI is not";
    if (all[0] != ~all[kValues]) {
      differs = "BLINK_MPI_DISABLE (or some rank has an invalid BLINK_* setting)";
    } else {
      for (std::size_t i = 1; i < kSettings && all[0] == 1; ++i) {
        if (all[i] != ~all[kValues + i]) differs = "BLINK_MPI_MIN_BYTES";
      }
    }
  }
  if (differs.empty()) return;
  s.enabled = false;
  if (rank == 0) {
    blink::glue::log::write(blink::glue::log::Level::Warn,
                            "the ranks of MPI_COMM_WORLD disagree on " + differs +
                                "; Blink is disabled for this job on every rank");
  }
}

void afterInit() {
  int rank = 0;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  blink::glue::log::setRankLabel(rank);
  try {
    blink::glue::validateSettings();
    blink::glue::configure();
  } catch (const blink::glue::Error& e) {
    // A bad setting must be seen even with BLINK_DEBUG=NONE; the job still runs,
    // on the MPI library's own collectives.
    blink::glue::log::write(blink::glue::log::Level::Warn,
                            std::string(e.what()) + "; Blink is disabled for this job");
    blink::glue::state().enabled = false;
  }
  agreeAcrossRanks(rank, blink::glue::queryCudaAwareness());
  if (rank == 0) {
    const auto& s = blink::glue::state();
    std::string thresholds;
    for (std::size_t c = 0; c < blink::glue::kNumColls; ++c) {
      thresholds += std::string(thresholds.empty() ? "" : ",") +
                    blink::glue::name(static_cast<blink::glue::Coll>(c)) + "=" +
                    std::to_string(s.min_bytes[c]);
    }
    GLUE_LOG(Info, blinkGetBuildInfo()
                       << " interposing MPI_Allreduce, MPI_Bcast, MPI_Reduce, MPI_Allgather, "
                          "MPI_Reduce_scatter_block ("
                       << (s.enabled ? "enabled" : "disabled: every call goes to PMPI")
                       << "; minimum bytes " << thresholds << "; the MPI library is "
                       << (s.mpi_cuda_aware ? "" : "not ") << "CUDA-aware: " << s.mpi_cuda_aware_why
                       << ")");
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
  if (rank == 0 && blink::glue::log::enabled(blink::glue::log::Level::Info)) {
    // What Blink took and what it left to MPI, per collective, in a form scripts parse.
    std::string report = blink::glue::accountingReport();
    std::size_t at = 0;
    while (at < report.size()) {
      std::size_t end = report.find('\n', at);
      blink::glue::log::write(blink::glue::log::Level::Info, report.substr(at, end - at));
      at = end == std::string::npos ? report.size() : end + 1;
    }
    GLUE_LOG(Info, "MPI_Finalize: Blink shutting down");
  }
  blink::glue::releaseAll();
  return PMPI_Finalize();
}
