# Compiler flags: warnings, sanitizers and the per-ISA flag lists. The library is never built
# with -march=native: ISA-specific code lives in files named *_avx2.cpp, *_avx512.cpp and
# *_avx512bf16.cpp, which get their flags here and are chosen at run time (kernel_table.h).

set(QVL_WARNINGS -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers)
if(QVL_WERROR)
    list(APPEND QVL_WARNINGS -Werror)
endif()

set(QVL_FLAGS_AVX2 -mavx2 -mfma -mf16c)
set(QVL_FLAGS_AVX512 -mavx2 -mfma -mf16c -mavx512f -mavx512bw -mavx512vl -mavx512dq)
set(QVL_FLAGS_AVX512BF16 ${QVL_FLAGS_AVX512} -mavx512bf16 -mavx512vnni)

if(QVL_SANITIZE)
    add_compile_options(-fsanitize=address,undefined -fno-omit-frame-pointer
                        -fno-sanitize-recover=undefined)
    add_link_options(-fsanitize=address,undefined)
endif()

# Give every ISA-named source file in a list its instruction-set flags.
function(qvl_set_isa_flags)
    foreach(src IN LISTS ARGN)
        get_filename_component(name "${src}" NAME_WE)
        if(name MATCHES "_avx512bf16$")
            set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${QVL_FLAGS_AVX512BF16}")
        elseif(name MATCHES "_avx512$")
            set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${QVL_FLAGS_AVX512}")
        elseif(name MATCHES "_avx2$")
            set_source_files_properties(${src} PROPERTIES COMPILE_OPTIONS "${QVL_FLAGS_AVX2}")
        endif()
    endforeach()
endfunction()
