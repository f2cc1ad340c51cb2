# moe.cmake: the mixture-of-experts families (engine/model/moe.c; gpt-oss: gptoss.c) and the
# other synthetic models of the manifest (gemma3's window variants, mistral3) against today's llama.cpp.
# Owns: one fixture per synthetic MoE model of tests/data/golden/moe/manifest.json
# (tools/make_test_model.py), the comparison of `anvil eval` with the committed llama.cpp dump
# of each (tests/model/moe_vs_llamacpp.py --base: KL per position, confident top-1, greedy), for
# quantized files also the KL to the unquantized model's dump against llama.cpp's (--truth),
# on the CPU and on lavapipe (Khronos validation layer inserted, zero messages), and the
# malformed-file refusals (tests/model/moe_malformed.py, gptoss_malformed.py, mistral3_malformed.py).
# An entry with "golden" is compared with that other entry's dump (the same weights under
# other metadata keys: mistral3-tiny-f32-ollama, Ollama's names for the YaRN and temperature keys).
anvil_tests_need_python(moe numpy gguf)
set(_moe_dir ${ANVIL_TESTS}/data/golden/moe)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_moe_dir}/manifest.json)
file(READ ${_moe_dir}/manifest.json _moe_manifest)
string(JSON _moe_n LENGTH "${_moe_manifest}" models)
math(EXPR _moe_last "${_moe_n} - 1")
set(_lvp /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
foreach(i RANGE ${_moe_last})
  string(JSON _name MEMBER "${_moe_manifest}" models ${i})
  string(JSON _n_args LENGTH "${_moe_manifest}" models ${_name} args)
  math(EXPR _last_arg "${_n_args} - 1")
  set(_args "")
  foreach(j RANGE ${_last_arg})
    string(JSON _a GET "${_moe_manifest}" models ${_name} args ${j})
    list(APPEND _args ${_a})
  endforeach()
  string(JSON _max_kl ERROR_VARIABLE _no_max_kl GET "${_moe_manifest}" models ${_name} max_kl)
  string(JSON _truth ERROR_VARIABLE _no_truth GET "${_moe_manifest}" models ${_name} truth)
  string(JSON _digest GET "${_moe_manifest}" models ${_name} weights_sha256)
  # golden: another entry's dump (the same weights under other metadata keys, e.g. Ollama's)
  string(JSON _golden ERROR_VARIABLE _no_golden GET "${_moe_manifest}" models ${_name} golden)
  if(_no_golden)
    set(_golden ${_name})
  endif()
  set(_path ${ANVIL_TEST_MODELS}/${_name}.gguf)
  add_test(NAME moe_model_${_name}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/make_test_model.py ${_args} --anvil $<TARGET_FILE:anvil>
                   --out ${_path} --if-changed)
  set_tests_properties(moe_model_${_name} PROPERTIES FIXTURES_SETUP anvil_moe_${_name} TIMEOUT 300 LABELS "golden;moe")
  set(_cmp ${Python3_EXECUTABLE} ${ANVIL_TESTS}/model/moe_vs_llamacpp.py --anvil $<TARGET_FILE:anvil> --model ${_path}
           --base ${_moe_dir}/${_golden}.kld.gz --expect-digest ${_digest})
  # golden: agreement with llama.cpp's run of the same file (max_kl); truth (quantized MoE): the
  # mean KL to the unquantized model's logits within 1.1x of llama.cpp's own
  foreach(_kind golden truth)
    if(_kind STREQUAL golden AND NOT _no_max_kl)
      set(_extra --max-kl ${_max_kl})
    elseif(_kind STREQUAL truth AND NOT _no_truth)
      set(_extra --truth ${_moe_dir}/${_truth}.kld.gz)
    else()
      continue()
    endif()
    add_test(NAME moe_${_kind}_${_name} COMMAND ${_cmp} ${_extra})
    set_tests_properties(moe_${_kind}_${_name} PROPERTIES FIXTURES_REQUIRED anvil_moe_${_name} TIMEOUT 300 LABELS "golden;moe")
    if(ANVIL_VULKAN AND EXISTS ${_lvp})
      add_test(NAME moe_${_kind}_vulkan_${_name} COMMAND ${_cmp} ${_extra} --vulkan)
      set_tests_properties(moe_${_kind}_vulkan_${_name} PROPERTIES FIXTURES_REQUIRED anvil_moe_${_name} TIMEOUT 600
                           LABELS "golden;moe" ENVIRONMENT "VK_ICD_FILENAMES=${_lvp};ASAN_OPTIONS=detect_leaks=0")
    endif()
  endforeach()
endforeach()
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
