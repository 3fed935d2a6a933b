# cmake -DCOMMAND=<list> -DEXPECTED_OUTPUT=<regex> -P expect_failure.cmake
# Passes when COMMAND exits non-zero and its output (stdout and stderr) matches EXPECTED_OUTPUT:
# a check that a failure is reported, which WILL_FAIL alone would not tell apart from a run
# that could not start at all.
cmake_minimum_required(VERSION 3.20)  # list(FILTER) keeps its empty-element policy quiet
list(FILTER COMMAND EXCLUDE REGEX "^$")
execute_process(COMMAND ${COMMAND} RESULT_VARIABLE result OUTPUT_VARIABLE output
  ERROR_VARIABLE output)
message("${output}")
if(result EQUAL 0)
  message(FATAL_ERROR "expected a non-zero exit status from: ${COMMAND}")
endif()
if(NOT output MATCHES "${EXPECTED_OUTPUT}")
  message(FATAL_ERROR "exit status ${result}, but the output does not match '${EXPECTED_OUTPUT}'")
endif()
message(STATUS "failed as expected (exit status ${result})")
