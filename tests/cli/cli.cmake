# CLI tests: hostile/broken GGUF files through `anvil show` and `anvil run`, and the real
# Gemma 3 model end to end (skipped with a message when the package is not installed):
# chat and greedy text (gemma_run), structured output with --format (format_run).
if(TARGET anvil)
  find_package(Python3 COMPONENTS Interpreter REQUIRED)
  add_test(NAME cli_bad_input
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/cli/bad_input.py $<TARGET_FILE:anvil> ${CMAKE_CURRENT_BINARY_DIR}/bad-input)
  set_tests_properties(cli_bad_input PROPERTIES TIMEOUT 600)
  add_test(NAME cli_fifo_input
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/cli/fifo_input.py $<TARGET_FILE:anvil> ${CMAKE_CURRENT_BINARY_DIR}/fifo-input)
  set_tests_properties(cli_fifo_input PROPERTIES TIMEOUT 120)
  add_test(NAME cli_gemma_run
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/cli/gemma_run.py $<TARGET_FILE:anvil>)
  set_tests_properties(cli_gemma_run PROPERTIES TIMEOUT 600)
  add_test(NAME cli_format_run
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/cli/format_run.py $<TARGET_FILE:anvil>)
  set_tests_properties(cli_format_run PROPERTIES TIMEOUT 600)
  # issue 31's day-one paper cuts: a second serve on a served port, relative FROM, Ollama's run flags and
  # an embedding model's run (habits.py; the
  # Windows ones under Wine in tools/windows/test-wine.sh with --windows)
  add_test(NAME cli_habits
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/cli/habits.py $<TARGET_FILE:anvil>
                   ${ANVIL_TEST_MODELS}/server-gemma3-tiny-q8_0.gguf --embed ${ANVIL_TEST_MODELS}/embed-bert.gguf)
  set_tests_properties(cli_habits PROPERTIES FIXTURES_REQUIRED "anvil_server_model;embed_models" TIMEOUT 180)
  # -v/--version and -ngl above the layer count (= all layers) on the server tests' tiny model
  add_test(NAME cli_conventions
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/cli/conventions.py $<TARGET_FILE:anvil>
                   ${ANVIL_TEST_MODELS}/server-gemma3-tiny-q8_0.gguf ${CMAKE_SOURCE_DIR}/tools/server/api.h)
  set_tests_properties(cli_conventions PROPERTIES FIXTURES_REQUIRED anvil_server_model TIMEOUT 120)
  # issue 31: `anvil run`'s interactive chat as Ollama's REPL, through a pty (pexpect), in this
  # process and through a server: /set, /show, /save, /load, unknown commands, history, Ctrl+C
  add_test(NAME cli_repl
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/cli/repl.py $<TARGET_FILE:anvil>
                   ${ANVIL_TEST_MODELS}/server-gemma3-tiny-q8_0.gguf)
  set_tests_properties(cli_repl PROPERTIES FIXTURES_REQUIRED anvil_server_model TIMEOUT 300)
  # image files named in `anvil run`'s prompt and chat (Ollama's rules), refused for a text-only model (issue 32)
  add_test(NAME cli_images_run
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/cli/images_run.py $<TARGET_FILE:anvil>
                   ${ANVIL_TEST_MODELS}/server-gemma3-tiny-q8_0.gguf)
  set_tests_properties(cli_images_run PROPERTIES FIXTURES_REQUIRED anvil_server_model TIMEOUT 300)
endif()
