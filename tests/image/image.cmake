# image.cmake: engine/image's decoders on real files made by Pillow at test time
# (tests/image/image_cases.py): pixels against llama.cpp's loader (stb_image, built from
# llama.cpp's source tree when it is on this machine) or else Pillow's, EXIF orientations
# against Pillow's exif_transpose, a hostile set that must end in one-line errors, and every
# truncation plus random byte changes of each file (image_dump --mangle; under ASan in CI).
anvil_tests_need_python(image numpy PIL)
add_executable(image_dump ${ANVIL_TESTS}/image/image_dump.c)
target_link_libraries(image_dump PRIVATE anvil_image)
set(ANVIL_LLAMACPP_STB "$ENV{HOME}/.cache/llamacpp-current/src/llama.cpp/vendor/stb/stb_image.h"
    CACHE FILEPATH "llama.cpp's stb_image.h, the reference image loader (optional)")
set(_image_ref_args "")
if(EXISTS ${ANVIL_LLAMACPP_STB} AND NOT WIN32) # its fopen: not the Windows build's wrapped one
  get_filename_component(_stb_dir ${ANVIL_LLAMACPP_STB} DIRECTORY)
  add_executable(stb_dump ${ANVIL_TESTS}/image/stb_dump.c)
  target_include_directories(stb_dump SYSTEM PRIVATE ${_stb_dir})
  # third-party code: not held to -Wall -Werror, nor run under the sanitizers
  target_compile_options(stb_dump PRIVATE -w -fno-sanitize=all)
  target_link_libraries(stb_dump PRIVATE m)
  set(_image_ref_args --stb $<TARGET_FILE:stb_dump>)
endif()
add_test(NAME image_decode
         COMMAND ${Python3_EXECUTABLE} ${ANVIL_TESTS}/image/image_cases.py $<TARGET_FILE:image_dump>
                 ${CMAKE_CURRENT_BINARY_DIR}/image-cases ${_image_ref_args})
set_tests_properties(image_decode PROPERTIES TIMEOUT 600 LABELS image)
