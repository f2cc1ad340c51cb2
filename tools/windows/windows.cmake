# windows.cmake: the Windows (mingw-w64) side of the top-level CMakeLists.txt. Instead of
# pkg-config's system packages it defines the same imported targets over the static
# libraries tools/windows/build-deps.sh cross-built (ANVIL_WIN_DEPS_PREFIX; found by running
# the script when unset), and swaps OpenSSL's libcrypto for BCrypt (engine/base/digest_win.c).
# Also: the POSIX shim headers (engine/base/win32/, Windows-only include path), a fully
# static anvil.exe (libgcc, winpthreads: no DLL to ship) and the manifest that makes
# the process's code page UTF-8.
if(NOT ANVIL_WIN_DEPS_PREFIX)
  execute_process(COMMAND ${CMAKE_SOURCE_DIR}/tools/windows/build-deps.sh
                  OUTPUT_VARIABLE ANVIL_WIN_DEPS_PREFIX OUTPUT_STRIP_TRAILING_WHITESPACE
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "tools/windows/build-deps.sh failed (${rc})")
  endif()
  set(ANVIL_WIN_DEPS_PREFIX ${ANVIL_WIN_DEPS_PREFIX} CACHE PATH "cross-built Windows dependencies")
endif()
set(P ${ANVIL_WIN_DEPS_PREFIX})
function(anvil_win_lib name lib)
  add_library(${name} INTERFACE IMPORTED GLOBAL)
  set_target_properties(${name} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${P}/include
    INTERFACE_LINK_LIBRARIES "${P}/lib/${lib};${ARGN}")
endfunction()
anvil_win_lib(PkgConfig::PCRE2 libpcre2-8.a ${P}/lib/libpcre2-32.a)
target_compile_definitions(PkgConfig::PCRE2 INTERFACE PCRE2_STATIC)
anvil_win_lib(PkgConfig::CJSON libcjson.a)
set_property(TARGET PkgConfig::CJSON APPEND PROPERTY INTERFACE_INCLUDE_DIRECTORIES ${P}/include/cjson)
anvil_win_lib(PkgConfig::CURL libcurl.a ws2_32 crypt32 bcrypt advapi32 secur32 iphlpapi)
target_compile_definitions(PkgConfig::CURL INTERFACE CURL_STATICLIB)
anvil_win_lib(PkgConfig::MHD libmicrohttpd.a ws2_32)
anvil_win_lib(PkgConfig::IMAGE_CODECS libjpeg.a ${P}/lib/libpng16.a ${P}/lib/libwebp.a ${P}/lib/libz.a)
anvil_win_lib(GIF::GIF libgif.a)
add_library(PkgConfig::CRYPTO INTERFACE IMPORTED GLOBAL)
set_target_properties(PkgConfig::CRYPTO PROPERTIES INTERFACE_LINK_LIBRARIES "bcrypt;crypt32;ws2_32;synchronization")
find_package(Threads REQUIRED)

include_directories(BEFORE SYSTEM ${CMAKE_SOURCE_DIR}/engine/base/win32)
add_compile_definitions(WIN32_LEAN_AND_MEAN _WIN32_WINNT=0x0A00 __USE_MINGW_ANSI_STDIO=1)
add_link_options(-static)

# Vulkan's headers are platform-neutral: the host's (libvulkan-dev), seen through a folder
# of their own so that -isystem never brings the host's libc headers into the cross build.
# So is volk, the meta-loader: libvulkan-volk-dev ships only its source (volk.h, volk.c),
# which engine/vulkan/CMakeLists.txt compiles with this toolchain like any source file (its
# Windows half opens vulkan-1.dll with LoadLibraryA): one file, nothing for build-deps.sh.
set(vkinc ${CMAKE_BINARY_DIR}/vulkan-headers)
file(MAKE_DIRECTORY ${vkinc})
foreach(d vulkan vk_video volk.h volk.c)
  if(EXISTS /usr/include/${d} AND NOT EXISTS ${vkinc}/${d})
    file(CREATE_LINK /usr/include/${d} ${vkinc}/${d} SYMBOLIC)
  endif()
endforeach()
set(ANVIL_VULKAN_INCLUDE ${vkinc} CACHE PATH "Vulkan headers (host copy)")
if(EXISTS ${vkinc}/volk.c)
  set(ANVIL_VOLK_DIR ${vkinc} CACHE PATH "volk's source (host copy, libvulkan-volk-dev)")
endif()

# Every file sees anvil_win.h first (the POSIX names mingw lacks); libcrypto's six calls
# are BCrypt (engine/base/win32/openssl/evp.h). printf formats are checked by the Linux
# build: mingw's format attribute is Microsoft's (no %zu) though the ANSI stdio prints them.
add_compile_options(-include ${CMAKE_SOURCE_DIR}/engine/base/win32/anvil_win.h -Wno-format)
