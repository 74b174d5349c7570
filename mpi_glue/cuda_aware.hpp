// Whether the MPI library under the interposer takes CUDA device buffers itself.
// A call on device buffers that Blink cannot move (no device data path: no GPU or
// driver, BLINK_DEVICE=OFF, memory of another device, managed memory, a CUDA error
// while setting up the path) is handed to PMPI_* only when the library is
// CUDA-aware; else a non-CUDA-aware MPI would dereference device pointers on the
// host (a crash, or wrong bytes), so the call fails with MPI_ERR_BUFFER instead.
#pragma once

#include <string>

namespace blink::glue {

struct CudaAwareness {
  bool aware = false;
  std::string why;  // "MPIX_Query_cuda_support() = 0", "BLINK_MPI_CUDA_AWARE=1", ...
};

// This rank's view (after MPI_Init): BLINK_MPI_CUDA_AWARE=0|1 decides when set;
// AUTO asks MPIX_Query_cuda_support(), called directly where <mpi-ext.h> declares it
// at build time (Open MPI's cuda extension) or else looked up in the process at
// run time (another MPI library than the one built against), and counts a library
// without it as not CUDA-aware. MPI_Init then agrees across ranks (aware only if
// every rank's library is).
CudaAwareness queryCudaAwareness();

}  // namespace blink::glue
