# fuzz_smoke: the fuzz entry point driven by deterministic mutations of the stories260K files
# (any compiler). Included from tests/CMakeLists.txt, and from tests/fuzz when only fuzzing.
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
