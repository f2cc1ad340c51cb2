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
# WordPiece: the synthetic BERT vocabularies and BGE's real one (tools/make_embed_model.py --vocab-only) for
# test_tokenizer_wpm and its llama.cpp goldens (tests/tokenizer/make_wpm_golden.py).
add_test(NAME tokenizer_wpm_models
         COMMAND sh -c "${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/make_embed_model.py --family bert --vocab-only --out ${ANVIL_TEST_MODELS}/tok-wpm.gguf && ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/make_embed_model.py --family bert --vocab-only --cased --out ${ANVIL_TEST_MODELS}/tok-wpm-cased.gguf && ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/make_embed_model.py --family bert --vocab-only --vocab bge --out ${ANVIL_TEST_MODELS}/tok-wpm-bge.gguf")
set_tests_properties(tokenizer_wpm_models PROPERTIES FIXTURES_SETUP tokenizer_wpm_models TIMEOUT 120)
if(TARGET test_tokenizer_wpm)
  target_link_libraries(test_tokenizer_wpm PRIVATE PkgConfig::CJSON)
  set_tests_properties(test_tokenizer_wpm PROPERTIES FIXTURES_REQUIRED tokenizer_wpm_models
                       ENVIRONMENT "ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS}")
endif()
# Every tokenizer.ggml.pre name: one vocabulary-only GGUF per name llama.cpp accepts, from the
# committed BPE vocabulary, and the llama-tokenize goldens (tests/data/tokenizer-golden-pre.json.gz,
# tests/tokenizer/make_pre_goldens.py).
add_test(NAME tokenizer_pre_models
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/tokenizer/make_pre_goldens.py --models ${ANVIL_TEST_MODELS}/tok-pre)
set_tests_properties(tokenizer_pre_models PROPERTIES FIXTURES_SETUP tokenizer_pre_models TIMEOUT 300)
if(TARGET test_tokenizer_pre)
  target_link_libraries(test_tokenizer_pre PRIVATE PkgConfig::CJSON)
  set_tests_properties(test_tokenizer_pre PROPERTIES FIXTURES_REQUIRED tokenizer_pre_models
                       ENVIRONMENT "ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS}/tok-pre")
endif()
