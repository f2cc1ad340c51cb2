# CPU backend extras: the micro-benchmark (a tool, not a ctest test).
add_executable(bench_cpu_ops ${ANVIL_TESTS}/cpu/bench_cpu_ops.c)
target_link_libraries(bench_cpu_ops PRIVATE anvil_engine anvil_cpu)

# The repack cache (cpu/repack_cache.h) on two synthetic models; forks (no Windows build).
if(TEST test_repack_cache)
  set(_anvil_rpc_fixtures "")
  foreach(m llama-tinyk-q4_K llama-tiny-q8_0)
    if(TEST golden_model_${m})
      list(APPEND _anvil_rpc_fixtures anvil_model_${m})
    endif()
  endforeach()
  set_tests_properties(test_repack_cache PROPERTIES FIXTURES_REQUIRED "${_anvil_rpc_fixtures}"
    ENVIRONMENT "ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS}")
endif()
