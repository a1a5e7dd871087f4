# cmake --install: the public header qvl/qvl.h and the qvl/status.h it includes (standard
# library only: nothing else is needed to compile against them), libqvl_engine.a and a package config, so that another project can
# find_package(qvl) and link qvl::engine. Engine internals (kernels, graph, model, runtime
# headers) are not installed: the library's API is those two headers.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS qvl_engine EXPORT qvlTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(FILES ${PROJECT_SOURCE_DIR}/include/qvl/qvl.h ${PROJECT_SOURCE_DIR}/include/qvl/status.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qvl)
install(EXPORT qvlTargets NAMESPACE qvl:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qvl)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/qvlConfig.cmake.in
    ${PROJECT_BINARY_DIR}/qvlConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qvl)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/qvlConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/qvlConfig.cmake ${PROJECT_BINARY_DIR}/qvlConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qvl)
if(QVL_BUILD_APPS)
    # The programs: the CLI and the server (deploy/ images and packages install both).
    install(TARGETS qvl-run qvl-serve RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
