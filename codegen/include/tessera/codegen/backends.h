#pragma once
// The backends (host JIT, chips) register themselves with realize() from static initialisers in
// libtessera_codegen. A program that names no symbol of that library — one that only calls
// Func::realize(..., Target::host()) — would have it dropped by a linker that discards unused
// shared libraries (--as-needed), and realize() would then find no backend. Including this
// header (tessera/tessera.h does, for programs linking Tessera::tessera) references the library
// from every such program, so its registrations always run.

namespace tessera::internal {

/// Defined in libtessera_codegen; does nothing and returns 0.
int link_backends();

[[maybe_unused]] inline const int backends_linked = link_backends();

} // namespace tessera::internal
