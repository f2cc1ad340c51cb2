# base/: the settings table (engine/base/settings*.c) is the one reader of the environment and
# the source of `anvil serve --help`, `anvil help env` and README.md's variable tables.
if(TARGET anvil)
  add_test(NAME base_settings_table
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/base/check_settings.py ${CMAKE_SOURCE_DIR} $<TARGET_FILE:anvil>)
  set_tests_properties(base_settings_table PROPERTIES TIMEOUT 120 LABELS layering)
endif()
