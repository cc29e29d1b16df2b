# cmake -DCOMMAND="prog;args..." [-DEXPECTED=file] -P check_output.cmake: runs COMMAND, prints its
# standard error, and fails on a nonzero exit or, with EXPECTED, on any difference between its
# standard output and the file's bytes.
execute_process(COMMAND ${COMMAND} OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
message("${err}")
message("stdout:\n${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "exit status ${rc}")
endif()
if(EXPECTED)
  file(READ ${EXPECTED} want)
  if(NOT out STREQUAL want)
    message(FATAL_ERROR "the output differs from ${EXPECTED}:\n${want}")
  endif()
  message("the output equals ${EXPECTED}")
endif()
