# quant group (quant module, GGUF writer, anvil quantize): the cross-check of the GGUF writer
# with an independent reader, gguf-py. Skipped (exit 77) where gguf-py is not installed.
find_program(ANVIL_PYTHON3 python3)
if(ANVIL_PYTHON3 AND TARGET test_gguf_write)
  file(MAKE_DIRECTORY ${ANVIL_TEST_MODELS})
  set(_sample ${ANVIL_TEST_MODELS}/gguf_write_sample.gguf)
  add_test(NAME gguf_write_pyread
           COMMAND sh -c "\"$<TARGET_FILE:test_gguf_write>\" --write \"${_sample}\" && \"${ANVIL_PYTHON3}\" \"${ANVIL_TESTS}/gguf/quant/check_gguf_write.py\" \"${_sample}\"")
  set_tests_properties(gguf_write_pyread PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 120)
endif()
