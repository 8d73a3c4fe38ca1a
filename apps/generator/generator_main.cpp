// The generator driver's main (Tessera::tessera_generator_main, linked by tessera_add_generator):
// an archive member the linker takes only when the program has no main of its own, as Halide's
// GenGen.
#include "tessera/codegen/generator.h"

int main(int argc, char **argv) { return tessera::generator_main(argc, argv); }
