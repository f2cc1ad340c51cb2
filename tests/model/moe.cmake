# moe.cmake: the mixture-of-experts families (engine/model/moe.c; gpt-oss: gptoss.c) and the
# other synthetic models of the manifest (gemma3's window variants, mistral3) against today's llama.cpp.
# Owns: one fixture per synthetic MoE model of tests/data/golden/moe/manifest.json
# (tools/make_test_model.py), the comparison of `anvil eval` with the committed llama.cpp dump
# of each (tests/model/moe_vs_llamacpp.py --base: KL per position, confident top-1, greedy), for
# quantized files also the KL to the unquantized model's dump against llama.cpp's (--truth),
# on the CPU and on lavapipe (Khronos validation layer inserted, zero messages), and the
# malformed-file refusals (tests/model/moe_malformed.py, gptoss_malformed.py, mistral3_malformed.py).
anvil_tests_need_python(moe numpy gguf)
include(${ANVIL_TESTS}/model/vs_llamacpp.cmake)
set(_lvp /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
anvil_llamacpp_goldens(moe)
add_test(NAME moe_malformed
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/model/moe_malformed.py --anvil $<TARGET_FILE:anvil>
                 --gen ${CMAKE_SOURCE_DIR}/tools/make_test_model.py --dir ${ANVIL_TEST_MODELS}/moe-malformed)
set_tests_properties(moe_malformed PROPERTIES TIMEOUT 300 LABELS moe)
# tests/cpu/test_gptoss_ops (the gpt-oss op extensions vs ref_ops) also runs on lavapipe: the
# validation layer inserted, zero messages.
if(TEST test_gptoss_ops AND EXISTS ${_lvp})
  set_tests_properties(test_gptoss_ops PROPERTIES LABELS moe
    ENVIRONMENT "ANVIL_VK_VALIDATE=1;VK_ICD_FILENAMES=${_lvp};ANVIL_VK_REQUIRE=1;ASAN_OPTIONS=detect_leaks=0")
endif()
# gpt-oss pieces missing or mis-shaped (sinks, biases, sliding window, YaRN): one-line refusals.
add_test(NAME gptoss_malformed
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/model/gptoss_malformed.py --anvil $<TARGET_FILE:anvil>
                 --gen ${CMAKE_SOURCE_DIR}/tools/make_test_model.py --dir ${ANVIL_TEST_MODELS}/gptoss-malformed)
set_tests_properties(gptoss_malformed PROPERTIES TIMEOUT 300 LABELS moe)
# mistral3 (Ministral 3): bad YaRN / query-temperature values under llama.cpp's and Ollama's keys,
# FFN biases (not run yet): one-line refusals.
add_test(NAME mistral3_malformed
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/model/mistral3_malformed.py --anvil $<TARGET_FILE:anvil>
                 --gen ${CMAKE_SOURCE_DIR}/tools/make_test_model.py --dir ${ANVIL_TEST_MODELS}/mistral3-malformed)
set_tests_properties(mistral3_malformed PROPERTIES TIMEOUT 300 LABELS moe)
