# qwen35.cmake: the Qwen3.5 / 3.6 families qwen35 and qwen35moe (engine/model/qwen35.c, delta_net.c) against today's
# llama.cpp and its own invariants. Owns: the goldens of tests/data/golden/qwen35/manifest.json
# (anvil_llamacpp_goldens: KL per position vs llama.cpp's dump, CPU and lavapipe),
# tests/model/test_qwen35.c (chunk invariance of a 2,000-token prompt, model_eval_multi vs one
# sequence at a time, prefix reuse through truncate; CPU and lavapipe with the validation layer),
# the recurrent ops on lavapipe (tests/cpu/test_delta_net_ops.c) and the malformed-file refusals
# (tests/model/qwen35_malformed.py).
anvil_tests_need_python(qwen35 numpy gguf)
include(${ANVIL_TESTS}/model/vs_llamacpp.cmake)
anvil_llamacpp_goldens(qwen35)
set(_lvp /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
set(_q35_fixtures "anvil_qwen35_qwen35-tiny-f32;anvil_qwen35_qwen35-tinyk-q4_K_M;anvil_qwen35_qwen35moe-tiny-f32")
if(TEST test_qwen35)
  set_tests_properties(test_qwen35 PROPERTIES FIXTURES_REQUIRED "${_q35_fixtures}"
    ENVIRONMENT "ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS}" LABELS qwen35)
  if(ANVIL_VULKAN AND EXISTS ${_lvp})
    add_test(NAME test_qwen35_vulkan COMMAND test_qwen35 --vulkan WORKING_DIRECTORY ${ANVIL_TESTS})
    set_tests_properties(test_qwen35_vulkan PROPERTIES TIMEOUT 900 FIXTURES_REQUIRED "${_q35_fixtures}" LABELS qwen35
      ENVIRONMENT "ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS};ANVIL_VK_VALIDATE=1;VK_ICD_FILENAMES=${_lvp};ANVIL_VK_REQUIRE=1;ASAN_OPTIONS=detect_leaks=0")
  endif()
endif()
if(TEST test_delta_net_ops AND EXISTS ${_lvp})
  set_tests_properties(test_delta_net_ops PROPERTIES LABELS qwen35
    ENVIRONMENT "ANVIL_VK_VALIDATE=1;VK_ICD_FILENAMES=${_lvp};ANVIL_VK_REQUIRE=1;ASAN_OPTIONS=detect_leaks=0")
endif()
add_test(NAME qwen35_malformed
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/model/qwen35_malformed.py --anvil $<TARGET_FILE:anvil>
                 --gen ${CMAKE_SOURCE_DIR}/tools/make_test_model.py --dir ${ANVIL_TEST_MODELS}/qwen35-malformed)
set_tests_properties(qwen35_malformed PROPERTIES TIMEOUT 300 LABELS qwen35)
