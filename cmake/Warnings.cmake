# Warnings and sanitizers apply to collkit's own targets only (collkit_project_options),
# never to the Debian libraries' headers, which are included as system headers.
add_library(collkit_project_options INTERFACE)
target_compile_options(collkit_project_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
# GCC 12 at -O3 (Release) reports -Wrestrict on std::string concatenation inside libstdc++'s
# char_traits: a false positive, GCC bug 105651, fixed in GCC 13. Debian 12 ships GCC 12. At -O3
# it also reports -Wfree-nonheap-object on a std::vector<double>'s own deallocation once inlined
# (synth/relay.cpp, "called on pointer with nonzero offset"), a false positive of the same kind
# (the pointer is the vector's own allocation), which -Werror turned into a failed Release build.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
  target_compile_options(collkit_project_options INTERFACE -Wno-restrict -Wno-free-nonheap-object)
endif()
if(COLLKIT_WERROR)
  target_compile_options(collkit_project_options INTERFACE -Werror)
endif()
# COLLKIT_FUZZ: collkit's loaders carry libFuzzer's coverage instrumentation (fuzzer-no-link) and
# all of its code the sanitizers, so that one build serves both the sanitized unit tests and the
# fuzz targets (fuzz/), which alone link libFuzzer (-fsanitize=fuzzer). GCC has no libFuzzer.
if(COLLKIT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "collkit: COLLKIT_FUZZ=ON needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: configure with CC=clang CXX=clang++ (Debian: clang, libclang-rt-14-dev)")
  endif()
  # Coverage only in the sources fuzz/coverage.txt lists (the loaders and what the targets call):
  # elsewhere it guided nothing and slowed the sanitized unit tests by a third. The list's hash is
  # on the command line, so that an edit of it recompiles (ccache hashes the command, not the list),
  # and an edit reconfigures.
  set(collkit_coverage_list ${PROJECT_SOURCE_DIR}/fuzz/coverage.txt)
  set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${collkit_coverage_list})
  file(MD5 ${collkit_coverage_list} collkit_coverage_md5)
  target_compile_options(collkit_project_options INTERFACE -fsanitize=fuzzer-no-link
    -fsanitize-coverage-allowlist=${collkit_coverage_list} -DCOLLKIT_COVERAGE_LIST_MD5=${collkit_coverage_md5})
endif()
if(COLLKIT_SANITIZE OR COLLKIT_FUZZ)
  target_compile_options(collkit_project_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(collkit_project_options INTERFACE -fsanitize=address,undefined)
endif()
