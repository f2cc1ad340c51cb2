# CPU backend extras: the micro-benchmark (a tool, not a ctest test).
add_executable(bench_cpu_ops ${ANVIL_TESTS}/cpu/bench_cpu_ops.c)
target_link_libraries(bench_cpu_ops PRIVATE anvil_engine)
