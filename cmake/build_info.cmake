# Writes build_info_gen.h with the current commit; only touches the file when it changes.
execute_process(COMMAND git -C ${SRC} rev-parse --short=12 HEAD
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND git -C ${SRC} status --porcelain --untracked-files=no
                OUTPUT_VARIABLE dirty OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(NOT commit)
  set(commit "unknown")
endif()
if(dirty)
  set(commit "${commit}-dirty")
endif()
string(STRIP "${FLAGS}" FLAGS)
set(content "#pragma once
#define CIBENCH_GIT_COMMIT \"${commit}\"
#define CIBENCH_COMPILER \"${COMPILER}\"
#define CIBENCH_CXX_FLAGS \"${FLAGS}\"
#define CIBENCH_BUILD_TYPE \"${BUILD_TYPE}\"
#define CIBENCH_SANITIZER \"${SANITIZE}\"
")
if(EXISTS ${OUT})
  file(READ ${OUT} old)
endif()
if(NOT "${old}" STREQUAL "${content}")
  file(WRITE ${OUT} "${content}")
endif()
