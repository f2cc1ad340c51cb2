# Tokenizer tests: test_tokenizer compares Anvil's SPM and BPE tokenizers with llama.cpp's
# golden files (tests/data/tokenizer-golden-*.json). The two small BPE vocabularies are
# written as GGUF models into ${ANVIL_TEST_MODELS} by a fixture from the committed vocabulary
# JSON (python3 with gguf + numpy); the Gemma 3 check runs when the model is installed.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME tokenizer_bpe_models
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/tokenizer/make_bpe_models.py --out ${ANVIL_TEST_MODELS})
set_tests_properties(tokenizer_bpe_models PROPERTIES FIXTURES_SETUP tokenizer_bpe_models TIMEOUT 300)
if(TARGET test_tokenizer)
  target_link_libraries(test_tokenizer PRIVATE PkgConfig::CJSON)
  set_tests_properties(test_tokenizer PROPERTIES FIXTURES_REQUIRED tokenizer_bpe_models
                       ENVIRONMENT "ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS}")
endif()
