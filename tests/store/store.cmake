# store.cmake: the model store through the CLI (tests/store/store_cli.py): a fake Ollama store
# in a temporary HOME run by name, `anvil create` from Modelfiles whose PARAMETERs, SYSTEM and
# TEMPLATE must take effect, show/list/cp/rm, hostile names. Needs python3 with numpy and gguf
# (tools/make_test_model.py makes the tiny model). The C side: tests/store/test_store.c, test_modelfile.c.
anvil_tests_need_python(store numpy gguf)
add_test(NAME store_cli
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/store/store_cli.py $<TARGET_FILE:anvil>
                 ${CMAKE_SOURCE_DIR}/tools/make_test_model.py ${CMAKE_CURRENT_BINARY_DIR}/store-cli)
set_tests_properties(store_cli PROPERTIES TIMEOUT 600 LABELS store)
# `anvil verify` (re-hashing every blob of a manifest; read-only on the Ollama store) and blob
# verification when create reuses a store model's blob.
add_test(NAME store_verify_cli
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/store/verify_cli.py $<TARGET_FILE:anvil>
                 ${CMAKE_SOURCE_DIR}/tools/make_test_model.py ${CMAKE_CURRENT_BINARY_DIR}/verify-cli)
set_tests_properties(store_verify_cli PROPERTIES TIMEOUT 300 LABELS store)
