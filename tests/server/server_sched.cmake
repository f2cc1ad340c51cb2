# server_sched.cmake: the models test_server_sched runs on: two tiny F32 models (F32 so a
# batched forward pass gives bit-identical logits to a single one) made by
# tools/make_test_model.py into ${ANVIL_TEST_MODELS}, passed through the environment.
anvil_tests_need_python(server_sched numpy gguf)
set(_sched_m1 ${ANVIL_TEST_MODELS}/sched-llama-tiny-f32.gguf)
set(_sched_m2 ${ANVIL_TEST_MODELS}/sched-qwen2-tiny-f32.gguf)
add_test(NAME server_sched_model_llama
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/make_test_model.py --family llama
                 --preset tiny --type f32 --out ${_sched_m1} --if-changed)
add_test(NAME server_sched_model_qwen2
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/make_test_model.py --family qwen2
                 --preset tiny --type f32 --out ${_sched_m2} --if-changed)
set_tests_properties(server_sched_model_llama server_sched_model_qwen2 PROPERTIES
                     FIXTURES_SETUP anvil_sched_models TIMEOUT 300)
set_tests_properties(test_server_sched PROPERTIES
                     FIXTURES_REQUIRED anvil_sched_models
                     ENVIRONMENT "ANVIL_SCHED_MODEL=${_sched_m1};ANVIL_SCHED_MODEL2=${_sched_m2};ANVIL_DEVICE=cpu"
                     SKIP_RETURN_CODE 77)
