// The references that the MPI tests and perf/blink_perf check or time Blink against:
// MPI's twins of Blink's datatypes and reduction ops, for running the same call
// through PMPI, and the exact reduction in double (and its storing in each type) for
// what MPI cannot check. (The
// interposer maps types and ops the other way, in mpi_glue/eligibility.hpp.)
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "blink/blink.h"
#include "runtime/reduce_cpu.hpp"

namespace blink::runtime {

// MPI's twin of a Blink type for arithmetic; MPI_DATATYPE_NULL for fp16/bf16.
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

// acc = op(acc, v), exact in double for the small inputs the checks use, for sum, avg
// (summed; exactAverage divides at the end), prod, min and max; other ops leave acc.
inline double exactCombine(double acc, double v, blinkRedOp_t op) {
  switch (op) {
    case blinkSum:
    case blinkAvg:
      return acc + v;
    case blinkProd:
      return acc * v;
    case blinkMin:
      return std::min(acc, v);
    case blinkMax:
      return std::max(acc, v);
    default:
      return acc;
  }
}

// avg's last step as Blink's divideBy takes it: the exact sum divided once in the
// type's own precision (float for fp16, bf16 and fp32).
inline double exactAverage(double sum, int ranks, blinkDataType_t t) {
  if (t == blinkFloat16 || t == blinkBfloat16 || t == blinkFloat32) {
    return static_cast<double>(static_cast<float>(sum) / static_cast<float>(ranks));
  }
  return sum / ranks;
}

// Stores `v`, an exact value, as one element of type `t` at `p`: integers wrap modulo
// 2^bits as C's unsigned arithmetic does (the low bytes of the value, little-endian);
// fp16 and bf16 are rounded once from float.
inline void storeExact(std::byte* p, blinkDataType_t t, double v) {
  auto put = [p](auto x) { std::memcpy(p, &x, sizeof(x)); };
  switch (t) {
    case blinkFloat16:
      put(floatToHalf(static_cast<float>(v)));
      break;
    case blinkBfloat16:
      put(floatToBfloat16(static_cast<float>(v)));
      break;
    case blinkFloat32:
      put(static_cast<float>(v));
      break;
    case blinkFloat64:
      put(v);
      break;
    default: {
      const auto w = static_cast<std::uint64_t>(static_cast<std::int64_t>(v));
      std::memcpy(p, &w, blinkDataTypeSize(t));
    }
  }
}

}  // namespace blink::runtime
