# bench.cmake: the benchmark instruments (engine/model/bench.c, cpu/membw.c, `anvil bench`).
# Two small synthetic models (a llama with rope_freqs and an untied head in Q4_0; a gemma3
# with a tied head and sliding-window layers in Q8_0) are generated once; on each:
#  - test_bench MODEL: weight bytes per token vs the file's tensor list, the pp/tg loops;
#  - check_bench.py: `anvil bench -o json|jsonl|csv|md` fields and the bandwidth accounting
#    against an independent count made with gguf-py. No speed is asserted.
# (test_bench without arguments, the statistics/KV/membw unit checks, is registered by
# tests/CMakeLists.txt like every tests/test_*.c.)
anvil_tests_need_python(bench numpy gguf)

# The Vulkan bandwidth probe, where it is built (engine/vulkan/CMakeLists.txt defines
# ANVIL_HAVE_VULKAN and compiles shaders/membw_read.comp); exit 77 = skipped (no usable
# Vulkan device). Mesa/LLVM keep allocations until exit, so no leak check (like devices.cmake).
set(_anvil_core_defs "")
if(TARGET anvil_vulkan)
  set(_anvil_core_defs ANVIL_HAVE_VULKAN)
endif()
if(_anvil_core_defs MATCHES "ANVIL_HAVE_VULKAN")
  add_test(NAME bench_vulkan_membw COMMAND test_bench --vulkan-membw)
  set_tests_properties(bench_vulkan_membw PROPERTIES TIMEOUT 600 LABELS bench SKIP_RETURN_CODE 77
                       ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0")
endif()

# family:type of each model (preset tiny)
foreach(entry llama:q4_0 gemma3:q8_0)
  string(REPLACE ":" ";" parts "${entry}")
  list(GET parts 0 family)
  list(GET parts 1 type)
  set(name bench-${family}-tiny-${type})
  set(path ${ANVIL_TEST_MODELS}/${name}.gguf)
  add_test(NAME bench_model_${name}
           COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/make_test_model.py --family ${family}
                   --preset tiny --type ${type} --out ${path} --if-changed)
  set_tests_properties(bench_model_${name} PROPERTIES FIXTURES_SETUP anvil_bench_${name} TIMEOUT 300 LABELS bench)

  add_test(NAME bench_accounting_${name} COMMAND test_bench ${path})
  set_tests_properties(bench_accounting_${name} PROPERTIES FIXTURES_REQUIRED anvil_bench_${name} TIMEOUT 600 LABELS bench)

  add_test(NAME bench_cli_${name}
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/model/check_bench.py
                   --anvil $<TARGET_FILE:anvil> --model ${path})
  set_tests_properties(bench_cli_${name} PROPERTIES FIXTURES_REQUIRED anvil_bench_${name} TIMEOUT 600 LABELS bench)
endforeach()
