// What the collective tests share: the small integers each rank contributes (exact in
// every type whatever the reduction order), the exact oracle for what MPI cannot
// check, a Blink communicator over an MPI one, and an AllReduce checked against
// PMPI_Allreduce or that oracle.
#pragma once

#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "blink/blink.h"
#include "runtime/mpi_reference.hpp"
#include "runtime/reduce_cpu.hpp"

namespace collective_checks {

inline int commRank(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}
inline int commSize(MPI_Comm c) {
  int s = 0;
  MPI_Comm_size(c, &s);
  return s;
}

inline const blinkDataType_t kTypes[] = {blinkInt8,    blinkUint8,    blinkInt16,   blinkUint16,
                                         blinkInt32,   blinkUint32,   blinkInt64,   blinkUint64,
                                         blinkFloat16, blinkBfloat16, blinkFloat32, blinkFloat64};
inline const blinkRedOp_t kOps[] = {blinkSum, blinkProd, blinkMin, blinkMax, blinkAvg};

inline bool isFloat(blinkDataType_t t) {
  return t == blinkFloat16 || t == blinkBfloat16 || t == blinkFloat32 || t == blinkFloat64;
}

using blink::runtime::mpiOp;
using blink::runtime::mpiType;

// The value rank r contributes at index i, as a double (small integer).
inline double inputValue(int rank, std::size_t i, blinkRedOp_t op, blinkDataType_t t) {
  const auto h =
      static_cast<long long>((i * 2654435761u + static_cast<std::size_t>(rank) * 97u) % 17u);
  if (op == blinkProd) {
    static const double f[] = {1, 2, -1, 1, -2, 1, 1};
    double v = f[h % 7];
    return (t == blinkUint8 || t == blinkUint16 || t == blinkUint32 || t == blinkUint64)
               ? std::fabs(v)
               : v;
  }
  double v = static_cast<double>(h) - 8.0;  // -8..8
  if (t == blinkUint8 || t == blinkUint16 || t == blinkUint32 || t == blinkUint64) v += 8.0;
  return v;
}

inline void store(std::vector<std::byte>& buf, std::size_t i, blinkDataType_t t, double v) {
  blink::runtime::storeExact(buf.data() + i * blinkDataTypeSize(t), t, v);
}

inline std::vector<std::byte> inputs(int rank, std::size_t count, blinkDataType_t t,
                                     blinkRedOp_t op) {
  std::vector<std::byte> buf(count * blinkDataTypeSize(t));
  for (std::size_t i = 0; i < count; ++i) store(buf, i, t, inputValue(rank, i, op, t));
  return buf;
}

// The exact result of reducing every rank's inputValue at index i (for types MPI lacks,
// and for 8-bit sums, which Open MPI's AVX code saturates instead of wrapping).
inline std::vector<std::byte> oracle(int ranks, std::size_t count, blinkDataType_t t,
                                     blinkRedOp_t op, std::size_t first = 0) {
  std::vector<std::byte> buf(count * blinkDataTypeSize(t));
  for (std::size_t i = 0; i < count; ++i) {
    double acc = inputValue(0, first + i, op, t);
    for (int r = 1; r < ranks; ++r) {
      acc = blink::runtime::exactCombine(acc, inputValue(r, first + i, op, t), op);
    }
    if (op == blinkAvg) acc = blink::runtime::exactAverage(acc, ranks, t);
    store(buf, i, t, acc);  // integers wrap as C unsigned arithmetic does
  }
  return buf;
}

inline bool needsOracle(blinkDataType_t t, blinkRedOp_t op) {
  return mpiType(t) == MPI_DATATYPE_NULL || op == blinkAvg ||
         ((t == blinkInt8 || t == blinkUint8) && op == blinkSum);
}

inline std::string label(blinkDataType_t t, blinkRedOp_t op, std::size_t count) {
  return blink::runtime::toString(t) + " " + blink::runtime::toString(op) + " count " +
         std::to_string(count);
}

class Comm {
 public:
  explicit Comm(MPI_Comm mpi) : mpi_(mpi) {
    blinkResult_t rc = blinkCommInitFromMPI(&comm_, mpi);
    EXPECT_EQ(rc, blinkSuccess) << blinkGetLastError();
  }
  ~Comm() { blinkCommDestroy(comm_); }
  blinkComm_t get() const { return comm_; }
  MPI_Comm mpi() const { return mpi_; }

 private:
  MPI_Comm mpi_;
  blinkComm_t comm_ = nullptr;
};

// AllReduce of (t, op, count) checked against PMPI_Allreduce or the oracle.
inline void checkAllReduce(const Comm& comm, blinkDataType_t t, blinkRedOp_t op, std::size_t count,
                           bool in_place) {
  const int rank = commRank(comm.mpi()), n = commSize(comm.mpi());
  std::vector<std::byte> send = inputs(rank, count, t, op);
  std::vector<std::byte> recv(send.size(), std::byte{0x5a});
  if (in_place) recv = send;
  blinkResult_t rc =
      blinkAllReduce(in_place ? recv.data() : send.data(), recv.data(), count, t, op, comm.get());
  ASSERT_EQ(rc, blinkSuccess) << label(t, op, count) << ": " << blinkGetLastError();
  std::vector<std::byte> expected(send.size());
  if (needsOracle(t, op)) {
    expected = oracle(n, count, t, op);
  } else {
    PMPI_Allreduce(send.data(), expected.data(), static_cast<int>(count), mpiType(t), mpiOp(op),
                   comm.mpi());
  }
  ASSERT_EQ(std::memcmp(recv.data(), expected.data(), recv.size()), 0)
      << label(t, op, count) << (in_place ? " in place" : "");
}

}  // namespace collective_checks
