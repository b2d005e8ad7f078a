# What this configuration builds, said out loud: each optional part records a line with
# cibench_part(NAME "state"), and cibench_parts_summary() prints them at the end of configure
# and writes them to ${CMAKE_BINARY_DIR}/cibench-parts.txt (read by .ci/run).
set_property(GLOBAL PROPERTY CIBENCH_PARTS "")

function(cibench_part name state)
  set_property(GLOBAL APPEND PROPERTY CIBENCH_PARTS "${name}: ${state}")
endfunction()

function(cibench_parts_summary)
  get_property(parts GLOBAL PROPERTY CIBENCH_PARTS)
  set(text "")
  message(STATUS "cibench parts:")
  foreach(p IN LISTS parts)
    message(STATUS "  ${p}")
    string(APPEND text "${p}\n")
  endforeach()
  file(WRITE ${CMAKE_BINARY_DIR}/cibench-parts.txt "${text}")
endfunction()

# A part that is not built still shows in the test summary: one ctest entry that exits 77
# (reported as "Skipped" with the reason in its output) instead of silently absent tests.
function(cibench_skipped_test name reason)
  add_test(NAME ${name} COMMAND sh -c "echo 'cibench: not built: ${reason}'; exit 77")
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77 LABELS not_built)
endfunction()
