# server_models.cmake: the server's model-management endpoints (/api/tags, show, ps,
# pull, create, copy, delete, blobs, version), /metrics, and `anvil ps` / `anvil stop`,
# end to end: `anvil serve` on a free port with a private store, driven by Ollama's own
# Python client (and its JavaScript client when tests/server/models/node has its
# node_modules). Test models are generated tiny GGUFs (tools/make_test_model.py).
anvil_tests_need_python(server_models ollama numpy gguf)

set(_sm_dir ${ANVIL_TESTS}/server/models)
set(_sm_work ${CMAKE_CURRENT_BINARY_DIR}/server-models)
add_test(NAME server_models_api
         COMMAND ${Python3_EXECUTABLE} ${_sm_dir}/models_api.py $<TARGET_FILE:anvil> ${_sm_work}/api)
add_test(NAME server_models_pull
         COMMAND ${Python3_EXECUTABLE} ${_sm_dir}/pull_api.py $<TARGET_FILE:anvil> ${_sm_work}/pull)
add_test(NAME server_models_store_disk
         COMMAND ${Python3_EXECUTABLE} ${_sm_dir}/store_disk.py $<TARGET_FILE:anvil> ${_sm_work}/store-disk)
add_test(NAME server_models_create_race
         COMMAND ${Python3_EXECUTABLE} ${_sm_dir}/create_race.py $<TARGET_FILE:anvil> ${_sm_work}/create-race 200)
set_tests_properties(server_models_api server_models_pull server_models_store_disk server_models_create_race
                     PROPERTIES TIMEOUT 600 LABELS server)

find_program(ANVIL_NODE node)
if(ANVIL_NODE)
  add_test(NAME server_models_node
           COMMAND ${Python3_EXECUTABLE} ${_sm_dir}/node_client.py $<TARGET_FILE:anvil> ${_sm_work}/node ${ANVIL_NODE})
  set_tests_properties(server_models_node PROPERTIES TIMEOUT 600 LABELS server SKIP_RETURN_CODE 77)
endif()
