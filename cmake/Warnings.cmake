# Warnings and sanitizers apply to collkit's own targets only (collkit_project_options),
# never to the Debian libraries' headers, which are included as system headers.
add_library(collkit_project_options INTERFACE)
target_compile_options(collkit_project_options INTERFACE -Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wno-sign-conversion)
if(COLLKIT_WERROR)
  target_compile_options(collkit_project_options INTERFACE -Werror)
endif()
if(COLLKIT_SANITIZE)
  target_compile_options(collkit_project_options INTERFACE -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined)
  target_link_options(collkit_project_options INTERFACE -fsanitize=address,undefined)
endif()
