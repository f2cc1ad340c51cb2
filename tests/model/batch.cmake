# batch.cmake: continuous batching (model_eval_multi) against one-sequence-at-a-time
# evaluation, on the CPU and on lavapipe (validation layer on, zero messages), using the
# synthetic models the fixtures of tests/model/models.cmake generate.
if(NOT TARGET test_batch_eval)
  return()
endif()
set(_anvil_batch_models llama-tiny-f32 qwen2-tiny-f32 gemma3-tiny-f32 qwen3-tiny-q4_1 llama-tinyk-q4_K)
set(_anvil_batch_fixtures "")
foreach(m ${_anvil_batch_models})
  if(TEST golden_model_${m})
    list(APPEND _anvil_batch_fixtures anvil_model_${m})
  endif()
endforeach()
set_tests_properties(test_batch_eval PROPERTIES FIXTURES_REQUIRED "${_anvil_batch_fixtures}"
  ENVIRONMENT "ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS}")
if(ANVIL_VULKAN)
  set(_lvp /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
  set(_env "ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS};ANVIL_VK_VALIDATE=1;ASAN_OPTIONS=detect_leaks=0")
  if(EXISTS ${_lvp})
    list(APPEND _env "VK_ICD_FILENAMES=${_lvp}" "ANVIL_VK_REQUIRE=1")
  endif()
  add_test(NAME test_batch_eval_vulkan COMMAND test_batch_eval --vulkan WORKING_DIRECTORY ${ANVIL_TESTS})
  set_tests_properties(test_batch_eval_vulkan PROPERTIES TIMEOUT 600 FIXTURES_REQUIRED "${_anvil_batch_fixtures}"
    ENVIRONMENT "${_env}")
endif()
