# grammar.cmake: grammar-constrained sampling. test_grammar (byte-level unit tests, random
# walks over the small BPE vocabulary and, when installed, Gemma 3's, and a Gemma end-to-end
# generation) writes every document it generated to grammar-docs.jsonl in the build tree;
# grammar_validate then checks each one with python's json + jsonschema.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
if(TARGET test_grammar)
  set(_anvil_grammar_docs ${CMAKE_BINARY_DIR}/grammar-docs.jsonl)
  target_link_libraries(test_grammar PRIVATE PkgConfig::CJSON)
  set_tests_properties(test_grammar PROPERTIES
                       FIXTURES_REQUIRED tokenizer_bpe_models
                       FIXTURES_SETUP grammar_docs
                       ENVIRONMENT "ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS};ANVIL_GRAMMAR_OUT=${_anvil_grammar_docs}")
  # 11 schemas x 30 walks on the BPE vocabulary at least (Gemma adds 220 + 1).
  add_test(NAME grammar_validate
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/generate/validate_grammar.py ${_anvil_grammar_docs} --min 330)
  set_tests_properties(grammar_validate PROPERTIES FIXTURES_REQUIRED grammar_docs TIMEOUT 120)
endif()
