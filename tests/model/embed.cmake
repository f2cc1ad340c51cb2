# Embedding models (bert, nomic-bert, gemma-embedding): the embed_models fixture writes the
# synthetic models (tools/make_embed_model.py) into ${ANVIL_TEST_MODELS}; test_embed_models
# compares their embeddings and token ids with llama.cpp's goldens (tests/data/embed/, made by
# tests/model/make_embed_golden.py) on the CPU and on lavapipe under the validation layer.
set(_anvil_embed_cmds "")
foreach(spec "bert:bert:" "bert-mean:bert:--pooling mean" "nomic-bert:nomic-bert:" "gemma-embedding:gemma-embedding:"
             "gemma-embedding-nodense:gemma-embedding:--no-dense" "bert-bge:bert:--vocab bge" "nomic-bert-bge:nomic-bert:--vocab bge")
  string(REPLACE ":" ";" _p "${spec}")
  list(GET _p 0 _name)
  list(GET _p 1 _fam)
  list(GET _p 2 _extra)
  string(APPEND _anvil_embed_cmds "${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tools/make_embed_model.py --family ${_fam} ${_extra} --out ${ANVIL_TEST_MODELS}/embed-${_name}.gguf && ")
endforeach()
add_test(NAME embed_models COMMAND sh -c "${_anvil_embed_cmds} true")
set_tests_properties(embed_models PROPERTIES FIXTURES_SETUP embed_models TIMEOUT 300)
if(TARGET test_embed_models)
  target_link_libraries(test_embed_models PRIVATE PkgConfig::CJSON)
  set(_env "ANVIL_TEST_MODELS=${ANVIL_TEST_MODELS}")
  if(DEFINED ANVIL_VK_TEST_ENV)
    list(APPEND _env ${ANVIL_VK_TEST_ENV})
  endif()
  set_tests_properties(test_embed_models PROPERTIES FIXTURES_REQUIRED embed_models ENVIRONMENT "${_env}")
endif()
