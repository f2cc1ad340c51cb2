# gemma4.cmake: the Gemma 4 family (engine/model/gemma4.c, gemma4_block.c) against today's llama.cpp.
# Owns: the synthetic gemma4 models of tests/data/golden/gemma4/manifest.json (E2B-style and
# 31B-style, F32, Q8_0, Q4_K_M) compared with the committed llama.cpp dumps on the CPU and on
# lavapipe (validation layer, zero messages) through anvil_llamacpp_goldens, and the malformed-file
# refusals (tests/model/gemma4_malformed.py), and the fixtures test_batch_eval needs for them.
anvil_tests_need_python(gemma4 numpy gguf)
include(${ANVIL_TESTS}/model/vs_llamacpp.cmake)
anvil_llamacpp_goldens(gemma4)
add_test(NAME gemma4_malformed
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/model/gemma4_malformed.py --anvil $<TARGET_FILE:anvil>
                 --gen ${CMAKE_SOURCE_DIR}/tools/make_test_model.py --dir ${ANVIL_TEST_MODELS}/gemma4-malformed)
set_tests_properties(gemma4_malformed PROPERTIES TIMEOUT 300 LABELS gemma4)
# test_batch_eval (tests/model/batch.cmake) also batches the E2B-style and MoE models: their fixtures.
foreach(_t test_batch_eval test_batch_eval_vulkan)
  if(TEST ${_t})
    set_property(TEST ${_t} APPEND PROPERTY FIXTURES_REQUIRED anvil_gemma4_gemma4-tiny-f32 anvil_gemma4_gemma4moe-tiny-f32)
  endif()
endforeach()
