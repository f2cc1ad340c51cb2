# Device layer CLI tests: `anvil devices` / `anvil doctor` on this machine (CPU and, where
# installed, lavapipe; the missing-ICD diagnosis): tools/cli/cmd_devices.c.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME cli_devices
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/device/check_devices.py $<TARGET_FILE:anvil>)
set_tests_properties(cli_devices PROPERTIES TIMEOUT 300 PASS_REGULAR_EXPRESSION ", 0 failed"
                     ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0") # Mesa/LLVM keep allocations until exit

# Backend errors reach the caller (no process exit; one sticky error for the CPU and the
# Vulkan backend, checked by the forward pass): the CPU and lavapipe (validation layer on,
# zero messages), with the synthetic llama model of tests/model/models.cmake.
if(TARGET test_backend_errors)
  set(_anvil_be_env "ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS}")
  if(ANVIL_VK_TEST_ENV)
    list(APPEND _anvil_be_env ${ANVIL_VK_TEST_ENV})
  endif()
  set_tests_properties(test_backend_errors PROPERTIES ENVIRONMENT "${_anvil_be_env}")
  if(TEST golden_model_llama-tiny-f32)
    set_tests_properties(test_backend_errors PROPERTIES FIXTURES_REQUIRED anvil_model_llama-tiny-f32)
  endif()
endif()
