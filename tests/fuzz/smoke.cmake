# fuzz_smoke: the model-file fuzz entry point driven by deterministic mutations of the stories260K
# files, and fuzz_smoke_scenario: the scenario reader's on mutations of the shipped scenarios (any
# compiler). Included from tests/CMakeLists.txt, and from tests/fuzz when only fuzzing.
if(NOT TARGET fuzz_smoke)
  add_executable(fuzz_smoke ${CMAKE_CURRENT_LIST_DIR}/fuzz_smoke.cpp
                            ${CMAKE_CURRENT_LIST_DIR}/fuzz_model_files.cpp)
  target_link_libraries(fuzz_smoke PRIVATE cibench_engine)
  set(CIBENCH_FUZZ_SEEDS
      ${CIBENCH_SHARED_DIR}/models/stories260K/stories260K.bin
      ${CIBENCH_SHARED_DIR}/models/stories260K/gguf/stories260K.gguf
      ${CIBENCH_SHARED_DIR}/models/stories260K/hf/model.safetensors)
  add_test(NAME fuzz.smoke COMMAND fuzz_smoke --iterations 3000 ${CIBENCH_FUZZ_SEEDS})
  set_tests_properties(fuzz.smoke PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
# The scenario reader (TOML + every key), seeded with the shipped scenarios.
if(NOT TARGET fuzz_smoke_scenario)
  add_executable(fuzz_smoke_scenario ${CMAKE_CURRENT_LIST_DIR}/fuzz_smoke.cpp
                                     ${CMAKE_CURRENT_LIST_DIR}/fuzz_scenario.cpp)
  target_link_libraries(fuzz_smoke_scenario PRIVATE cibench_harness)
  file(GLOB CIBENCH_FUZZ_SCENARIOS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/scenarios/*.toml)
  add_test(NAME fuzz.smoke_scenario COMMAND fuzz_smoke_scenario --iterations 100000 ${CIBENCH_FUZZ_SCENARIOS})
  set_tests_properties(fuzz.smoke_scenario PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
