# fuzz: libFuzzer targets (cmake -DANVIL_FUZZ=ON with CC=clang).
# fuzz_gguf is built from just the sources the GGUF reader needs (gguf, error, the quant
# type table), all instrumented, so it builds even while the rest of the tree is in flux.
# The seed corpus is generated into the build tree by tests/gguf/fuzz/gen_corpus.py (gguf-py).
# ctest runs the target once over the seed corpus (fuzz_gguf_corpus); a real fuzzing run:
#   build-fuzz/fuzz_gguf -max_total_time=600 build-fuzz/fuzz-corpus-run build-fuzz/fuzz-corpus
if(ANVIL_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "ANVIL_FUZZ needs clang (configure with CC=clang)")
  endif()
  file(GLOB ANVIL_FUZZ_QUANT_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/engine/gguf/quant.c ${CMAKE_SOURCE_DIR}/engine/gguf/quant_*.c)
  add_executable(fuzz_gguf
    ${ANVIL_TESTS}/gguf/fuzz/fuzz_gguf.c
    ${CMAKE_SOURCE_DIR}/engine/gguf/gguf.c
    ${CMAKE_SOURCE_DIR}/engine/base/error.c
    ${ANVIL_FUZZ_QUANT_SOURCES})
  target_include_directories(fuzz_gguf PRIVATE ${CMAKE_SOURCE_DIR}/engine/base ${CMAKE_SOURCE_DIR}/engine/gguf)
  target_compile_options(fuzz_gguf PRIVATE -g -O1 -fsanitize=fuzzer,address,undefined
                         -fno-sanitize-recover=undefined -fno-omit-frame-pointer)
  target_link_options(fuzz_gguf PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(fuzz_gguf PRIVATE m)
  set_target_properties(fuzz_gguf PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR})

  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  set(ANVIL_FUZZ_CORPUS ${CMAKE_BINARY_DIR}/fuzz-corpus)
  add_custom_command(
    OUTPUT ${ANVIL_FUZZ_CORPUS}/seed_valid_model.gguf
    COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/gguf/fuzz/gen_corpus.py ${ANVIL_FUZZ_CORPUS}
    DEPENDS ${ANVIL_TESTS}/gguf/fuzz/gen_corpus.py
    COMMENT "Generating the GGUF fuzz seed corpus")
  add_custom_target(fuzz_gguf_corpus ALL DEPENDS ${ANVIL_FUZZ_CORPUS}/seed_valid_model.gguf)

  # Seeds plus any regression inputs checked into tests/gguf/fuzz/regress (crashes found and fixed).
  set(ANVIL_FUZZ_INPUTS ${ANVIL_FUZZ_CORPUS})
  if(EXISTS ${ANVIL_TESTS}/gguf/fuzz/regress)
    list(APPEND ANVIL_FUZZ_INPUTS ${ANVIL_TESTS}/gguf/fuzz/regress)
  endif()
  add_test(NAME fuzz_gguf_corpus COMMAND fuzz_gguf -runs=0 ${ANVIL_FUZZ_INPUTS})
  set_tests_properties(fuzz_gguf_corpus PROPERTIES TIMEOUT 300)
endif()
