# Device layer CLI tests: `anvil devices` / `anvil doctor` on this machine (CPU and, where
# installed, lavapipe; the missing-ICD diagnosis): tools/cli/cmd_devices.c.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME cli_devices
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/device/check_devices.py $<TARGET_FILE:anvil>)
set_tests_properties(cli_devices PROPERTIES TIMEOUT 300 PASS_REGULAR_EXPRESSION ", 0 failed"
                     ENVIRONMENT "ASAN_OPTIONS=detect_leaks=0") # Mesa/LLVM keep allocations until exit
