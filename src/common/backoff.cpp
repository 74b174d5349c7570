#include "common/backoff.hpp"

#include <mpi.h>
#include <sched.h>

#include <sstream>
#include <thread>

#include "common/error.hpp"

namespace blink {
namespace {

// Spins cover a peer that is running on another core right now; yields cover a
// peer that needs our core; naps stop a long wait from burning a core that an
// oversubscribed job's other ranks need.
constexpr unsigned kYieldRounds = 20000;  // tens of milliseconds of yielding before naps
constexpr auto kNap = std::chrono::microseconds(20);

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// One pass of MPI's progress engine, where this thread may call MPI now (never
// before MPI_Init or after MPI_Finalize, nor, under MPI_THREAD_FUNNELED or SINGLE,
// from a thread other than the main one). An Iprobe only looks: it receives nothing.
void progressMpi() {
  int initialized = 0, finalized = 0;
  PMPI_Initialized(&initialized);
  PMPI_Finalized(&finalized);
  if (initialized == 0 || finalized != 0) return;
  int level = MPI_THREAD_SINGLE, main_thread = 0;
  PMPI_Query_thread(&level);
  PMPI_Is_thread_main(&main_thread);
  if (level < MPI_THREAD_SERIALIZED && main_thread == 0) return;
  int found = 0;
  PMPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_SELF, &found, MPI_STATUS_IGNORE);
}

}  // namespace

unsigned spinRoundsFor(int ranks_on_node) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  const int cores = sched_getaffinity(0, sizeof(allowed), &allowed) == 0 ? CPU_COUNT(&allowed) : 0;
  return cores > 0 && ranks_on_node > cores ? kOversubscribedSpinRounds : kSpinRounds;
}

Backoff::Backoff(double timeout_seconds, unsigned spin_rounds)
    : timeout_(std::chrono::duration_cast<std::chrono::nanoseconds>(
          std::chrono::duration<double>(timeout_seconds))),
      spin_rounds_(spin_rounds) {}

bool Backoff::idle() {
  ++idle_rounds_;
  if (idle_rounds_ <= spin_rounds_) {
    cpuRelax();
    return true;
  }
  // The clock is read only off the spinning path.
  if (!clock_started_) {
    last_progress_ = Clock::now();
    last_mpi_progress_ = last_progress_;
    clock_started_ = true;
  }
  if (idle_rounds_ <= spin_rounds_ + kYieldRounds) {
    sched_yield();
  } else {
    std::this_thread::sleep_for(kNap);
  }
  const Clock::time_point now = Clock::now();
  if (now - last_mpi_progress_ >= kMpiProgressEvery) {
    progressMpi();
    last_mpi_progress_ = now;
  }
  return now - last_progress_ < timeout_;
}

double Backoff::secondsSinceProgress() const {
  if (!clock_started_) return 0.0;
  return std::chrono::duration<double>(Clock::now() - last_progress_).count();
}

void throwPeerTimeout(const char* collective, std::size_t bytes, const char* path,
                      std::uint64_t call, int rank, int peer, const char* what_for,
                      double seconds) {
  std::ostringstream out;
  out << collective << " of " << bytes << " bytes (" << path << ", call " << call << "): rank "
      << rank << " saw no progress for " << static_cast<int>(seconds)
      << " s (BLINK_TIMEOUT_S); waiting for rank " << peer << " " << what_for
      << "; is that rank alive and calling the same collective?";
  throw Error(blinkTimeout, out.str());
}

}  // namespace blink
