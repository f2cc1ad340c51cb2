# Vulkan tests: select lavapipe explicitly (only its ICD is loaded, and the tests pick the
# CPU-type device), run under the Khronos validation layer and require zero messages.
# test_vulkan_ops runs twice: every optional path, then the fallbacks (fp16, subgroup and
# int8 dot disabled). Included from tests/CMakeLists.txt.
if(NOT TARGET test_vulkan_ops)
  return()
endif()
set(ANVIL_LVP_ICD /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
set(ANVIL_VK_TEST_ENV "ANVIL_VK_VALIDATE=1")
if(EXISTS ${ANVIL_LVP_ICD})
  list(APPEND ANVIL_VK_TEST_ENV "VK_ICD_FILENAMES=${ANVIL_LVP_ICD}" "ANVIL_VK_REQUIRE=1")
endif()
# Mesa/LLVM keep some allocations until exit: LeakSanitizer would flag the driver, not us.
list(APPEND ANVIL_VK_TEST_ENV "ASAN_OPTIONS=detect_leaks=0")

set_tests_properties(test_vulkan_ops PROPERTIES ENVIRONMENT "${ANVIL_VK_TEST_ENV}")
add_test(NAME test_vulkan_ops_fallback COMMAND test_vulkan_ops WORKING_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(test_vulkan_ops_fallback PROPERTIES TIMEOUT 600
  ENVIRONMENT "${ANVIL_VK_TEST_ENV};ANVIL_VK_DISABLE=fp16,subgroup,int8")
foreach(t test_vulkan_large test_vulkan_loader test_vulkan_model)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES ENVIRONMENT "${ANVIL_VK_TEST_ENV};ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS}")
  endif()
endforeach()
