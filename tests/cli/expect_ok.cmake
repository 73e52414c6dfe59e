# Runs CMD (a |-separated list), expects exit code 0 AND stdout matching REGEX.
# (PASS_REGULAR_EXPRESSION would ignore the exit code: a command that prints the expected
# text and then fails must fail its test.)
string(REPLACE "|" ";" CMD "${CMD}")
execute_process(COMMAND ${CMD} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "expected exit 0, got ${rc}\nstdout: ${out}\nstderr: ${err}")
endif()
if(NOT out MATCHES "${REGEX}")
  message(FATAL_ERROR "stdout does not match '${REGEX}':\n${out}")
endif()
