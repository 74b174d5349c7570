# install() rules: the libraries, the public headers, a CMake package
# (find_package(Blink) gives Blink::blink and Blink::blink_mpi) and blink.pc.
install(TARGETS blink blink_mpi
  EXPORT BlinkTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/blink DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

set(BLINK_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Blink)
install(EXPORT BlinkTargets NAMESPACE Blink:: DESTINATION ${BLINK_CMAKE_DIR})
configure_package_config_file(
  ${PROJECT_SOURCE_DIR}/cmake/BlinkConfig.cmake.in
  ${PROJECT_BINARY_DIR}/BlinkConfig.cmake
  INSTALL_DESTINATION ${BLINK_CMAKE_DIR})
write_basic_package_version_file(
  ${PROJECT_BINARY_DIR}/BlinkConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/BlinkConfig.cmake
  ${PROJECT_BINARY_DIR}/BlinkConfigVersion.cmake
  DESTINATION ${BLINK_CMAKE_DIR})

configure_file(${PROJECT_SOURCE_DIR}/cmake/blink.pc.in ${PROJECT_BINARY_DIR}/blink.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/blink.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
