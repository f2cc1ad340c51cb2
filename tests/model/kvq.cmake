# kvq.cmake: included after models.cmake, whose model fixtures it uses.
# Owns: the whole-model check of the quantized KV caches (tests/model/kv_quant_kl.py): for each
# model of tests/data/golden/kvq/manifest.json, `anvil eval` with f16, q8_0 and q4_0 caches on
# the same backend, the KL of q8_0/q4_0 against f16 bounded (q4_0: 1.25 x llama.cpp's own
# -ctk q4_0 KL, committed), the f16 run against the committed llama.cpp f16-KV dump; on the CPU
# and on lavapipe (Khronos validation layer inserted, zero messages).
anvil_tests_need_python(kvq numpy gguf)
set(_kvq_dir ${ANVIL_TESTS}/data/golden/kvq)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_kvq_dir}/manifest.json)
file(READ ${_kvq_dir}/manifest.json _kvq_manifest)
string(JSON _kvq_n LENGTH "${_kvq_manifest}" models)
math(EXPR _kvq_last "${_kvq_n} - 1")
set(_lvp /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
foreach(i RANGE ${_kvq_last})
  string(JSON _name MEMBER "${_kvq_manifest}" models ${i})
  if(NOT TEST golden_model_${_name})
    message(FATAL_ERROR "kvq.cmake: ${_name} has no model fixture in tests/data/golden/manifest.json")
  endif()
  string(JSON _digest GET "${_kvq_manifest}" models ${_name} weights_sha256)
  string(JSON _q4 GET "${_kvq_manifest}" models ${_name} max_kl_q4_0)
  string(JSON _q8 GET "${_kvq_manifest}" models ${_name} max_kl_q8_0)
  set(_cmp ${Python3_EXECUTABLE} ${ANVIL_TESTS}/model/kv_quant_kl.py --anvil $<TARGET_FILE:anvil>
           --model ${ANVIL_TEST_MODELS}/${_name}.gguf --base ${_kvq_dir}/${_name}.kld.gz --expect-digest ${_digest}
           --max-kl-q4 ${_q4} --max-kl-q8 ${_q8})
  add_test(NAME kvq_${_name} COMMAND ${_cmp})
  set_tests_properties(kvq_${_name} PROPERTIES FIXTURES_REQUIRED anvil_model_${_name} TIMEOUT 300 LABELS "golden;kvq")
  if(ANVIL_VULKAN AND EXISTS ${_lvp})
    add_test(NAME kvq_vulkan_${_name} COMMAND ${_cmp} --vulkan)
    set_tests_properties(kvq_vulkan_${_name} PROPERTIES FIXTURES_REQUIRED anvil_model_${_name} TIMEOUT 600
                         LABELS "golden;kvq" ENVIRONMENT "VK_ICD_FILENAMES=${_lvp};ASAN_OPTIONS=detect_leaks=0")
  endif()
endforeach()

# The measuring tool behind the README's KV-cache numbers (not a test): tests/model/kvq_measure.c.
add_executable(kvq_measure ${ANVIL_TESTS}/model/kvq_measure.c)
target_link_libraries(kvq_measure PRIVATE anvil_testutil anvil_engine)
target_include_directories(kvq_measure PRIVATE ${ANVIL_TESTS}/vulkan)
