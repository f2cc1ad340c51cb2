# layering.cmake: the include directions of README.md "Layers", checked by compiling one-line
# probes with each library's own include path (the one its sources compile with): a header
# of a layer below must be found, a header of a layer above (or of a sibling) must not.
# A failure here means an engine library links a library it must not see.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
# <library> <headers it may include> -- <headers it must not see>
set(_anvil_layering
  "base:error.h,clock.h--gguf.h,backend.h"
  "gguf:error.h,gguf.h--backend.h,tokenizer.h"
  "image:error.h,digest.h--gguf.h,backend.h,model.h"
  "backend:backend.h,quant.h--tokenizer.h,model.h,cpu_backend.h"
  "tokenizer:gguf.h--backend.h,model.h,store.h"
  "model:tokenizer.h,backend.h--cpu_backend.h,device.h,sampler.h,chat.h,store.h"
  "cpu:backend.h,quant.h,fp16.h--model.h,tokenizer.h,device.h"
  "options:error.h,sampling_params.h--gguf.h,model.h,sampler.h,store.h"
  "generate:model.h,sampler.h,options.h--chat.h,store.h,device.h,cpu_backend.h"
  "prompt:model.h,chat.h--sampler.h,store.h,device.h"
  "store:options.h,gguf_write.h--model.h,sampler.h,generate.h,device.h,chat.h,cpu_backend.h,api.h"
  "device:model.h,cpu_backend.h--store.h,sampler.h,chat.h,api.h"
  "vision:model.h,backend.h--cpu_backend.h,device.h,sampler.h,chat.h,store.h")
if(TARGET anvil_vulkan)
  list(APPEND _anvil_layering "vulkan:backend.h,quant.h--model.h,cpu_backend.h,device.h")
endif()
# tools/ (the server and the CLI) reach the backends only through the device layer
# (device.h, device_extras.h): no backend header is on their include path.
list(APPEND _anvil_layering
  "server:device.h,settings.h,backend.h--cpu_backend.h,membw.h,vk_backend.h,vk_membw.h,vk_extras.h,hip_backend.h"
  "cli:device.h,device_extras.h,api.h--cpu_backend.h,membw.h,ref_ops.h,vk_backend.h,vk_membw.h,vk_extras.h,hip_backend.h,hip_extras.h")
foreach(entry ${_anvil_layering})
  string(REGEX MATCH "^([a-z]+):(.*)--(.*)$" _ "${entry}")
  set(lib ${CMAKE_MATCH_1})
  add_test(NAME layering_${lib}
           COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/layering/check_layering.py --cc ${CMAKE_C_COMPILER}
                   --library anvil_${lib} --may ${CMAKE_MATCH_2} --must-not ${CMAKE_MATCH_3}
                   --includes "$<TARGET_PROPERTY:anvil_${lib},INCLUDE_DIRECTORIES>"
                   --defines "$<TARGET_PROPERTY:anvil_${lib},COMPILE_DEFINITIONS>")
  set_tests_properties(layering_${lib} PROPERTIES TIMEOUT 120 LABELS layering)
endforeach()

# No library code ends the process (exit, abort, anv_die): errors go to the caller.
add_test(NAME layering_no_exit COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/layering/check_no_exit.py ${CMAKE_SOURCE_DIR})
set_tests_properties(layering_no_exit PROPERTIES TIMEOUT 120 LABELS layering)

# Every Vulkan function the backend calls is in vk_loader.c's checked lists (volk would load
# it anyway; the lists make a driver without it an error, not a call through NULL).
if(TARGET anvil_vulkan)
  add_test(NAME layering_vk_calls COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/layering/check_vk_calls.py ${CMAKE_SOURCE_DIR})
  set_tests_properties(layering_vk_calls PROPERTIES TIMEOUT 120 LABELS layering)
endif()
