# cmake --install: public headers, libqvl_engine.a and a package config, so that another
# project can find_package(qvl) and link qvl::engine.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS qvl_engine EXPORT qvlTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/engine/
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/qvl
        FILES_MATCHING PATTERN "*.h"
        PATTERN "ref" EXCLUDE PATTERN "simd" EXCLUDE PATTERN "x86" EXCLUDE)
install(EXPORT qvlTargets NAMESPACE qvl:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qvl)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/qvlConfig.cmake.in
    ${PROJECT_BINARY_DIR}/qvlConfig.cmake INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qvl)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/qvlConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/qvlConfig.cmake ${PROJECT_BINARY_DIR}/qvlConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/qvl)
if(QVL_BUILD_APPS)
    install(TARGETS qvl-run RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
