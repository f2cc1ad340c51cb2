# agent_apis.cmake: Anthropic's Messages API and OpenAI's Responses API of `anvil serve`
# through the official SDKs (the anthropic and openai Python packages), tests/server/agent_apis.py.
# Its own tiny models (qwen3 with a Qwen 3 template under ANVIL_TEST_REPLAY, gemma3 sampled).
anvil_tests_need_python(agent-apis numpy gguf anthropic openai jsonschema)

add_test(NAME server_agent_apis
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/server/agent_apis.py $<TARGET_FILE:anvil>
                 ${CMAKE_CURRENT_BINARY_DIR}/server-agent-apis)
set_tests_properties(server_agent_apis PROPERTIES TIMEOUT 300 LABELS server)
