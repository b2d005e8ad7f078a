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
# Tokenizer files, vocab.txt, sentence TSVs, replay files, config.json contents and .cbq headers.
if(NOT TARGET fuzz_smoke_text)
  add_executable(fuzz_smoke_text ${CMAKE_CURRENT_LIST_DIR}/fuzz_smoke.cpp ${CMAKE_CURRENT_LIST_DIR}/fuzz_text_files.cpp)
  target_link_libraries(fuzz_smoke_text PRIVATE cibench_harness)
  add_test(NAME fuzz.smoke_text COMMAND fuzz_smoke_text --iterations 1500
           ${CIBENCH_SHARED_DIR}/models/stories260K/tok512.bin
           ${CIBENCH_SHARED_DIR}/models/bert-tiny-sst2/vocab.txt
           ${CIBENCH_SHARED_DIR}/models/bert-tiny-sst2/config.json
           ${CIBENCH_SHARED_DIR}/models/stories260K/hf/config.json
           ${CIBENCH_SHARED_DIR}/data/sst2-validation/SST-2-val.tsv
           ${CMAKE_CURRENT_LIST_DIR}/corpus/replay.txt)
  set_tests_properties(fuzz.smoke_text PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
endif()
