# iq.cmake: the i-quant and ternary weight types (IQ4_NL ... IQ1_M, TQ1_0, TQ2_0) on a whole
# model against today's llama.cpp. Owns one CPU and two lavapipe tests (mat-mat, mat-vec) per
# model of tests/data/golden/iq/manifest.json: the committed GGUF (a synthetic llama quantized by
# llama-quantize with an importance matrix; regen.sh) against its committed llama-perplexity
# --kl-divergence-base dump (tests/model/moe_vs_llamacpp.py --base: KL per position, confident
# top-1, first greedy token where llama.cpp's top-1 leads by > 0.05; on Vulkan the Khronos
# validation layer inserted, zero messages).
anvil_tests_need_python(iq numpy gguf)
set(_iq_dir ${ANVIL_TESTS}/data/golden/iq)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_iq_dir}/manifest.json)
file(READ ${_iq_dir}/manifest.json _iq_manifest)
string(JSON _iq_n LENGTH "${_iq_manifest}" models)
math(EXPR _iq_last "${_iq_n} - 1")
set(_iq_lvp /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
foreach(i RANGE ${_iq_last})
  string(JSON _name MEMBER "${_iq_manifest}" models ${i})
  foreach(_be cpu vulkan)
    string(JSON _max_kl GET "${_iq_manifest}" models ${_name} max_kl_${_be})
    set(_cmp ${Python3_EXECUTABLE} ${ANVIL_TESTS}/model/moe_vs_llamacpp.py --anvil $<TARGET_FILE:anvil>
             --model ${_iq_dir}/${_name}.gguf --base ${_iq_dir}/${_name}.kld.gz --max-kl ${_max_kl} --greedy-margin 0.05)
    if(_be STREQUAL "cpu")
      add_test(NAME iq_golden_${_name} COMMAND ${_cmp})
      set_tests_properties(iq_golden_${_name} PROPERTIES TIMEOUT 300 LABELS "golden;iq")
    elseif(ANVIL_VULKAN AND EXISTS ${_iq_lvp})
      add_test(NAME iq_golden_vulkan_${_name} COMMAND ${_cmp} --vulkan)
      set_tests_properties(iq_golden_vulkan_${_name} PROPERTIES TIMEOUT 600 LABELS "golden;iq"
                           ENVIRONMENT "VK_ICD_FILENAMES=${_iq_lvp};ASAN_OPTIONS=detect_leaks=0")
      # the 63-token prompt through the mat-vec kernels (8 tokens per pass) instead of mat-mat
      add_test(NAME iq_golden_vulkan_mv_${_name} COMMAND ${_cmp} --vulkan)
      set_tests_properties(iq_golden_vulkan_mv_${_name} PROPERTIES TIMEOUT 600 LABELS "golden;iq"
                           ENVIRONMENT "VK_ICD_FILENAMES=${_iq_lvp};ASAN_OPTIONS=detect_leaks=0;ANVIL_VK_MV_MAX_TOK=64")
    endif()
  endforeach()
endforeach()
