# Device layer CLI tests: `anvil devices` / `anvil doctor` on this machine (CPU and, where
# installed, lavapipe; the missing-ICD diagnosis). They are added once tools/anvil.c
# dispatches the two commands (cmd_devices / cmd_doctor in tools/cmd_devices.c).
if(TARGET anvil)
  file(READ ${CMAKE_SOURCE_DIR}/tools/cli/anvil.c ANVIL_MAIN_SOURCE)
  string(FIND "${ANVIL_MAIN_SOURCE}" "cmd_devices" ANVIL_HAS_DEVICES_CMD)
  if(ANVIL_HAS_DEVICES_CMD GREATER -1)
    find_package(Python3 COMPONENTS Interpreter REQUIRED)
    add_test(NAME cli_devices
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/devices/check_devices.py $<TARGET_FILE:anvil>)
    set_tests_properties(cli_devices PROPERTIES TIMEOUT 300 PASS_REGULAR_EXPRESSION ", 0 failed"
                         ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0") # Mesa/LLVM keep allocations until exit
  endif()
endif()
