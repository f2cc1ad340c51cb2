# store.cmake: the model store through the CLI (tests/store/store_cli.py): a fake Ollama store
# in a temporary HOME run by name, `anvil create` from Modelfiles whose PARAMETERs, SYSTEM and
# TEMPLATE must take effect, show/list/cp/rm, hostile names. Needs python3 with numpy and gguf
# (tools/make_test_model.py makes the tiny model). The C side: tests/store/test_store.c, test_modelfile.c.
if(NOT TARGET anvil)
  return()
endif()
find_package(Python3 COMPONENTS Interpreter)
if(NOT Python3_Interpreter_FOUND)
  message(STATUS "store: python3 missing; the store CLI test is skipped")
  return()
endif()
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import numpy, gguf"
                RESULT_VARIABLE _anvil_store_py_ok OUTPUT_QUIET ERROR_QUIET)
if(NOT _anvil_store_py_ok EQUAL 0)
  message(WARNING "store: python3 lacks numpy or gguf (gguf-py); the store CLI test is skipped")
  return()
endif()
add_test(NAME store_cli
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/store/store_cli.py $<TARGET_FILE:anvil>
                 ${CMAKE_SOURCE_DIR}/tools/make_test_model.py ${CMAKE_CURRENT_BINARY_DIR}/store-cli)
set_tests_properties(store_cli PROPERTIES TIMEOUT 600 LABELS store)
