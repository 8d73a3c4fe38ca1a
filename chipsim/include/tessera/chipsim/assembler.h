#pragma once
// Text <-> Program. The syntax is documented in isa.h. The disassembler prints the canonical
// form; assemble(disassemble(p)) == p for every program, and disassemble(assemble(t)) == t for
// canonical text.
#include "tessera/chipsim/isa.h"

#include <string>

namespace tessera::chipsim {

/// Parses assembly text. `origin` names the file in errors ("prog.tasm:3:17: expected ...").
/// Throws AsmError. Syntax only: whether operands fit a target is checked by validate_program.
Program assemble(const std::string &text, const std::string &origin = "<input>");
/// Reads and assembles a file; Program::source_dir is set to the file's folder.
Program assemble_file(const std::string &path);
/// The canonical text of a program (directives, then one instruction a line).
std::string disassemble(const Program &program);
/// The canonical text of one instruction (with its `@cycle` when it has one).
std::string disassemble(const Instruction &instruction);
/// The canonical text of a tile operand.
std::string tile_text(const TileRef &tile);

} // namespace tessera::chipsim
