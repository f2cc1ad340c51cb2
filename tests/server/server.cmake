# server.cmake: `anvil serve` end to end (tests/server/*.py): the real ollama/openai
# Python clients and the ollama npm client, NDJSON/SSE framing with curl, CORS/auth/logs,
# and hostile input (bad JSON and types, 413, disconnects, 64 concurrent requests,
# SIGTERM with no leaks under ASan). One tiny generated model (gemma3 family: it has a
# chat template) is the fixture.
anvil_tests_need_python(server numpy gguf ollama openai jsonschema)

set(_server_model ${ANVIL_TEST_MODELS}/server-gemma3-tiny-q8_0.gguf)
add_test(NAME server_model
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/make_test_model.py --family gemma3 --preset tiny
                 --type q8_0 --out ${_server_model} --if-changed)
set_tests_properties(server_model PROPERTIES FIXTURES_SETUP anvil_server_model TIMEOUT 300)

set(_sanitize "")
if(ANVIL_SANITIZE)
  set(_sanitize --sanitize)
endif()
add_test(NAME server_clients
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/clients.py $<TARGET_FILE:anvil> ${_server_model}
                 --node-dir ${CMAKE_CURRENT_BINARY_DIR}/server-node)
add_test(NAME server_framing
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/framing.py $<TARGET_FILE:anvil> ${_server_model})
add_test(NAME server_hostile
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/hostile.py $<TARGET_FILE:anvil> ${_server_model}
                 ${_sanitize})
add_test(NAME server_hardening
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/hardening.py $<TARGET_FILE:anvil> ${_server_model})
add_test(NAME server_agents
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/agents.py $<TARGET_FILE:anvil> ${CMAKE_CURRENT_BINARY_DIR}/server-agents)
set_tests_properties(server_agents PROPERTIES TIMEOUT 300 LABELS server)
# logprobs / top_logprobs on both APIs against `anvil eval`'s log-softmax (tests/server/logprobs.py)
add_test(NAME server_logprobs
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/logprobs.py $<TARGET_FILE:anvil> ${_server_model})
# a hybrid model (qwen35: recurrent state per slot) served to 4 clients at once: the same text as one
# at a time, and prefix reuse through a state checkpoint (tests/server/hybrid_parallel.py)
if(TEST qwen35_model_qwen35-tiny-f32)
  add_test(NAME server_hybrid_parallel
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/hybrid_parallel.py $<TARGET_FILE:anvil>
                   ${ANVIL_TEST_MODELS}/qwen35-tiny-f32.gguf)
  set_tests_properties(server_hybrid_parallel PROPERTIES FIXTURES_REQUIRED anvil_qwen35_qwen35-tiny-f32 TIMEOUT 300
                       LABELS "server;qwen35")
endif()
# images on every generation API against the text-only model: 400s that name the problem (issue 32)
add_test(NAME server_images_api
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/images_api.py $<TARGET_FILE:anvil> ${_server_model})
add_test(NAME server_run_client
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/run_client.py $<TARGET_FILE:anvil> ${_server_model})
# A loaded model's GGUF truncated in place: the server survives (no SIGBUS), the request is a
# clean error, the model reloads once the file is whole.
add_test(NAME server_shrink
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/shrink.py $<TARGET_FILE:anvil> ${_server_model})
set_tests_properties(server_clients server_framing server_hostile server_hardening server_run_client server_shrink server_logprobs
                     server_images_api PROPERTIES
                     FIXTURES_REQUIRED anvil_server_model TIMEOUT 900 LABELS server)
# Its disconnect and load rounds time how fast the server notices gone clients and frees
# slots; beside a lavapipe test under ASan on 2 cores those waits measure the neighbour
# (4 s alone, over 30 s beside one): it runs alone.
set_tests_properties(server_hostile PROPERTIES RUN_SERIAL TRUE)

# The same server with its model on lavapipe (Vulkan), validation layer on.
if(ANVIL_VULKAN)
  add_test(NAME server_lavapipe
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/lavapipe_serve.py $<TARGET_FILE:anvil>
                   ${_server_model} /usr/share/vulkan/icd.d/lvp_icd.x86_64.json)
  set_tests_properties(server_lavapipe PROPERTIES FIXTURES_REQUIRED anvil_server_model TIMEOUT 900
                       LABELS server SKIP_RETURN_CODE 77)
endif()

# Remote attacks on the HTTP layer: long request text in show, DNS rebinding (Host),
# slowloris (1,100 half-sent requests, idle timeout), the open-listener warning.
add_test(NAME server_http_hardening
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/http_hardening.py $<TARGET_FILE:anvil> ${_server_model})
set_tests_properties(server_http_hardening PROPERTIES FIXTURES_REQUIRED anvil_server_model TIMEOUT 300
                     LABELS server)
# Ollama's environment names as fallbacks of ANVIL_*: each OLLAMA_* variable alone, observed.
add_test(NAME server_ollama_env
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/ollama_env.py $<TARGET_FILE:anvil> ${_server_model})
set_tests_properties(server_ollama_env PROPERTIES FIXTURES_REQUIRED anvil_server_model TIMEOUT 300 LABELS server)
# tools/deploy: the Kubernetes manifests schema-validated and the Dockerfile linted (real tools from PyPI)
add_test(NAME deploy_lint COMMAND bash ${ANVIL_TESTS}/server/deploy_lint.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(deploy_lint PROPERTIES TIMEOUT 120 LABELS server)
# Embedding models through the real ollama/openai clients: the embed_models fixture's bert (CLS),
# bert-mean and nomic-bert (tests/model/embed.cmake) against llama-embedding's goldens (cosine
# >= 0.9999) on /api/embed, /api/embeddings and /v1/embeddings (floats, base64, token arrays),
# truncation, capabilities, and the 400 for generation on an embedding-only model.
add_test(NAME server_embed
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/embed_models.py $<TARGET_FILE:anvil> ${ANVIL_TEST_MODELS}
                 ${ANVIL_TESTS}/data/embed)
set_tests_properties(server_embed PROPERTIES FIXTURES_REQUIRED embed_models TIMEOUT 300 LABELS server)
# Several replicas behind a router: /api/ps's "anvil" fields through the real ollama client's ps(),
# /metrics with a replica label on every series (parsed by prometheus_client and prom.py), `anvil ps -v`.
anvil_tests_need_python(server_replicas prometheus_client)
add_test(NAME server_replicas
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/replicas.py $<TARGET_FILE:anvil> ${_server_model}
                 ${ANVIL_TEST_MODELS}/embed-bert.gguf)
set_tests_properties(server_replicas PROPERTIES FIXTURES_REQUIRED "anvil_server_model;embed_models" TIMEOUT 300
                     LABELS server)
# Work nobody waits for stops: a client hanging up in a long /api/embed, and SIGTERM during one.
add_test(NAME server_abandon_work
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/abandon_work.py $<TARGET_FILE:anvil> ${ANVIL_TEST_MODELS}/embed-bert.gguf)
set_tests_properties(server_abandon_work PROPERTIES FIXTURES_REQUIRED embed_models TIMEOUT 300 LABELS server)
