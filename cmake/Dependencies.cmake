# Every dependency is a Debian package installed by scripts/setup-deps.sh.
# Required ones stop the configure step with a message naming the package;
# hardware ones (CUDA, NCCL, NVML, ibverbs) are optional and reported in one line each.

find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(pugixml REQUIRED)
find_package(Boost 1.74 REQUIRED)            # header-only Boost.Graph (max-flow)
find_package(PkgConfig REQUIRED)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc>=2.0)
# coll-plan shell's line editing, history and completion (BSD libedit: readline's API, BSD licence).
pkg_check_modules(LIBEDIT REQUIRED IMPORTED_TARGET libedit)
find_package(MPI REQUIRED COMPONENTS C)
# coll-overlap run's GEMMs on the CPU (libs/overlap/src/run): OpenBLAS's CBLAS, found through its
# pkg-config file (Debian puts cblas.h under an openblas-pthread include directory).
pkg_check_modules(OPENBLAS IMPORTED_TARGET openblas)
if(NOT OPENBLAS_FOUND)
  message(FATAL_ERROR "collkit: OpenBLAS not found (pkg-config openblas): install the Debian package libopenblas-dev (scripts/setup-deps.sh)")
endif()
find_package(Threads REQUIRED)
# The testbed's delay line (apps/coll-testbed-delay): optional, the testbed refuses a link delay
# without it (and without netem).
pkg_check_modules(NETFILTER_QUEUE IMPORTED_TARGET libnetfilter_queue)

# GLPK (libglpk-dev) solves the AlltoAll synthesizer's flow LP (libs/plan/src/synth/mcf.cpp). It
# ships neither a CMake package nor a pkg-config file.
find_path(GLPK_INCLUDE_DIR glpk.h)
find_library(GLPK_LIBRARY glpk)
if(NOT GLPK_INCLUDE_DIR OR NOT GLPK_LIBRARY)
  message(FATAL_ERROR "collkit: GLPK not found (glpk.h, libglpk): install the Debian package libglpk-dev (scripts/setup-deps.sh)")
endif()
add_library(GLPK::GLPK INTERFACE IMPORTED)
target_include_directories(GLPK::GLPK INTERFACE ${GLPK_INCLUDE_DIR})
target_link_libraries(GLPK::GLPK INTERFACE ${GLPK_LIBRARY})

find_path(IBVERBS_INCLUDE_DIR infiniband/verbs.h)
find_library(IBVERBS_LIBRARY ibverbs)
if(IBVERBS_INCLUDE_DIR AND IBVERBS_LIBRARY)
  set(COLLKIT_HAVE_IBVERBS 1)
  add_library(collkit_ibverbs INTERFACE)
  target_include_directories(collkit_ibverbs INTERFACE ${IBVERBS_INCLUDE_DIR})
  target_link_libraries(collkit_ibverbs INTERFACE ${IBVERBS_LIBRARY})
  message(STATUS "collkit: ibverbs found (${IBVERBS_LIBRARY}): RDMA discovery compiled")
else()
  set(COLLKIT_HAVE_IBVERBS 0)
  message(STATUS "collkit: ibverbs not found: RDMA NIC discovery is left out")
endif()

set(COLLKIT_HAVE_CUDA 0)
set(COLLKIT_HAVE_NCCL 0)
if(COLLKIT_WITH_CUDA)
  if(NOT CUDAToolkit_ROOT AND EXISTS /usr/local/cuda)
    set(CUDAToolkit_ROOT /usr/local/cuda)
  endif()
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND)
    set(COLLKIT_HAVE_CUDA 1)
    find_library(NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} ${CUDAToolkit_ROOT}/lib64)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} ${CUDAToolkit_ROOT}/include)
    if(NCCL_LIBRARY AND NCCL_INCLUDE_DIR)
      set(COLLKIT_HAVE_NCCL 1)
    endif()
    # nvcc builds the GPU kernels (libs/exec); enabled here, at the top, as CMake asks of a language.
    if(NOT DEFINED CMAKE_CUDA_COMPILER)
      set(CMAKE_CUDA_COMPILER ${CUDAToolkit_NVCC_EXECUTABLE})
    endif()
    if(NOT DEFINED CMAKE_CUDA_HOST_COMPILER)
      set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER})
    endif()
    # A100 and H100/H200, both supported by CUDA 12 and 13; CMAKE_CUDA_ARCHITECTURES or CUDAARCHS
    # choose others.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
      set(CMAKE_CUDA_ARCHITECTURES "80;90")
    endif()
    enable_language(CUDA)
    message(STATUS "collkit: CUDA ${CUDAToolkit_VERSION} found in ${CUDAToolkit_BIN_DIR}: GPU code compiled (NCCL: ${COLLKIT_HAVE_NCCL}, architectures ${CMAKE_CUDA_ARCHITECTURES})")
  else()
    message(STATUS "collkit: CUDA not found (set CUDAToolkit_ROOT): GPU code is left out, the rest builds")
  endif()
else()
  message(STATUS "collkit: COLLKIT_WITH_CUDA=OFF: GPU code is left out")
endif()
