// Small helpers shared by the GoogleTest suites that run under mpirun.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "blink/blink.h"
#include "runtime/memory_type.hpp"
#include "runtime/mpi_reference.hpp"

namespace blink::test {

using runtime::mpiOp;
using runtime::mpiType;

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

// Distinct per rank, call and index, small enough that sums over the ranks of a
// test never overflow an int32.
inline std::vector<std::int32_t> callValues(int rank, int call, std::size_t count) {
  std::vector<std::int32_t> v(count);
  for (std::size_t i = 0; i < count; ++i) {
    v[i] = static_cast<std::int32_t>((static_cast<std::size_t>(rank) * 7919u +
                                      static_cast<std::size_t>(call) * 104729u + i * 31u) %
                                     2001u) -
           1000;
  }
  return v;
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
