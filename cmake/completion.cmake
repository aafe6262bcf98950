# Writes a tool's bash completion script, as the tool prints it: cmake -DTOOL=... -DOUT=... -P completion.cmake
get_filename_component(dir ${OUT} DIRECTORY)
file(MAKE_DIRECTORY ${dir})
execute_process(COMMAND ${TOOL} --completion bash OUTPUT_FILE ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${TOOL} --completion bash failed (${rc})")
endif()
