// The generator driver: link it with a file that registers generators
// (TESSERA_REGISTER_GENERATOR) to get a program that writes their kernel libraries.
#include "tessera/codegen/generator.h"

int main(int argc, char **argv) { return tessera::generator_main(argc, argv); }
