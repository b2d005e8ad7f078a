# The fuzz entry points driven by deterministic mutations of seed files (any compiler): fuzz_smoke
# (llama2.c, GGUF and safetensors model files; the stories260K files), fuzz_smoke_scenario
# (scenario TOML; the shipped scenarios), fuzz_smoke_text (tokenizers, tokenizer.json, vocab.txt, TSV, replay,
# config.json, .cbq), fuzz_smoke_bert (BERT/DistilBERT/ModernBERT safetensors; tests/fuzz/corpus, tests/fixtures/modernbert) and
# fuzz_smoke_store (the results store; the release fixtures). Included from tests/CMakeLists.txt,
# and from tests/fuzz when only fuzzing. Under a sanitizer (about 10x slower) the slow ones run
# fewer mutations.
# The mutations are a fixed sequence per seed, so fewer iterations are a prefix of the same inputs.
if(CIBENCH_SANITIZE)
  set(CIBENCH_FUZZ_MODEL_ITERATIONS 1200)
  set(CIBENCH_FUZZ_GGUF_QUANT_ITERATIONS 150)
  set(CIBENCH_FUZZ_KQUANT_ITERATIONS 700)
  set(CIBENCH_FUZZ_SCENARIO_ITERATIONS 40000)
  set(CIBENCH_FUZZ_TEXT_ITERATIONS 500)
  set(CIBENCH_FUZZ_BERT_ITERATIONS 1200)
  set(CIBENCH_FUZZ_STORE_ITERATIONS 150)
else()
  set(CIBENCH_FUZZ_MODEL_ITERATIONS 3000)
  set(CIBENCH_FUZZ_GGUF_QUANT_ITERATIONS 400)
  set(CIBENCH_FUZZ_KQUANT_ITERATIONS 2000)
  set(CIBENCH_FUZZ_SCENARIO_ITERATIONS 100000)
  set(CIBENCH_FUZZ_TEXT_ITERATIONS 1500)
  set(CIBENCH_FUZZ_BERT_ITERATIONS 3000)
  set(CIBENCH_FUZZ_STORE_ITERATIONS 1000)
endif()
# The seed files some smokes mutate are written by a cibench executable: this build's, or the one
# CIBENCH_SEED_CLI names (scripts/test.sh --asan-parsers passes the Release build's, so the sanitizer
# tree need not compile the command-line program only to write seeds).
set(CIBENCH_SEED_CLI "" CACHE FILEPATH "A cibench executable that writes the fuzz seed files (empty: this build's)")
if(CIBENCH_SEED_CLI)
  set(CIBENCH_SEED_COMMAND ${CIBENCH_SEED_CLI})
elseif(TARGET cibench)
  set(CIBENCH_SEED_COMMAND cibench)
else()
  set(CIBENCH_SEED_COMMAND "")
