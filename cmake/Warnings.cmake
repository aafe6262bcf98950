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
# COLLKIT_FUZZ: collkit's code carries libFuzzer's coverage instrumentation (fuzzer-no-link) beside
# the sanitizers, so that one build serves both the sanitized unit tests and the fuzz targets
# (fuzz/), which alone link libFuzzer (-fsanitize=fuzzer). GCC has no libFuzzer.
if(COLLKIT_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "collkit: COLLKIT_FUZZ=ON needs clang (libFuzzer), not ${CMAKE_CXX_COMPILER_ID}: configure with CC=clang CXX=clang++ (Debian: clang, libclang-rt-14-dev)")
  endif()
  target_compile_options(collkit_project_options INTERFACE -fsanitize=fuzzer-no-link)
endif()
if(COLLKIT_SANITIZE OR COLLKIT_FUZZ)
  target_compile_options(collkit_project_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(collkit_project_options INTERFACE -fsanitize=address,undefined)
endif()
