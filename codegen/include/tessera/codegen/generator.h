#pragma once
// Generators: pipelines a program registers by name, so that Tessera's generator driver
// (generator_main in the library Tessera::tessera_generator, called by the `main` of
// Tessera::tessera_generator_main, which tessera_add_generator links, in the style of Halide's
// GenGen) can turn them into kernel libraries at build time, each with its provenance. With
// CMake:
//
//   // kernels.cpp
//   #include <tessera/tessera.h>
//   #include <tessera/codegen/generator.h>
//   TESSERA_REGISTER_GENERATOR(matmul, [] {
//       tessera::Input A(tessera::Float(32), {256, 256}, "A"), B(tessera::Float(32), {256, 256}, "B");
//       tessera::Func C = tessera::ops::matmul(A, B);
//       return tessera::GeneratedPipeline{C};
//   });
//
//   # CMakeLists.txt
//   find_package(Tessera REQUIRED)
//   tessera_add_generator(kernels.generator SOURCES kernels.cpp)
//   tessera_add_library(matmul FROM kernels.generator GENERATOR matmul TARGET host)
//   target_link_libraries(app PRIVATE matmul)   # app.c includes "matmul.h"
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tessera/codegen/compiled_kernel.h"
#include "tessera/codegen/shape_dispatch.h"
#include "tessera/func.h"

namespace tessera {

/// What a generator produces: the pipeline (scheduled as it should run), optionally fixed
/// output shapes (empty: extents are taken from the output buffers at call time) and code
/// generation options.
struct GeneratedPipeline {
    GeneratedPipeline(Pipeline p, std::vector<std::vector<int64_t>> shapes = {}, CpuOptions o = {})
        : pipeline(std::move(p)), output_shapes(std::move(shapes)), options(std::move(o)) {}
    GeneratedPipeline(Func f, std::vector<std::vector<int64_t>> shapes = {}, CpuOptions o = {})
        : GeneratedPipeline(Pipeline(std::move(f)), std::move(shapes), std::move(o)) {}
    Pipeline pipeline;
    std::vector<std::vector<int64_t>> output_shapes;
    CpuOptions options;
};

using GeneratorFn = std::function<GeneratedPipeline()>;
/// A generator of a shape-dispatching library (shape_dispatch.h): the pipeline, with fixed
/// output shapes, at one value per range (in the ranges' order).
using RangedGeneratorFn = std::function<GeneratedPipeline(const std::vector<int64_t> &values)>;

/// Registers a generator; a second registration of a name throws tessera::Error.
void register_generator(const std::string &name, GeneratorFn fn);
/// Registers a generator whose library serves `ranges`: one entry point taking any shape in
/// them and dispatching to kernels compiled for the buckets (compile_to_library over ranges).
///   TESSERA_REGISTER_GENERATOR(mm, {tessera::ShapeRange{"M", 1, 64}}, [](const std::vector<int64_t> &v) {
///       return tessera::GeneratedPipeline(matmul_of_rows(v[0]), {{v[0], 32}});
///   });
/// The driver's range=NAME=LO..HI and buckets=NAME=B1,B2,... arguments (tessera_add_library's
/// RANGES and BUCKETS) replace a registered range's ends or buckets.
void register_generator(const std::string &name, std::vector<ShapeRange> ranges, RangedGeneratorFn fn);
/// The registered names, sorted.
std::vector<std::string> generator_names();
/// A registered generator: fixed (`fn`) or ranged (`ranges` and `ranged`).
struct RegisteredGenerator {
    GeneratorFn fn;
    std::vector<ShapeRange> ranges;
    RangedGeneratorFn ranged;
};
/// The generator `name`; throws tessera::Error listing the registered names if unknown.
RegisteredGenerator find_generator(const std::string &name);
/// Runs the generator `name`; throws tessera::Error listing the registered names if unknown.
GeneratedPipeline run_generator(const std::string &name);

/// Registers from a static initializer (see TESSERA_REGISTER_GENERATOR).
struct GeneratorRegistration {
    GeneratorRegistration(const std::string &name, GeneratorFn fn) { register_generator(name, std::move(fn)); }
    GeneratorRegistration(const std::string &name, std::vector<ShapeRange> ranges, RangedGeneratorFn fn) {
        register_generator(name, std::move(ranges), std::move(fn));
    }
};

/// The generator driver's command line (defined in Tessera::tessera_generator, apps/generator):
///   <program> -g NAME -o DIR [-f FUNCTION] [target=host] [range=P=LO..HI] [buckets=P=B1,B2]
///             | --list | --help
/// Writes DIR/lib<FUNCTION>.a and DIR/<FUNCTION>.h (FUNCTION defaults to NAME), and the
/// library's provenance (library_build.h) as DIR/<FUNCTION>.provenance.json and
/// `const char *<FUNCTION>_provenance(void)` in DIR/lib<FUNCTION>_provenance.a, declared in
/// DIR/<FUNCTION>_provenance.h. With a tuning database (TESSERA_TUNING_DB) each kernel takes its
/// best record and a ranged library adds the tuned shapes as buckets. Returns the process exit
/// code; errors are printed as "tessera: error: ...".
int generator_main(int argc, char **argv);

} // namespace tessera

/// Registers `fn` (a callable returning GeneratedPipeline) as the generator NAME.
#define TESSERA_REGISTER_GENERATOR(NAME, ...) \
    static const ::tessera::GeneratorRegistration tessera_generator_registration_##NAME(#NAME, __VA_ARGS__)
