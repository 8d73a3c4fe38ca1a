# tessera_add_component(NAME SOURCES ... [DEPS ...] [PRIVATE_DEPS ...])
# One shared library per top-level folder, exported as Tessera::<NAME>, whose public headers
# live in <folder>/include and install under include/.
function(tessera_add_component name)
  cmake_parse_arguments(ARG "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(${name} SHARED ${ARG_SOURCES})
  add_library(Tessera::${name} ALIAS ${name})
  target_include_directories(${name} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  # Installed libraries find each other next to themselves (a prefix outside the system paths).
  set_target_properties(${name} PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
    INSTALL_RPATH "$ORIGIN")
  if(TESSERA_SANITIZE)
    # A program linking a sanitized library must load the sanitizer runtime first (an installed
    # package of a sanitized build, e.g. the install test under `make sanitize`).
    target_link_options(${name} INTERFACE -fsanitize=address,undefined)
  endif()
  install(TARGETS ${name} EXPORT TesseraTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()
