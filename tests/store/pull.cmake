# pull.cmake: `anvil pull` against the local registry tests/pylib/registry_server.py (python
# stdlib): a tiny llama model (tools/make_test_model.py) is served as library/tiny:latest and
# hf.co-style someuser/tiny-GGUF:Q8_0; tests/store/pull/pull_cases.py runs one case per test in a
# temporary HOME and ANVIL_MODELS (see its docstring for what each case checks).
if(NOT TARGET anvil)
  return()
endif()
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "pull: python3 missing; pull tests skipped")
  return()
endif()
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import numpy, gguf"
                RESULT_VARIABLE _anvil_pull_py_ok OUTPUT_QUIET ERROR_QUIET)
if(NOT _anvil_pull_py_ok EQUAL 0)
  message(WARNING "pull: python3 lacks numpy or gguf (gguf-py); pull tests skipped")
  return()
endif()

set(ANVIL_PULL_MODEL ${ANVIL_TEST_MODELS}/pull-tiny-q8_0.gguf)
add_test(NAME pull_model
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/make_test_model.py --family llama
                 --preset tiny --type q8_0 --out ${ANVIL_PULL_MODEL} --if-changed)
set_tests_properties(pull_model PROPERTIES FIXTURES_SETUP anvil_pull_model TIMEOUT 300 LABELS pull)

foreach(case basic resume corrupt errors hf names)
  add_test(NAME pull_${case}
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/store/pull/pull_cases.py
                   $<TARGET_FILE:anvil> ${ANVIL_PULL_MODEL} ${case})
  set_tests_properties(pull_${case} PROPERTIES FIXTURES_REQUIRED anvil_pull_model TIMEOUT 300 LABELS pull)
endforeach()
