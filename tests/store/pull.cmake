# pull.cmake: `anvil pull` against the local registry tests/pylib/registry_server.py (python
# stdlib): a tiny llama model (tools/make_test_model.py) is served as library/tiny:latest and
# hf.co-style someuser/tiny-GGUF:Q8_0; tests/store/pull/pull_cases.py runs one case per test in a
# temporary HOME and ANVIL_MODELS (see its docstring for what each case checks).
anvil_tests_need_python(pull numpy gguf)

set(ANVIL_PULL_MODEL ${ANVIL_TEST_MODELS}/pull-tiny-q8_0.gguf)
add_test(NAME pull_model
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/make_test_model.py --family llama
                 --preset tiny --type q8_0 --out ${ANVIL_PULL_MODEL} --if-changed)
set_tests_properties(pull_model PROPERTIES FIXTURES_SETUP anvil_pull_model TIMEOUT 300 LABELS pull)

foreach(case basic resume corrupt errors hf names concurrent)
  add_test(NAME pull_${case}
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/store/pull/pull_cases.py
                   $<TARGET_FILE:anvil> ${ANVIL_PULL_MODEL} ${case})
  set_tests_properties(pull_${case} PROPERTIES FIXTURES_REQUIRED anvil_pull_model TIMEOUT 300 LABELS pull)
endforeach()
