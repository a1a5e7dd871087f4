cmake_minimum_required(VERSION 3.25)
# cmake -P script: install the built engine into WORK_DIR/prefix, check that only the public
# headers were installed, extract the README's C++ examples (the ```cpp blocks after the
# "install_consumer builds" markers, verbatim), then configure, build and run the consumer
# project against the prefix with find_package(qvl). The examples run on the tiny test model.
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
                RESULT_VARIABLE rc)
if(rc)
    message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()

# The installed headers: qvl/qvl.h, the qvl/status.h it includes, and nothing else (no engine
# internals).
file(GLOB_RECURSE headers RELATIVE ${WORK_DIR}/prefix/include ${WORK_DIR}/prefix/include/*)
list(SORT headers)
if(NOT headers STREQUAL "qvl/qvl.h;qvl/status.h")
    message(FATAL_ERROR "installed headers should be qvl/qvl.h and qvl/status.h only, got: ${headers}")
endif()

# Every ```cpp block that follows an install_consumer marker, verbatim: readme_example_1.cpp (one
# Session), readme_example_2.cpp (concurrent requests through the Engine).
file(READ ${README} readme)
set(rest "${readme}")
set(count 0)
while(TRUE)
    string(FIND "${rest}" "<!-- install_consumer builds" marker)
    if(marker EQUAL -1)
        break()
    endif()
    string(SUBSTRING "${rest}" ${marker} -1 rest)
    string(FIND "${rest}" "```cpp\n" open)
    string(FIND "${rest}" "\n```\n" close)
    if(open EQUAL -1 OR close EQUAL -1 OR close LESS open)
        message(FATAL_ERROR "${README}: no ```cpp block after an install_consumer marker")
    endif()
    math(EXPR begin "${open} + 7")
    math(EXPR length "${close} + 1 - ${begin}")
    string(SUBSTRING "${rest}" ${begin} ${length} example)
    math(EXPR count "${count} + 1")
    file(WRITE ${WORK_DIR}/readme_example_${count}.cpp "${example}")
    math(EXPR after "${close} + 4")
    string(SUBSTRING "${rest}" ${after} -1 rest)
endwhile()
if(NOT count EQUAL 2)
    message(FATAL_ERROR "${README}: expected two C++ examples after install_consumer markers, found ${count}")
endif()

execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build
                        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release
                        -DREADME_EXAMPLE=${WORK_DIR}/readme_example.cpp
                        "-DCMAKE_CXX_FLAGS=${CONSUMER_FLAGS}"
                        "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_FLAGS}"
                        -DREADME_EXAMPLE_DIR=${WORK_DIR}
                RESULT_VARIABLE rc)
if(rc)
    message(FATAL_ERROR "configuring the consumer failed: ${rc}")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${WORK_DIR}/build RESULT_VARIABLE rc)
if(rc)
    message(FATAL_ERROR "building the consumer (or the README example) failed: ${rc}")
endif()
execute_process(COMMAND ${WORK_DIR}/build/qvl_consumer RESULT_VARIABLE rc OUTPUT_VARIABLE out)
message(STATUS "consumer said: ${out}")
if(rc)
    message(FATAL_ERROR "the consumer exited with ${rc}")
endif()
execute_process(COMMAND ${WORK_DIR}/build/qvl_readme_example_1 ${MODEL_DIR} ${IMAGE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "the first README example said: ${out}${err}")
if(rc OR NOT out MATCHES "tokens, first after")
    message(FATAL_ERROR "the first README example exited with ${rc}")
endif()
execute_process(COMMAND ${WORK_DIR}/build/qvl_readme_example_2 ${MODEL_DIR}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "the second README example said: ${out}${err}")
if(rc OR NOT out MATCHES "3 requests answered")
    message(FATAL_ERROR "the second README example exited with ${rc}")
endif()
