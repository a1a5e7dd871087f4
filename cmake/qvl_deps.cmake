# Every dependency is a Debian 12 package (scripts/install-deps.sh); nothing is fetched.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)
# xsimd is header-only (/usr/include); its Debian CMake target drags in an xtl link flag.
find_path(XSIMD_INCLUDE_DIR xsimd/xsimd.hpp REQUIRED)
find_package(simdjson REQUIRED)
find_package(fmt REQUIRED)
find_package(JPEG REQUIRED)
pkg_check_modules(SPNG REQUIRED IMPORTED_TARGET spng)
pkg_check_modules(WEBP REQUIRED IMPORTED_TARGET libwebp libwebpdemux)
find_package(GIF REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
if(QVL_BUILD_APPS)
    find_package(CLI11 REQUIRED)
    # qvl-serve's HTTP/1.1 server: cpp-httplib, the library llama.cpp's llama-server is built on
    # (Debian ships it compiled, with the matching flags in its pkg-config file). Small, thread-
    # pool based, with chunked responses for Server-Sent Events; no event-loop framework needed.
    pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)
endif()
if(QVL_BUILD_TESTS)
    find_package(GTest REQUIRED)
endif()
if(QVL_BUILD_BENCH)
    find_package(benchmark REQUIRED)
endif()
