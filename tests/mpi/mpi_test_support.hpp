// Small helpers shared by the GoogleTest suites that run under mpirun.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "blink/blink.h"
#include "runtime/memory_type.hpp"

namespace blink::test {

// MPI's twin of a Blink type; MPI_DATATYPE_NULL for fp16/bf16.
inline MPI_Datatype mpiType(blinkDataType_t t) {
  switch (t) {
    case blinkInt8:
      return MPI_INT8_T;
    case blinkUint8:
      return MPI_UINT8_T;
    case blinkInt16:
      return MPI_INT16_T;
    case blinkUint16:
      return MPI_UINT16_T;
    case blinkInt32:
      return MPI_INT32_T;
    case blinkUint32:
      return MPI_UINT32_T;
    case blinkInt64:
      return MPI_INT64_T;
    case blinkUint64:
      return MPI_UINT64_T;
    case blinkFloat32:
      return MPI_FLOAT;
    case blinkFloat64:
      return MPI_DOUBLE;
    default:
      return MPI_DATATYPE_NULL;
  }
}

// MPI's twin of a Blink op; MPI_OP_NULL for avg.
inline MPI_Op mpiOp(blinkRedOp_t op) {
  switch (op) {
    case blinkSum:
      return MPI_SUM;
    case blinkProd:
      return MPI_PROD;
    case blinkMin:
      return MPI_MIN;
    case blinkMax:
      return MPI_MAX;
    case blinkBand:
      return MPI_BAND;
    case blinkBor:
      return MPI_BOR;
    case blinkBxor:
      return MPI_BXOR;
    case blinkLand:
      return MPI_LAND;
    case blinkLor:
      return MPI_LOR;
    case blinkLxor:
      return MPI_LXOR;
    default:
      return MPI_OP_NULL;
  }
}

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
