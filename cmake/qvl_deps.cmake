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
# Video input (io/video.h): demuxing, decoding and the YUV -> RGB conversion.
pkg_check_modules(LIBAV REQUIRED IMPORTED_TARGET libavformat libavcodec libswscale libavutil)
find_package(GIF REQUIRED)
pkg_check_modules(PCRE2 REQUIRED IMPORTED_TARGET libpcre2-8)
pkg_check_modules(UTF8PROC REQUIRED IMPORTED_TARGET libutf8proc)
if(QVL_BUILD_APPS)
    find_package(CLI11 REQUIRED)
    # qvl-serve's HTTP/1.1 transport: Boost.Asio and Beast (header-only), one I/O thread for every
    # connection with C++20 coroutines; the body, header and time limits are enforced while
    # reading (apps/qvl_serve/http_transport.h says why not a thread per connection).
    find_package(Boost 1.74 REQUIRED)
    # --allowed-media-hosts: image URLs fetched with libcurl (apps/qvl_serve/media_fetch.h).
    find_package(CURL REQUIRED)
endif()
if(QVL_BUILD_TESTS)
    find_package(GTest REQUIRED)
endif()
if(QVL_BUILD_BENCH)
    find_package(benchmark REQUIRED)
endif()
