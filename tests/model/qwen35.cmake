# qwen35.cmake: the Qwen3.5 / 3.6 dense family (engine/model/qwen35.c, delta_net.c) against today's
# llama.cpp and its own invariants. Owns: the goldens of tests/data/golden/qwen35/manifest.json
# (anvil_llamacpp_goldens: KL per position vs llama.cpp's dump, CPU; the recurrent ops have no
# Vulkan shaders yet, so the lavapipe comparisons are not registered), tests/model/test_qwen35.c
# (chunk invariance of a 2,000-token prompt, model_eval_multi vs one sequence at a time, prefix
# reuse through truncate) and the malformed-file refusals (tests/model/qwen35_malformed.py).
anvil_tests_need_python(qwen35 numpy gguf)
include(${ANVIL_TESTS}/model/vs_llamacpp.cmake)
set(_anvil_q35_vulkan ${ANVIL_VULKAN})
set(ANVIL_VULKAN OFF)   # no recurrent-op shaders: a qwen35 layer on Vulkan is refused at load
anvil_llamacpp_goldens(qwen35)
set(ANVIL_VULKAN ${_anvil_q35_vulkan})
if(TEST test_qwen35)
  set_tests_properties(test_qwen35 PROPERTIES FIXTURES_REQUIRED "anvil_qwen35_qwen35-tiny-f32;anvil_qwen35_qwen35-tinyk-q4_K_M"
    ENVIRONMENT "ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS}" LABELS qwen35)
endif()
add_test(NAME qwen35_malformed
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/model/qwen35_malformed.py --anvil $<TARGET_FILE:anvil>
                 --gen ${CMAKE_SOURCE_DIR}/tools/make_test_model.py --dir ${ANVIL_TEST_MODELS}/qwen35-malformed)
set_tests_properties(qwen35_malformed PROPERTIES TIMEOUT 300 LABELS qwen35)
