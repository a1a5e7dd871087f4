# cmake -P script: install the built engine into WORK_DIR/prefix, check that only the public
# header was installed, extract the README's C++ example (the ```cpp block after the
# "install_consumer builds" marker, verbatim), then configure, build and run the consumer
# project against the prefix with find_package(qvl). The example runs on the tiny test model.
# CONSUMER_FLAGS (may be empty): compile and link flags of the consumer (the sanitizers, when the
# installed engine was built with them).
file(REMOVE_RECURSE ${WORK_DIR})
execute_process(COMMAND ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${WORK_DIR}/prefix
                RESULT_VARIABLE rc)
if(rc)
    message(FATAL_ERROR "cmake --install failed: ${rc}")
endif()

# The installed headers: qvl/qvl.h and nothing else (no engine internals).
file(GLOB_RECURSE headers RELATIVE ${WORK_DIR}/prefix/include ${WORK_DIR}/prefix/include/*)
if(NOT headers STREQUAL "qvl/qvl.h")
    message(FATAL_ERROR "installed headers should be qvl/qvl.h only, got: ${headers}")
endif()

file(READ ${README} readme)
string(FIND "${readme}" "<!-- install_consumer builds" marker)
if(marker EQUAL -1)
    message(FATAL_ERROR "${README}: the install_consumer marker before the C++ example is missing")
endif()
string(SUBSTRING "${readme}" ${marker} -1 rest)
string(FIND "${rest}" "```cpp\n" open)
string(FIND "${rest}" "\n```\n" close)
if(open EQUAL -1 OR close EQUAL -1 OR close LESS open)
    message(FATAL_ERROR "${README}: no ```cpp block after the install_consumer marker")
endif()
math(EXPR begin "${open} + 7")
math(EXPR length "${close} + 1 - ${begin}")
string(SUBSTRING "${rest}" ${begin} ${length} example)
file(WRITE ${WORK_DIR}/readme_example.cpp "${example}")

execute_process(COMMAND ${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build
                        -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release
                        -DREADME_EXAMPLE=${WORK_DIR}/readme_example.cpp
                        "-DCMAKE_CXX_FLAGS=${CONSUMER_FLAGS}"
                        "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_FLAGS}"
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
execute_process(COMMAND ${WORK_DIR}/build/qvl_readme_example ${MODEL_DIR} ${IMAGE}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
message(STATUS "the README example said: ${out}${err}")
if(rc OR NOT out MATCHES "tokens, first after")
    message(FATAL_ERROR "the README example exited with ${rc}")
endif()
