#pragma once
// What the graph compiler's passes ask of a model kernel's program (chip_model.cpp,
// link_chip_model.cpp).
#include <string>

#include "tessera/codegen/chip_model.h"

namespace tessera::internal {

/// The one map a kernel writes its head value with, or nullptr when it writes it in several
/// (slices, conv groups): a value written in one piece is the one a later kernel can read in
/// the writer's layout.
inline const ChipTensorMap *head_output_map(const ChipModelKernel &k) {
    const ChipTensorMap *found = nullptr;
    for (const ChipTensorMap &m : k.program.tensors)
        if (m.is_output && m.source == k.head) {
            if (found) return nullptr;
            found = &m;
        }
    return found;
}

/// The map of what `producer` stored that `read` (of `consumer`) reads as it is: the value, or
/// a narrower copy of it (ChipProgram::copies); nullptr when neither holds those bytes
/// (link_chip_model.cpp: the test for keeping the value in DRAM between them).
const ChipTensorMap *stored_for(const ChipModelKernel &producer, const ChipProgram &consumer, const ChipTensorMap &read);

/// Two input maps of one source that the host fills identically (so one tensor serves both).
bool same_input(const ChipProgram &a, const ChipTensorMap &x, const ChipProgram &b, const ChipTensorMap &y);

/// Declares kernel `kernel`'s host tensor of map `m` in the linked program `out` under its
/// linked name (no file), with its map; returns the name.
std::string declare_linked_tensor(ChipProgram &out, size_t kernel, const ChipProgram &kernel_program, const ChipTensorMap &m);

/// The name kernel `kernel`'s program tensor `tensor` takes in a linked program.
inline std::string linked_tensor_name(size_t kernel, const std::string &tensor) { return "k" + std::to_string(kernel) + "_" + tensor; }

} // namespace tessera::internal
