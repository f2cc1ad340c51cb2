# Vulkan backend: host sources in engine/vulkan, GLSL compute shaders in shaders/.
# Every shader variant is compiled at build time with glslc (Vulkan 1.2 SPIR-V), checked
# with spirv-val, optimized with spirv-opt -O where safe, and embedded into anvil_core
# as byte arrays (embed_spirv.cmake writes the .c file; no xxd). No link-time libvulkan:
# only the headers (VK_NO_PROTOTYPES) and dlopen at run time.
find_program(ANVIL_GLSLC glslc REQUIRED)
find_program(ANVIL_SPIRV_VAL spirv-val REQUIRED)
find_program(ANVIL_SPIRV_OPT spirv-opt REQUIRED)
find_path(ANVIL_VULKAN_INCLUDE vulkan/vulkan.h REQUIRED)

set(ANVIL_SHADER_DIR ${CMAKE_SOURCE_DIR}/shaders)
set(ANVIL_SPV_DIR ${CMAKE_BINARY_DIR}/spirv)
file(MAKE_DIRECTORY ${ANVIL_SPV_DIR})
file(GLOB ANVIL_SHADER_INCLUDES CONFIGURE_DEPENDS ${ANVIL_SHADER_DIR}/*.glsl)
set(ANVIL_SPV_FILES "")
set(ANVIL_SPV_NAMES "")

# anvil_shader(<variant name> <source.comp> [defines...]) ; NOOPT in defines skips spirv-opt.
function(anvil_shader name src)
  set(defs "")
  set(opt ON)
  foreach(d ${ARGN})
    if(d STREQUAL "NOOPT")
      set(opt OFF)
    else()
      list(APPEND defs "-D${d}")
    endif()
  endforeach()
  set(raw ${ANVIL_SPV_DIR}/${name}.raw.spv)
  set(out ${ANVIL_SPV_DIR}/${name}.spv)
  if(opt)
    set(finish COMMAND ${ANVIL_SPIRV_OPT} -O ${raw} -o ${out} COMMAND ${ANVIL_SPIRV_VAL} --target-env vulkan1.2 ${out})
  else()
    set(finish COMMAND ${CMAKE_COMMAND} -E copy ${raw} ${out})
  endif()
  add_custom_command(OUTPUT ${out}
    COMMAND ${ANVIL_GLSLC} --target-env=vulkan1.2 -fshader-stage=compute -O ${defs} -I ${ANVIL_SHADER_DIR} ${ANVIL_SHADER_DIR}/${src} -o ${raw}
    COMMAND ${ANVIL_SPIRV_VAL} --target-env vulkan1.2 ${raw}
    ${finish}
    DEPENDS ${ANVIL_SHADER_DIR}/${src} ${ANVIL_SHADER_INCLUDES}
    COMMENT "SPIR-V ${name}" VERBATIM)
  set(ANVIL_SPV_FILES ${ANVIL_SPV_FILES} ${out} PARENT_SCOPE)
  set(ANVIL_SPV_NAMES ${ANVIL_SPV_NAMES} ${name} PARENT_SCOPE)
endfunction()

set(ANVIL_VK_TYPES f32 f16 bf16 q4_0 q4_1 q5_0 q5_1 q8_0 q2_k q3_k q4_k q5_k q6_k)
foreach(t ${ANVIL_VK_TYPES})
  string(TOUPPER ${t} T)
  set(noopt "")
  if(t STREQUAL "bf16")
    set(noopt NOOPT) # llama.cpp skips -O for bf16 shaders (miscompiles)
  endif()
  anvil_shader(get_rows_${t} get_rows.comp DATA_A_${T} ${noopt})
  anvil_shader(mul_mat_vec_${t} mul_mat_vec.comp DATA_A_${T} ${noopt})
  anvil_shader(mul_mat_vec_${t}_sg mul_mat_vec.comp DATA_A_${T} USE_SUBGROUP ${noopt})
  anvil_shader(mul_mm_${t} mul_mm.comp DATA_A_${T} ${noopt})
  anvil_shader(mul_mm_${t}_f16 mul_mm.comp DATA_A_${T} FLOAT16 ${noopt})
endforeach()
foreach(t q4_0 q8_0)
  string(TOUPPER ${t} T)
  anvil_shader(mul_mat_vecq_${t} mul_mat_vecq.comp DATA_A_${T})
  anvil_shader(mul_mat_vecq_${t}_sg mul_mat_vecq.comp DATA_A_${T} USE_SUBGROUP)
endforeach()
anvil_shader(quantize_q8_1 quantize_q8_1.comp)
anvil_shader(rms_norm rms_norm.comp)
anvil_shader(rms_norm_sg rms_norm.comp USE_SUBGROUP)
anvil_shader(add eltwise.comp OP_ADD)
anvil_shader(mul eltwise.comp OP_MUL)
anvil_shader(scale eltwise.comp OP_SCALE)
anvil_shader(glu_silu glu.comp GLU_SILU)
anvil_shader(glu_gelu glu.comp GLU_GELU)
anvil_shader(membw_read membw_read.comp) # vk_membw.c: the read-bandwidth probe of anvil bench
anvil_shader(rope rope.comp NOOPT) # llama.cpp skips -O for rope (miscompiles)
foreach(t f32 f16 q8_0)
  string(TOUPPER ${t} T)
  anvil_shader(store_${t} store_rows.comp DST_${T})
  anvil_shader(flash_attn_${t} flash_attn.comp KV_${T})
  anvil_shader(flash_attn_${t}_sg flash_attn.comp KV_${T} USE_SUBGROUP)
endforeach()

set(ANVIL_SPV_C ${CMAKE_BINARY_DIR}/anvil_spirv_blobs.c)
add_custom_command(OUTPUT ${ANVIL_SPV_C}
  COMMAND ${CMAKE_COMMAND} "-DNAMES=${ANVIL_SPV_NAMES}" -DDIR=${ANVIL_SPV_DIR} -DOUT=${ANVIL_SPV_C}
          -P ${CMAKE_SOURCE_DIR}/engine/vulkan/embed_spirv.cmake
  DEPENDS ${ANVIL_SPV_FILES} ${CMAKE_SOURCE_DIR}/engine/vulkan/embed_spirv.cmake
  COMMENT "Embedding SPIR-V" VERBATIM)

file(GLOB ANVIL_VK_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/engine/vulkan/*.c)
target_sources(anvil_core PRIVATE ${ANVIL_VK_SOURCES} ${ANVIL_SPV_C})
target_include_directories(anvil_core PUBLIC ${CMAKE_SOURCE_DIR}/engine/vulkan)
target_include_directories(anvil_core SYSTEM PRIVATE ${ANVIL_VULKAN_INCLUDE})
target_compile_definitions(anvil_core PUBLIC ANVIL_HAVE_VULKAN=1)
