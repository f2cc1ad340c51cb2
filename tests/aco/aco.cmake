# The AMD-compiler gate (issue 29, tools/aco/): every pipeline Anvil can create compiled by ACO
# on RADV's null device for six AMD families; fails on a spill, a pipeline over its class's VGPR
# budget or a compiler crash. Skipped (77, one line saying why) where the trixie root cannot be
# made: not root, no mmdebstrap/zstd, no network and no cached tarball. Label aco.
if(NOT TARGET aco_pipestats)
  return()
endif()
if(ANVIL_SANITIZE) # the harness runs inside the trixie root, which has no sanitizer runtime;
  message(STATUS "aco_gate: not in the sanitizer build (the release build runs it)") # it checks shaders, not host code
  return()
endif()
add_test(NAME aco_gate COMMAND ${CMAKE_SOURCE_DIR}/tools/aco/gate.sh $<TARGET_FILE:aco_pipestats>
         --tsv ${CMAKE_BINARY_DIR}/aco/aco-stats.tsv)
set_tests_properties(aco_gate PROPERTIES LABELS aco SKIP_RETURN_CODE 77 TIMEOUT 900)
