# Precompiled headers (COLLKIT_PCH, on by default with clang): the standard library headers that
# nearly every source includes (libstdc++'s C++20 <algorithm>, <functional>, <map>, ...), and
# doctest in the unit tests, are parsed once per multi-file target instead of once per file.
# Measured on CI's sanitizer pass (clang 14, ASan+UBSan+coverage, -O1 -g1), the same file compiled
# both ways back to back: 19% less CPU (12 files, 39.8 s -> 32.4 s), 0.6 s a file. With GCC 12 at
# -O2 -g the whole main build took 741 CPU-s without and 730 with them (-1.5%, within the noise of
# the shared machine), and GCC then reports bogus -Warray-bounds (below): off by default there.
# Nothing else goes in: nlohmann/json, fmt or Boost.Graph in the header would cost every file
# that does not use them (a larger header to load) more than it saves the few that do.
# Single-file targets (the tools' main.cpp, the benchmarks, the fuzz targets) get none: a header
# precompiled for one file saves nothing. C++ only: nvcc never sees it (collkit_exec_kernels is a
# target of its own, and the guard below keeps any other language out).
#
# With ccache (CMAKE_CXX_COMPILER_LAUNCHER=ccache) the files built on a precompiled header are
# cached only with CCACHE_SLOPPINESS pch_defines,time_macros: the launcher is wrapped to set it
# (added to what the environment had at configure time). CMake passes clang -fno-pch-timestamp.
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  set(collkit_pch_default ON)
else()
  set(collkit_pch_default OFF)
endif()
option(COLLKIT_PCH "Precompile the standard library headers of collkit's multi-file targets (default: with clang)"
  ${collkit_pch_default})

set(COLLKIT_PCH_HEADERS
  algorithm array cmath cstddef cstdint cstdlib cstring deque functional limits map memory numeric
  optional set sstream string string_view tuple unordered_map utility vector)

if(COLLKIT_PCH AND CMAKE_CXX_COMPILER_LAUNCHER)
  list(GET CMAKE_CXX_COMPILER_LAUNCHER 0 collkit_launcher)
  get_filename_component(collkit_launcher ${collkit_launcher} NAME)
  if(collkit_launcher MATCHES "^ccache")
    set(collkit_sloppiness "pch_defines,time_macros")
    if(DEFINED ENV{CCACHE_SLOPPINESS} AND NOT "$ENV{CCACHE_SLOPPINESS}" STREQUAL "")
      set(collkit_sloppiness "$ENV{CCACHE_SLOPPINESS},${collkit_sloppiness}")
    endif()
    # A normal variable: the cache keeps what was given, each configure wraps it again.
    set(CMAKE_CXX_COMPILER_LAUNCHER ${CMAKE_COMMAND} -E env CCACHE_SLOPPINESS=${collkit_sloppiness}
      ${CMAKE_CXX_COMPILER_LAUNCHER})
  endif()
endif()

# collkit_precompile(<target> [<extra header>...]): the standard headers above, plus the extra
# ones (e.g. doctest/doctest.h), precompiled for <target>'s C++ files.
function(collkit_precompile target)
  if(NOT COLLKIT_PCH)
    return()
  endif()
  set(headers "")
  foreach(h IN LISTS COLLKIT_PCH_HEADERS ARGN)
    list(APPEND headers "$<$<COMPILE_LANGUAGE:CXX>:<${h}$<ANGLE-R>>")
  endforeach()
  target_precompile_headers(${target} PRIVATE ${headers})
  # GCC 12 with the standard headers precompiled (-DCOLLKIT_PCH=ON) reports -Warray-bounds in
  # libstdc++'s char_traits.h (the __builtin_memcpy of a std::string copy, inlined into collkit's
  # code) in 7 of the files, and in none without the precompiled header: false positives like the
  # one -Wno-restrict answers in cmake/Warnings.cmake. Off for these targets with GCC 12 only.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wno-array-bounds>)
  endif()
endfunction()
