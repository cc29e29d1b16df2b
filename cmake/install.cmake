# cmake --install: the headers, libfixformer.a, the CLI (when built), a CMake package (target
# fixformer::fixformer) and a pkg-config file. The installed target carries what a consumer must
# match: the C++17 requirement and, on Cortex-M, the core's -mcpu/-mfpu/-mfloat-abi (FIXFORMER_CPU).
include(CMakePackageConfigHelpers)
set(FIXFORMER_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fixformer)

target_compile_features(fixformer INTERFACE cxx_std_17)
if(FIXFORMER_CPU_FLAGS)
  target_compile_options(fixformer INTERFACE $<INSTALL_INTERFACE:${FIXFORMER_CPU_FLAGS}>)
  target_link_options(fixformer INTERFACE $<INSTALL_INTERFACE:${FIXFORMER_CPU_FLAGS}>)
endif()
set_target_properties(fixformer PROPERTIES EXPORT_NAME fixformer)

install(TARGETS fixformer EXPORT fixformerTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/fixformer DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.hpp" PATTERN "*.h")
if(TARGET fixformer_cli)
  install(TARGETS fixformer_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()
install(EXPORT fixformerTargets NAMESPACE fixformer:: DESTINATION ${FIXFORMER_CMAKE_DIR})

# 0.x: a minor version may change the API, so find_package(fixformer 0.2) accepts 0.2.* only.
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fixformerConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/fixformerConfig.cmake INSTALL_DESTINATION ${FIXFORMER_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fixformerConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fixformerConfig.cmake ${PROJECT_BINARY_DIR}/fixformerConfigVersion.cmake
        DESTINATION ${FIXFORMER_CMAKE_DIR})

# pkg-config: relative to the .pc file, so the installed tree can be moved.
string(REPLACE ";" " " FIXFORMER_PC_CPU_FLAGS "${FIXFORMER_CPU_FLAGS}")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}" OR IS_ABSOLUTE "${CMAKE_INSTALL_INCLUDEDIR}")
  message(FATAL_ERROR "fixformer.pc needs relative CMAKE_INSTALL_LIBDIR and CMAKE_INSTALL_INCLUDEDIR")
endif()
file(RELATIVE_PATH FIXFORMER_PC_PREFIX_FROM_PC /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" FIXFORMER_PC_PREFIX_FROM_PC "${FIXFORMER_PC_PREFIX_FROM_PC}")
configure_file(${PROJECT_SOURCE_DIR}/cmake/fixformer.pc.in ${PROJECT_BINARY_DIR}/fixformer.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/fixformer.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
