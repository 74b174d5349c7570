#include "cuda_aware.hpp"

#include <dlfcn.h>
#include <mpi.h>

#include "glue_support.hpp"

#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif

namespace blink::glue {

CudaAwareness queryCudaAwareness() {
  const std::string forced = setting("BLINK_MPI_CUDA_AWARE").value_or("AUTO");
  if (forced == "0" || forced == "1") {
    return {forced == "1", "BLINK_MPI_CUDA_AWARE=" + forced};
  }
#if defined(OMPI_HAVE_MPI_EXT_CUDA) && OMPI_HAVE_MPI_EXT_CUDA
  // Open MPI with its cuda extension: MPIX_CUDA_AWARE_SUPPORT tells how the library
  // built against was configured, the call how the one loaded now is.
  const int aware = MPIX_Query_cuda_support();
  return {aware != 0, "MPIX_Query_cuda_support() = " + std::to_string(aware)};
#else
  using QueryFn = int (*)();
  auto query = reinterpret_cast<QueryFn>(dlsym(RTLD_DEFAULT, "MPIX_Query_cuda_support"));
  if (query == nullptr) return {false, "the MPI library has no MPIX_Query_cuda_support"};
  const int aware = query();
  return {aware != 0, "MPIX_Query_cuda_support() = " + std::to_string(aware)};
#endif
}

}  // namespace blink::glue
