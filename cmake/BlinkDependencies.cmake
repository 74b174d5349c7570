# Finds Blink's dependencies. Required: MPI (C), Boost.Graph, nlohmann_json, hwloc.
# Optional (AUTO): CUDA toolkit, UCX.
find_package(MPI REQUIRED COMPONENTS C)
find_package(Boost 1.74 REQUIRED)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc>=2.0)
set(BLINK_HAVE_HWLOC ON)

# ---- UCX ----
set(BLINK_HAVE_UCX OFF)
if(NOT BLINK_ENABLE_UCX STREQUAL "OFF")
  find_package(ucx CONFIG QUIET)
  if(ucx_FOUND)
    set(BLINK_HAVE_UCX ON)
  elseif(BLINK_ENABLE_UCX STREQUAL "ON")
    message(FATAL_ERROR "BLINK_ENABLE_UCX=ON but UCX was not found (apt-get install libucx-dev)")
  endif()
endif()

# ---- CUDA ----
set(BLINK_HAVE_CUDA OFF)
if(NOT BLINK_ENABLE_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # sm_80 (A100) and sm_90 (H100/H200); nvcc 13 no longer targets V100 (sm_70).
      set(CMAKE_CUDA_ARCHITECTURES "80;90")
    endif()
    enable_language(CUDA)
    # CMake 3.25 has no CUDA20 dialect flags for nvcc; the kernels need only C++17.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    set(BLINK_HAVE_CUDA ON)
  elseif(BLINK_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "BLINK_ENABLE_CUDA=ON but nvcc was not found (set CMAKE_CUDA_COMPILER)")
  endif()
endif()
