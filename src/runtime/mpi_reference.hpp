// MPI's twins of Blink's datatypes and reduction ops, for code that runs the same call
// through PMPI as a reference to check or time Blink against: the MPI tests and
// perf/blink_perf's baseline. (The interposer maps the other way, in
// mpi_glue/eligibility.hpp.)
#pragma once

#include <mpi.h>

#include "blink/blink.h"

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

}  // namespace blink::runtime