endif()
if(NOT TARGET fuzz_smoke)
  add_executable(fuzz_smoke ${CMAKE_CURRENT_LIST_DIR}/fuzz_smoke.cpp
                            ${CMAKE_CURRENT_LIST_DIR}/fuzz_model_files.cpp)
  target_link_libraries(fuzz_smoke PRIVATE cibench_engine)
  set(CIBENCH_FUZZ_SEEDS
      ${CIBENCH_SHARED_DIR}/models/stories260K/stories260K.bin
      ${CIBENCH_SHARED_DIR}/models/stories260K/gguf/stories260K.gguf
      ${CIBENCH_SHARED_DIR}/models/stories260K/hf/model.safetensors)
  add_test(NAME fuzz.smoke COMMAND fuzz_smoke --iterations ${CIBENCH_FUZZ_MODEL_ITERATIONS} ${CIBENCH_FUZZ_SEEDS})
  set_tests_properties(fuzz.smoke PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
# The GGUF loader's Q8_0 and Q4_0 branches: stories5M (every row whole 32-value blocks) written
# by `cibench export-gguf` in a setup test, then mutated. Fewer iterations: every input that
# opens dequantises 4.9M weights.
set(CIBENCH_FUZZ_GGUF_QUANT_SEEDS ${CMAKE_CURRENT_BINARY_DIR}/fuzz-seed-stories5M-q8_0.gguf
                                  ${CMAKE_CURRENT_BINARY_DIR}/fuzz-seed-stories5M-q4_0.gguf)
if(CIBENCH_SEED_COMMAND AND NOT TEST fuzz.seed_gguf_q8_0)
  foreach(type q8_0 q4_0)
    add_test(NAME fuzz.seed_gguf_${type}
             COMMAND ${CIBENCH_SEED_COMMAND} export-gguf ${CIBENCH_SHARED_DIR}/models/stories5M/stories5M.bin --type ${type}
                     -o ${CMAKE_CURRENT_BINARY_DIR}/fuzz-seed-stories5M-${type}.gguf)
    set_tests_properties(fuzz.seed_gguf_${type} PROPERTIES FIXTURES_SETUP fuzz_gguf_quant_seed TIMEOUT 120)
  endforeach()
  add_test(NAME fuzz.smoke_gguf_quant COMMAND fuzz_smoke --iterations ${CIBENCH_FUZZ_GGUF_QUANT_ITERATIONS} ${CIBENCH_FUZZ_GGUF_QUANT_SEEDS})
  set_tests_properties(fuzz.smoke_gguf_quant PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77
                       FIXTURES_REQUIRED fuzz_gguf_quant_seed)
endif()
# The GGUF loader's K-quant and legacy block types (Q2_K..Q6_K, Q4_1, Q5_0, Q5_1, Q8_0): the fixture
# llama-quantize wrote (tests/fixtures/gguf/kquant-mix.gguf, one tensor per type), mutated.
if(NOT TEST fuzz.smoke_gguf_kquant)
  add_test(NAME fuzz.smoke_gguf_kquant COMMAND fuzz_smoke --iterations ${CIBENCH_FUZZ_KQUANT_ITERATIONS}
           ${CMAKE_SOURCE_DIR}/tests/fixtures/gguf/kquant-mix.gguf)
  set_tests_properties(fuzz.smoke_gguf_kquant PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
# The scenario reader (TOML + every key) and the hosts file reader, seeded with the shipped
# scenarios and hosts files.
if(NOT TARGET fuzz_smoke_scenario)
  add_executable(fuzz_smoke_scenario ${CMAKE_CURRENT_LIST_DIR}/fuzz_smoke.cpp
                                     ${CMAKE_CURRENT_LIST_DIR}/fuzz_scenario.cpp)
  target_link_libraries(fuzz_smoke_scenario PRIVATE cibench_harness)
  target_compile_definitions(fuzz_smoke_scenario PRIVATE CIBENCH_FUZZ_SCENARIO_DIR="${CMAKE_SOURCE_DIR}/scenarios")
  file(GLOB CIBENCH_FUZZ_SCENARIOS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/scenarios/*.toml
       ${CMAKE_SOURCE_DIR}/scenarios/hosts/*.toml)
  add_test(NAME fuzz.smoke_scenario COMMAND fuzz_smoke_scenario --iterations ${CIBENCH_FUZZ_SCENARIO_ITERATIONS} ${CIBENCH_FUZZ_SCENARIOS})
  set_tests_properties(fuzz.smoke_scenario PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
# Tokenizer files, vocab.txt, sentence TSVs, replay files, config.json contents and .cbq files.
# The .cbq seed is written by `cibench quantize` (stories260K, int4_g32) in a setup test.
set(CIBENCH_FUZZ_CBQ_SEED ${CMAKE_CURRENT_BINARY_DIR}/fuzz-seed-stories260K-int4_g32.cbq)
if(CIBENCH_SEED_COMMAND AND NOT TEST fuzz.seed_cbq)
  add_test(NAME fuzz.seed_cbq
           COMMAND ${CIBENCH_SEED_COMMAND} quantize -m ${CIBENCH_SHARED_DIR}/models/stories260K/stories260K.bin
                   -f int4_g32 -o ${CIBENCH_FUZZ_CBQ_SEED})
  set_tests_properties(fuzz.seed_cbq PROPERTIES FIXTURES_SETUP fuzz_cbq_seed TIMEOUT 120)
endif()
if(NOT TARGET fuzz_smoke_text)
  add_executable(fuzz_smoke_text ${CMAKE_CURRENT_LIST_DIR}/fuzz_smoke.cpp ${CMAKE_CURRENT_LIST_DIR}/fuzz_text_files.cpp)
  target_link_libraries(fuzz_smoke_text PRIVATE cibench_harness)
  add_test(NAME fuzz.smoke_text COMMAND fuzz_smoke_text --iterations ${CIBENCH_FUZZ_TEXT_ITERATIONS}
           ${CIBENCH_SHARED_DIR}/models/stories260K/tok512.bin
           ${CMAKE_CURRENT_LIST_DIR}/corpus/tokenizer.json
           ${CIBENCH_SHARED_DIR}/models/bert-tiny-sst2/vocab.txt
           ${CIBENCH_SHARED_DIR}/models/bert-tiny-sst2/config.json
           ${CIBENCH_SHARED_DIR}/models/stories260K/hf/config.json
           ${CIBENCH_SHARED_DIR}/data/sst2-validation/SST-2-val.tsv
           ${CMAKE_CURRENT_LIST_DIR}/corpus/replay.txt
           ${CIBENCH_FUZZ_CBQ_SEED})
  set_tests_properties(fuzz.smoke_text PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  if(TEST fuzz.seed_cbq)
    set_tests_properties(fuzz.smoke_text PROPERTIES FIXTURES_REQUIRED fuzz_cbq_seed)
  endif()
endif()
# The BERT-family loader, packing and one classification (seeds: tests/fuzz/corpus, written by
# make_bert_seeds.py, and the ModernBERT fixture's weights).
if(NOT TARGET fuzz_smoke_bert)
  add_executable(fuzz_smoke_bert ${CMAKE_CURRENT_LIST_DIR}/fuzz_smoke.cpp ${CMAKE_CURRENT_LIST_DIR}/fuzz_bert.cpp)
  target_link_libraries(fuzz_smoke_bert PRIVATE cibench_engine)
  add_test(NAME fuzz.smoke_bert COMMAND fuzz_smoke_bert --iterations ${CIBENCH_FUZZ_BERT_ITERATIONS}
           ${CMAKE_CURRENT_LIST_DIR}/corpus/bert-mini.safetensors
           ${CMAKE_CURRENT_LIST_DIR}/corpus/distilbert-mini.safetensors
           ${CMAKE_CURRENT_LIST_DIR}/../fixtures/modernbert/mean/model.safetensors)
  set_tests_properties(fuzz.smoke_bert PROPERTIES TIMEOUT 300 SKIP_RETURN_CODE 77)
endif()
# The results store as every reader and the writer open it (seeds: the stores of earlier
# releases in tests/fixtures).
if(NOT TARGET fuzz_smoke_store)
  add_executable(fuzz_smoke_store ${CMAKE_CURRENT_LIST_DIR}/fuzz_smoke.cpp ${CMAKE_CURRENT_LIST_DIR}/fuzz_store.cpp)
  target_link_libraries(fuzz_smoke_store PRIVATE cibench_harness cibench_reports)
  add_test(NAME fuzz.smoke_store COMMAND fuzz_smoke_store --iterations ${CIBENCH_FUZZ_STORE_ITERATIONS}
           ${CMAKE_SOURCE_DIR}/tests/fixtures/store-schema3.sqlite
           ${CMAKE_SOURCE_DIR}/tests/fixtures/store-schema4.sqlite)
  set_tests_properties(fuzz.smoke_store PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
endif()
# The smokes are among the longest tests: ctest -j starts higher-cost tests first, so they do not
# run alone at the end of the suite.
foreach(t fuzz.smoke fuzz.smoke_gguf_quant fuzz.smoke_gguf_kquant fuzz.smoke_scenario fuzz.smoke_text
          fuzz.smoke_bert fuzz.smoke_store)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES COST 100)
  endif()
endforeach()
