// Small helpers shared by the GoogleTest suites that run under mpirun.
#pragma once

#include <mpi.h>

#include <cstdlib>
#include <string>

#include "runtime/memory_type.hpp"

namespace blink::test {

inline int worldRank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

inline int worldSize() {
  int s = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

// Collective over MPI_COMM_WORLD: whether Blink's calls first agree on the memory
// types of their buffers (runtime/memory_agreement.hpp), as where any rank has a
// CUDA driver. A peer that stays away from a call is then missed in that agreement,
// which cannot say which rank it waited for.
inline bool callsAgreeOnMemoryTypes() {
  int mine = blink::runtime::CudaDriver::process().usable() ? 1 : 0, any = 0;
  PMPI_Allreduce(&mine, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  return any != 0;
}

// Sets an environment variable for the lifetime of the object, then restores it
// (Blink reads its BLINK_* settings when a communicator is created).
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) saved_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (had_)
      setenv(name_, saved_.c_str(), 1);
    else
      unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::string saved_;
  bool had_ = false;
};

}  // namespace blink::test
