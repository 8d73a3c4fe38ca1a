# Building kernel libraries with Tessera at build time, in the style of Halide's
# add_halide_generator / add_halide_library.
#
#   tessera_add_generator(<target> SOURCES <files>... [LIBS <libs>...])
#     An executable that links <files> (which register pipelines with
#     TESSERA_REGISTER_GENERATOR) with Tessera's generator driver.
#
#   tessera_add_library(<name> (SOURCES <files>... | FROM <generator-target>)
#                       [GENERATOR <registered-name>] [FUNCTION_NAME <c-name>]
#                       [TARGET host|tsp-mini|npu-edge|<target.json>]
#                       [RANGES <param>=<lo>..<hi>...] [BUCKETS <param>=<b1>,<b2>...]
#                       [REPEATS <n>])
#     Runs the generator (default: the one registered as <name>) at build time and makes
#     <name> a static library target whose users get <c-name>.h on their include path and
#     lib<c-name>.a (kernel + Tessera's host runtime) on their link line, with -lpthread -lm.
#     FUNCTION_NAME defaults to <name>; TARGET to host; a relative <target.json> is taken
#     from the calling CMakeLists.txt's folder, and a change to it rebuilds the library. A chip TARGET builds a chip library:
#     the same C signature and error codes, the kernel (a chip artifact embedded in lib<c-name>.a,
#     also written as <c-name>.tchip) running on chipsim through Tessera::tessera_chiprt, which
#     users link with it; the generator must give fixed output shapes.
#     A generator registered with ranges (generator.h) builds a shape-dispatching library: one
#     entry point <c-name> serving every shape in its ranges, dispatching to kernels compiled
#     for the buckets (shape_dispatch.h), on the host or a chip. RANGES and BUCKETS replace a
#     registered range's ends or buckets (e.g. RANGES M=1..4096 BUCKETS M=64,512,4096).
#     With TESSERA_TUNING_DB set in the build's environment, each kernel takes the database's
#     best record for its workload and target, and a ranged library adds the tuned shapes as
#     buckets. Every library carries its provenance (compiler version, target hash, each
#     kernel's schedule, tuning record and measured chip cycles or median host time):
#     <c-name>.provenance.json beside the archive, and const char *<c-name>_provenance(void),
#     declared in <c-name>_provenance.h and linked with <name>. A host kernel's time is the median
#     of REPEATS runs (default 7) on this machine, so the provenance differs from build to build.

function(tessera_add_generator target)
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "tessera_add_generator(${target}): give the SOURCES that register generators")
  endif()
  add_executable(${target} ${ARG_SOURCES})
  # The driver's main comes from an archive, taken only when SOURCES have no main of their own.
  target_link_libraries(${target} PRIVATE Tessera::tessera_generator_main Tessera::tessera_generator Tessera::tessera ${ARG_LIBS})
endfunction()

function(tessera_add_library name)
  cmake_parse_arguments(ARG "" "FROM;GENERATOR;FUNCTION_NAME;TARGET;REPEATS" "SOURCES;RANGES;BUCKETS" ${ARGN})
  if(NOT ARG_GENERATOR)
    set(ARG_GENERATOR ${name})
  endif()
  if(NOT ARG_FUNCTION_NAME)
    set(ARG_FUNCTION_NAME ${name})
  endif()
  if(NOT ARG_TARGET)
    set(ARG_TARGET host)
  endif()
  if(ARG_FROM AND ARG_SOURCES)
    message(FATAL_ERROR "tessera_add_library(${name}): give either SOURCES or FROM, not both")
  elseif(ARG_FROM)
    set(generator ${ARG_FROM})
  elseif(ARG_SOURCES)
    set(generator ${name}.generator)
    tessera_add_generator(${generator} SOURCES ${ARG_SOURCES})
  else()
    message(FATAL_ERROR "tessera_add_library(${name}): give the generator's SOURCES or FROM <generator target>")
  endif()

  # A JSON target is a file of the calling project: relative to its source folder, and the
  # library is rebuilt when it changes.
  set(target_dependencies)
  if(ARG_TARGET MATCHES "\\.json$")
    get_filename_component(ARG_TARGET "${ARG_TARGET}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    set(target_dependencies "${ARG_TARGET}")
  endif()

  set(range_arguments)
  foreach(range IN LISTS ARG_RANGES)
    list(APPEND range_arguments range=${range})
  endforeach()
  foreach(buckets IN LISTS ARG_BUCKETS)
    list(APPEND range_arguments buckets=${buckets})
  endforeach()
  if(ARG_REPEATS)
    list(APPEND range_arguments repeats=${ARG_REPEATS})
  endif()

  set(dir ${CMAKE_CURRENT_BINARY_DIR}/${name}.tessera)
  set(library ${dir}/lib${ARG_FUNCTION_NAME}.a)
  set(header ${dir}/${ARG_FUNCTION_NAME}.h)
  set(provenance ${dir}/${ARG_FUNCTION_NAME}.provenance.json ${dir}/lib${ARG_FUNCTION_NAME}_provenance.a
    ${dir}/${ARG_FUNCTION_NAME}_provenance.h)
  add_custom_command(OUTPUT ${library} ${header} ${provenance}
    COMMAND ${generator} -g ${ARG_GENERATOR} -o ${dir} -f ${ARG_FUNCTION_NAME} target=${ARG_TARGET} ${range_arguments}
    DEPENDS ${generator} ${target_dependencies}
    COMMENT "Generating kernel library ${ARG_FUNCTION_NAME} (generator ${ARG_GENERATOR}, target ${ARG_TARGET})"
    VERBATIM)
  add_custom_target(${name}.update DEPENDS ${library} ${header} ${provenance})
  file(MAKE_DIRECTORY ${dir})

  find_package(Threads REQUIRED)
  add_library(${name} STATIC IMPORTED GLOBAL)
  if(ARG_TARGET STREQUAL "host")
    set(link_libraries "Threads::Threads;m")
  else()
    # Any other target is a chip (a built-in name or a JSON file); the generator says so if not.
    set(link_libraries "Tessera::tessera_chiprt")
  endif()
  # The library's provenance, <c-name>_provenance() (declared in <c-name>_provenance.h).
  list(PREPEND link_libraries ${dir}/lib${ARG_FUNCTION_NAME}_provenance.a)
  set_target_properties(${name} PROPERTIES
    IMPORTED_LOCATION ${library}
    INTERFACE_INCLUDE_DIRECTORIES ${dir}
    INTERFACE_LINK_LIBRARIES "${link_libraries}")
  add_dependencies(${name} ${name}.update)
endfunction()
