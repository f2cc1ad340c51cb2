# perplexity.cmake: included after models.cmake, whose model fixtures it uses.
# `anvil perplexity` on the synthetic llama of tests/model/models.cmake (needs its model fixture).
if(TEST golden_model_llama-tiny-f32)
  add_test(NAME cli_perplexity
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/cli/perplexity.py $<TARGET_FILE:anvil>
                   ${ANVIL_TEST_MODELS} ${ANVIL_TESTS}/data/golden
                   ${ANVIL_TESTS}/tokenizer/corpus.txt ${CMAKE_CURRENT_BINARY_DIR}/perplexity)
  set_tests_properties(cli_perplexity PROPERTIES FIXTURES_REQUIRED anvil_model_llama-tiny-f32 TIMEOUT 600)
endif()
