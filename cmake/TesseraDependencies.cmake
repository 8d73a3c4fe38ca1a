# Every third-party dependency is found here, once, from Debian's packages.
find_package(Threads REQUIRED)
find_package(nlohmann_json 3 REQUIRED)
# The CLI's argument parser (header-only; Debian libcli11-dev).
find_package(CLI11 REQUIRED CONFIG)
find_package(PkgConfig REQUIRED)
# The tuning database (libsqlite3-dev); a PRIVATE dependency of tessera_autotune.
find_package(SQLite3 REQUIRED)
# Z3 (libz3-dev; no CMake config in Debian): the chip tuner's constraint model, a PRIVATE
# dependency of tessera_autotune used only in its .cpp files.
pkg_check_modules(Z3 REQUIRED IMPORTED_TARGET z3)

if(TESSERA_BUILD_TESTS)
  find_package(GTest REQUIRED)
  # Halide 14 is the independent oracle in the tests (libhalide14-0-dev).
  find_package(Halide 14 REQUIRED)
endif()
if(TESSERA_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
# LLVM 14 generates host code (codegen/cpu); it stays a PRIVATE dependency of tessera_codegen.
find_package(LLVM 14 REQUIRED CONFIG HINTS /usr/lib/llvm-14/lib/cmake/llvm)
