# mingw-toolchain: CMake toolchain for the Windows (x86_64-w64-mingw32) cross build with
# Debian's mingw-w64 (the posix thread model: winpthreads, linked statically). Used by
# `cmake --preset windows` (CMakePresets.json) and tools/windows/build-deps.sh; the tests run
# under wine (CMAKE_CROSSCOMPILING_EMULATOR).
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
find_program(ANVIL_WINE NAMES wine wine64)
if(ANVIL_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${ANVIL_WINE})
endif()
